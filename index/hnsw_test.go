package index

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"testing"
)

// clustered returns n seeded vectors around c cluster centres, like real
// embeddings (clusters, not uniform noise).
func clustered(rng *rand.Rand, n, dim, c int) [][]float32 {
	centres := make([][]float32, c)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		ctr := centres[rng.IntN(c)]
		v := make([]float32, dim)
		for j := range v {
			v[j] = ctr[j] + 1.1*float32(rng.NormFloat64())
		}
		out[i] = v
	}
	return out
}

// bruteForce is the reference: exact cosine top-k over the accepted ids,
// ties broken by smaller id.
func bruteForce(vecs map[uint64][]float32, q []float32, k int, filter Filter) []Result {
	qn, _ := Normalize(nil, q)
	var all []Result
	for id, v := range vecs {
		if filter != nil && !filter(id) {
			continue
		}
		vn, _ := Normalize(nil, v)
		var s float64
		for i := range vn {
			s += float64(vn[i]) * float64(qn[i])
		}
		all = append(all, Result{ID: id, Score: float32(s)})
	}
	sort.Slice(all, func(i, j int) bool {
		return all[i].Score > all[j].Score || (all[i].Score == all[j].Score && all[i].ID < all[j].ID)
	})
	return all[:min(k, len(all))]
}

func recallAt(got, want []Result) float64 {
	if len(want) == 0 {
		return 1
	}
	in := map[uint64]bool{}
	for _, r := range want {
		in[r.ID] = true
	}
	hit := 0
	for _, r := range got {
		if in[r.ID] {
			hit++
		}
	}
	return float64(hit) / float64(len(want))
}

// meanRecall searches every query and averages recall@k against the
// reference.
func meanRecall(t *testing.T, h *HNSW, vecs map[uint64][]float32, queries [][]float32, k int, opts *SearchOptions) float64 {
	t.Helper()
	var sum float64
	for _, q := range queries {
		got, err := h.Search(q, k, opts)
		if err != nil {
			t.Fatal(err)
		}
		var filter Filter
		if opts != nil {
			filter = opts.Filter
		}
		for i := 1; i < len(got); i++ {
			if got[i].Score > got[i-1].Score+1e-6 {
				t.Fatalf("results not sorted: %v", got)
			}
		}
		for _, r := range got {
			if _, ok := vecs[r.ID]; !ok {
				t.Fatalf("returned id %d that is not in the index", r.ID)
			}
			if filter != nil && !filter(r.ID) {
				t.Fatalf("returned id %d the filter rejects", r.ID)
			}
		}
		sum += recallAt(got, bruteForce(vecs, q, k, filter))
	}
	return sum / float64(len(queries))
}

func buildHNSW(t testing.TB, vecs [][]float32, opts *HNSWOptions) (*HNSW, map[uint64][]float32) {
	t.Helper()
	h, err := NewHNSW(len(vecs[0]), opts)
	if err != nil {
		t.Fatal(err)
	}
	m := map[uint64][]float32{}
	for i, v := range vecs {
		id := uint64(i)*7 + 3 // ids unrelated to insertion order
		if err := h.Add(id, v); err != nil {
			t.Fatal(err)
		}
		m[id] = v
	}
	return h, m
}

// testSizes gives the HNSW tests' index and query counts. The race
// detector slows graph builds about tenfold, so under -race (how the
// README's command runs) they are small, and .ci/run runs them again at
// full size without it.
func testSizes() (n, queries int) {
	switch {
	case raceEnabled:
		return 600, 30
	case testing.Short():
		return 1500, 50
	default:
		return 4000, 150
	}
}

func TestHNSWRecall(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 1))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 48, 40)
	h, vecs := buildHNSW(t, data[:n], &HNSWOptions{Seed: 1})
	if h.Len() != n {
		t.Fatalf("Len = %d, want %d", h.Len(), n)
	}
	r := meanRecall(t, h, vecs, data[n:], 10, nil)
	t.Logf("recall@10 at default parameters: %.4f (n=%d, dim=48)", r, n)
	if r < 0.95 {
		t.Fatalf("recall@10 = %.4f, want >= 0.95", r)
	}
	if r16 := meanRecall(t, h, vecs, data[n:], 10, &SearchOptions{Ef: 16}); r16 >= 0.999 {
		t.Logf("recall@10 at ef=16: %.4f: the data may be too easy to test anything", r16)
	}
	// A wider search is at least as good.
	if r2 := meanRecall(t, h, vecs, data[n:], 10, &SearchOptions{Ef: 200}); r2 < r-0.01 {
		t.Fatalf("recall at ef=200 %.4f below ef=64 %.4f", r2, r)
	}
}

func TestHNSWConcurrentInsertSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(2, 2))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 32, 30)
	h, err := NewHNSW(32, nil)
	if err != nil {
		t.Fatal(err)
	}
	const writers = 4
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w; i < n; i += writers {
				if err := h.Add(uint64(i), data[i]); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	stop := make(chan struct{})
	var readers sync.WaitGroup
	for r := range 2 {
		readers.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				res, err := h.Search(data[n+(i+r)%nq], 5, nil)
				if err != nil {
					t.Error(err)
					return
				}
				for _, x := range res {
					if x.ID >= uint64(n) {
						t.Errorf("bad id %d", x.ID)
						return
					}
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	readers.Wait()
	vecs := map[uint64][]float32{}
	for i := range n {
		vecs[uint64(i)] = data[i]
	}
	if h.Len() != n {
		t.Fatalf("Len = %d after concurrent inserts, want %d", h.Len(), n)
	}
	t.Logf("orphans after the parallel build: %d", h.ConnectOrphans())
	if again := h.ConnectOrphans(); again != 0 {
		t.Fatalf("%d nodes still unreachable after ConnectOrphans", again)
	}
	// Every vector is reachable from the entry point on layer 0, and a
	// search for a stored vector finds it: a beam search may stop short
	// after a parallel build (seen: 3 of 2500 under the race detector's
	// scheduling), so allow 0.5%; a broken graph misses nearly all.
	if u := unreachable(h); u != 0 {
		t.Fatalf("%d nodes unreachable on layer 0", u)
	}
	misses := 0
	for i := range n {
		if r, _ := h.Search(data[i], 1, &SearchOptions{Ef: 100}); len(r) != 1 || r[0].ID != uint64(i) {
			misses++
		}
	}
	if misses*200 > n {
		t.Fatalf("%d of %d vectors not found by their own value", misses, n)
	}
	r := meanRecall(t, h, vecs, data[n:], 10, nil)
	t.Logf("recall@10 after a %d-goroutine build: %.4f", writers, r)
	if r < 0.95 {
		t.Fatalf("recall@10 after concurrent build = %.4f, want >= 0.95", r)
	}
}

func TestHNSWDelete(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 48, 40)
	h, vecs := buildHNSW(t, data[:n], &HNSWOptions{Seed: 3})
	ids := make([]uint64, 0, len(vecs))
	for id := range vecs {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids[:n*3/10] {
		if !h.Delete(id) {
			t.Fatalf("Delete(%d) = false", id)
		}
		delete(vecs, id)
	}
	if h.Delete(ids[0]) {
		t.Fatal("deleting twice reported true")
	}
	if h.Len() != len(vecs) || h.Deleted() != n*3/10 {
		t.Fatalf("Len %d Deleted %d; want %d and %d", h.Len(), h.Deleted(), len(vecs), n*3/10)
	}
	// Repair keeps every live vector reachable through the graph.
	if u := unreachable(h); u != 0 {
		t.Fatalf("%d live vectors unreachable after deleting 30%%", u)
	}
	r := meanRecall(t, h, vecs, data[n:], 10, nil)
	t.Logf("recall@10 after deleting 30%%: %.4f", r)
	if r < 0.95 {
		t.Fatalf("recall@10 after deleting 30%% = %.4f, want >= 0.95", r)
	}
	// Upsert: a re-added id moves to its new vector.
	id := ids[len(ids)-1]
	if err := h.Add(id, data[n]); err != nil {
		t.Fatal(err)
	}
	vecs[id] = data[n]
	got, _ := h.Search(data[n], 1, nil)
	if len(got) != 1 || got[0].ID != id {
		t.Fatalf("after re-adding %d at the query's vector, top hit = %v", id, got)
	}
	// Deleting everything leaves an empty, usable index.
	for id := range vecs {
		h.Delete(id)
	}
	if got, err := h.Search(data[0], 3, nil); err != nil || len(got) != 0 {
		t.Fatalf("search of emptied index = %v, %v", got, err)
	}
	if err := h.Add(1, data[0]); err != nil {
		t.Fatal(err)
	}
	if got, _ := h.Search(data[0], 3, nil); len(got) != 1 || got[0].ID != 1 {
		t.Fatalf("after re-adding to an emptied index: %v", got)
	}
}

func TestHNSWFiltered(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 32, 30)
	h, vecs := buildHNSW(t, data[:n], &HNSWOptions{Seed: 4})
	h.testExactMatches = 100 // walk the graph unless fewer than ~100 match
	for _, tc := range []struct {
		name   string
		filter Filter
	}{
		{"half", func(id uint64) bool { return id%2 == 0 }},
		{"tenth", func(id uint64) bool { return (id/7)%10 == 3 }},
		{"one percent", func(id uint64) bool { return (id/7)%100 == 42 }},
		{"single id", func(id uint64) bool { return id == 3+7*17 }},
		{"none", func(uint64) bool { return false }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := meanRecall(t, h, vecs, data[n:], 10, &SearchOptions{Filter: tc.filter})
			t.Logf("filtered recall@10: %.4f", r)
			if r < 0.95 {
				t.Fatalf("filtered recall@10 = %.4f, want >= 0.95", r)
			}
		})
	}
}

func TestHNSWBadInput(t *testing.T) {
	for _, tc := range []struct {
		dim  int
		opts *HNSWOptions
	}{
		{0, nil}, {-1, nil}, {MaxDim + 1, nil},
		{8, &HNSWOptions{M: 1}}, {8, &HNSWOptions{EfConstruction: -1}}, {8, &HNSWOptions{EfSearch: 1 << 20}},
	} {
		if _, err := NewHNSW(tc.dim, tc.opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("NewHNSW(%d, %+v) = %v, want ErrInvalidOptions", tc.dim, tc.opts, err)
		}
		// Validate judges the options alone, as NewHNSW does at a valid
		// dimension.
		_, atValid := NewHNSW(8, tc.opts)
		if err := tc.opts.Validate(); (err == nil) != (atValid == nil) || (err != nil && !errors.Is(err, ErrInvalidOptions)) {
			t.Errorf("(%+v).Validate() = %v; NewHNSW at dimension 8 says %v", tc.opts, err, atValid)
		}
	}
	h, err := NewHNSW(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := h.Search([]float32{1, 0, 0, 0}, 5, nil); err != nil || len(got) != 0 {
		t.Fatalf("search of empty index = %v, %v", got, err)
	}
	if err := h.Add(1, []float32{1, 2, 3}); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("short vector: %v", err)
	}
	if err := h.Add(1, nil); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("nil vector: %v", err)
	}
	for _, v := range [][]float32{{0, 0, 0, 0}, {float32(math.NaN()), 1, 1, 1}, {float32(math.Inf(1)), 0, 0, 0}} {
		if err := h.Add(1, v); !errors.Is(err, ErrZeroVector) {
			t.Fatalf("Add(%v) = %v, want ErrZeroVector", v, err)
		}
	}
	if err := h.Add(1, []float32{1, 0, 0, 0}); err != nil {
		t.Fatal(err)
	}
	// A failed upsert leaves the old vector in place.
	if err := h.Add(1, []float32{0, 0, 0, 0}); !errors.Is(err, ErrZeroVector) || h.Len() != 1 {
		t.Fatalf("failed upsert: %v, Len %d", err, h.Len())
	}
	if _, err := h.Search([]float32{1, 0}, 5, nil); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("short query: %v", err)
	}
	if _, err := h.Search([]float32{0, 0, 0, 0}, 5, nil); !errors.Is(err, ErrZeroVector) {
		t.Fatalf("zero query: %v", err)
	}
	if got, err := h.Search([]float32{1, 0, 0, 0}, 0, nil); err != nil || got != nil {
		t.Fatalf("k=0: %v, %v", got, err)
	}
}

// unreachable counts live nodes that a walk of layer 0 from the entry point
// never reaches.
func unreachable(h *HNSW) int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := int(h.n.Load())
	seen := make([]bool, n)
	queue := []uint32{h.entry}
	seen[h.entry] = true
	for len(queue) > 0 {
		x := queue[0]
		queue = queue[1:]
		lst := h.list(x, 0)
		for _, y := range lst[1 : 1+lst[0]] {
			if !seen[y] {
				seen[y] = true
				queue = append(queue, y)
			}
		}
	}
	count := 0
	for i := range n {
		if !seen[i] && !h.isDeleted(uint32(i)) {
			count++
		}
	}
	return count
}
