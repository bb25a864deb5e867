package index

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"slices"
	"sync"
	"testing"
)

// scoreTol is how far a score may stray from the float64 reference: float32
// dot products of unit vectors of up to a few hundred dimensions are off by
// about 1e-7.
const scoreTol = 1e-5

// flatModel is the reference Flat: a map of unit vectors and brute force.
type flatModel struct {
	dim  int
	vecs map[uint64][]float32
}

func newFlatModel(dim int) *flatModel {
	return &flatModel{dim: dim, vecs: make(map[uint64][]float32)}
}

func (m *flatModel) add(id uint64, v []float32) error {
	if len(v) != m.dim {
		return ErrDimensionMismatch
	}
	u, err := Normalize(nil, v)
	if err != nil {
		return err
	}
	m.vecs[id] = u
	return nil
}

// anyID returns a stored id chosen by rng, independent of map order so
// that a seed replays the same run.
func (m *flatModel) anyID(rng *rand.Rand) uint64 {
	ids := make([]uint64, 0, len(m.vecs))
	for id := range m.vecs {
		ids = append(ids, id)
	}
	slices.Sort(ids)
	return ids[rng.Intn(len(ids))]
}

// scores returns the float64 score of every vector accepted by keep (nil
// keeps all) against q.
func (m *flatModel) scores(q []float32, keep func(uint64) bool) map[uint64]float64 {
	u, err := Normalize(nil, q)
	if err != nil {
		panic(err) // the tests only search with valid queries
	}
	out := make(map[uint64]float64)
	for id, v := range m.vecs {
		if keep == nil || keep(id) {
			out[id] = refDot64(u, v)
		}
	}
	return out
}

// refSearch returns the k best of scores, ordered as Flat promises.
func refSearch(scores map[uint64]float64, k int) []refHit {
	hits := make([]refHit, 0, len(scores))
	for id, s := range scores {
		hits = append(hits, refHit{id, s})
	}
	slices.SortFunc(hits, func(a, b refHit) int {
		switch {
		case a.score > b.score:
			return -1
		case a.score < b.score:
			return 1
		case a.id < b.id:
			return -1
		case a.id > b.id:
			return 1
		}
		return 0
	})
	return hits[:min(max(k, 0), len(hits))]
}

type refHit struct {
	id    uint64
	score float64
}

// checkAgainstRef compares a search result with the reference: the same
// length; at each position the same id, or an id whose true score ties with
// the expected one within scoreTol (float32 rounding may swap near-ties);
// every score within scoreTol of its id's true score; no duplicates; and
// the promised order, Score descending then ID ascending, exactly.
func checkAgainstRef(t *testing.T, got []Result, scores map[uint64]float64, want []refHit) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("got %d results, want %d\n got %v\nwant %v", len(got), len(want), got, want)
	}
	seen := make(map[uint64]bool, len(got))
	for i, r := range got {
		ref, ok := scores[r.ID]
		if !ok {
			t.Fatalf("result %d: id %d is not eligible (deleted, unknown or filtered out)", i, r.ID)
		}
		if seen[r.ID] {
			t.Fatalf("result %d: id %d returned twice", i, r.ID)
		}
		seen[r.ID] = true
		if math.Abs(float64(r.Score)-ref) > scoreTol {
			t.Fatalf("result %d: id %d score %v, want %v", i, r.ID, r.Score, ref)
		}
		if r.ID != want[i].id && math.Abs(ref-want[i].score) > scoreTol {
			t.Fatalf("result %d: id %d (score %v), want id %d (score %v)\n got %v\nwant %v",
				i, r.ID, ref, want[i].id, want[i].score, got, want)
		}
		if i > 0 && compareResults(got[i-1], r) >= 0 {
			t.Fatalf("results %d and %d out of order: %v then %v", i-1, i, got[i-1], r)
		}
	}
}

// TestFlatModel runs random sequences of Add (new and replacing), Delete,
// Search, filtered Search and SearchIDs against the brute-force model.
func TestFlatModel(t *testing.T) {
	for _, dim := range []int{1, 3, 16, 67} {
		t.Run(fmt.Sprintf("dim=%d", dim), func(t *testing.T) {
			rng := rand.New(rand.NewSource(int64(100 + dim)))
			f, err := NewFlat(dim)
			if err != nil {
				t.Fatal(err)
			}
			m := newFlatModel(dim)
			const idSpace = 400 // small enough that replaces and deletes hit
			for step := 0; step < 3000; step++ {
				switch op := rng.Intn(10); {
				case op < 4: // add or replace
					id := uint64(rng.Intn(idSpace))
					v := genVec(rng, dim)
					if op == 0 && len(m.vecs) > 0 {
						// Copy another id's vector: exact score ties, which
						// must come back smaller id first.
						v = slices.Clone(m.vecs[m.anyID(rng)])
					}
					if err := f.Add(id, v); err != nil {
						t.Fatalf("step %d: Add: %v", step, err)
					}
					if err := m.add(id, v); err != nil {
						t.Fatal(err)
					}
				case op < 6: // delete, sometimes a missing id
					id := uint64(rng.Intn(idSpace + 50))
					_, want := m.vecs[id]
					if got := f.Delete(id); got != want {
						t.Fatalf("step %d: Delete(%d) = %v, want %v", step, id, got, want)
					}
					delete(m.vecs, id)
				case op < 8: // search, half of them filtered
					q := genVec(rng, dim)
					k := rng.Intn(25) - 2
					var opts *SearchOptions
					var keep func(uint64) bool
					calls := 0
					if rng.Intn(2) == 0 {
						mod := uint64(2 + rng.Intn(4))
						keep = func(id uint64) bool { return id%mod == 0 }
						opts = &SearchOptions{Ef: 7, Filter: func(id uint64) bool { calls++; return keep(id) }}
					}
					got, err := f.Search(q, k, opts)
					if err != nil {
						t.Fatalf("step %d: Search: %v", step, err)
					}
					if k <= 0 {
						if got != nil {
							t.Fatalf("k=%d: got %v, want nil", k, got)
						}
						break
					}
					if keep != nil && calls != len(m.vecs) {
						t.Fatalf("filter called %d times, want once per vector (%d)", calls, len(m.vecs))
					}
					sc := m.scores(q, keep)
					checkAgainstRef(t, got, sc, refSearch(sc, k))
				case op < 9: // SearchIDs over a random subset with unknown and repeated ids
					q := genVec(rng, dim)
					k := 1 + rng.Intn(20)
					ids := make([]uint64, rng.Intn(60))
					for i := range ids {
						ids[i] = uint64(rng.Intn(idSpace + 50))
					}
					got, err := f.SearchIDs(q, k, ids)
					if err != nil {
						t.Fatalf("step %d: SearchIDs: %v", step, err)
					}
					sc := m.scores(q, func(id uint64) bool { return slices.Contains(ids, id) })
					checkAgainstRef(t, got, sc, refSearch(sc, k))
				default: // read back
					if f.Len() != len(m.vecs) {
						t.Fatalf("step %d: Len = %d, want %d", step, f.Len(), len(m.vecs))
					}
					id := uint64(rng.Intn(idSpace))
					got, ok := f.Vector(id)
					want, wantOK := m.vecs[id]
					if ok != wantOK || !slices.Equal(got, want) {
						t.Fatalf("step %d: Vector(%d) = %v, %v; want %v, %v", step, id, got, ok, want, wantOK)
					}
				}
			}
			// A final full search over everything, k larger than Len.
			q := genVec(rng, dim)
			got, err := f.Search(q, idSpace*2, nil)
			if err != nil {
				t.Fatal(err)
			}
			sc := m.scores(q, nil)
			checkAgainstRef(t, got, sc, refSearch(sc, idSpace*2))
		})
	}
}

func TestNewFlat(t *testing.T) {
	tests := []struct {
		dim     int
		wantErr bool
	}{
		{-1, true}, {0, true}, {1, false}, {384, false}, {MaxDim, false}, {MaxDim + 1, true},
	}
	for _, tt := range tests {
		t.Run(fmt.Sprintf("dim=%d", tt.dim), func(t *testing.T) {
			f, err := NewFlat(tt.dim)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidOptions) || f != nil {
					t.Fatalf("NewFlat(%d) = %v, %v; want nil, ErrInvalidOptions", tt.dim, f, err)
				}
				return
			}
			if err != nil || f.Dim() != tt.dim || f.Len() != 0 {
				t.Fatalf("NewFlat(%d) = dim %d len %d, %v", tt.dim, f.Dim(), f.Len(), err)
			}
		})
	}
}

// TestFlatRejects checks that every bad vector is rejected with its
// sentinel and leaves the index exactly as it was.
func TestFlatRejects(t *testing.T) {
	nan, inf := float32(math.NaN()), float32(math.Inf(1))
	tests := []struct {
		name string
		v    []float32
		want error
	}{
		{"nil", nil, ErrDimensionMismatch},
		{"empty", []float32{}, ErrDimensionMismatch},
		{"short", []float32{1, 2, 3}, ErrDimensionMismatch},
		{"long", []float32{1, 2, 3, 4, 5}, ErrDimensionMismatch},
		{"zero", []float32{0, 0, 0, 0}, ErrZeroVector},
		{"NaN", []float32{1, nan, 0, 0}, ErrZeroVector},
		{"+Inf", []float32{0, 0, inf, 1}, ErrZeroVector},
		{"-Inf", []float32{0, 0, 1, -inf}, ErrZeroVector},
		// Normalize turns this into +Inf components; Flat must reject it.
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, _ := NewFlat(4)
			for id := uint64(1); id <= 3; id++ {
				if err := f.Add(id, []float32{float32(id), 1, 0, 0}); err != nil {
					t.Fatal(err)
				}
			}
			before, _ := f.Vector(2)
			bytes := f.Bytes()

			// A new id and a replacement both fail and change nothing.
			for _, id := range []uint64{99, 2} {
				if err := f.Add(id, tt.v); !errors.Is(err, tt.want) {
					t.Fatalf("Add(%d) error = %v, want %v", id, err, tt.want)
				}
			}
			if f.Len() != 3 {
				t.Fatalf("Len = %d after failed Add, want 3", f.Len())
			}
			if _, ok := f.Vector(99); ok {
				t.Fatal("failed Add stored id 99")
			}
			if after, _ := f.Vector(2); !slices.Equal(before, after) {
				t.Fatalf("failed replace changed id 2: %v -> %v", before, after)
			}
			if f.Bytes() != bytes {
				t.Fatalf("Bytes %d -> %d after failed Add", bytes, f.Bytes())
			}

			// The same vector as a query is rejected the same way, for any k.
			for _, k := range []int{-1, 0, 5} {
				if got, err := f.Search(tt.v, k, nil); !errors.Is(err, tt.want) || got != nil {
					t.Fatalf("Search k=%d = %v, %v; want nil, %v", k, got, err, tt.want)
				}
				if got, err := f.SearchIDs(tt.v, k, []uint64{1, 2}); !errors.Is(err, tt.want) || got != nil {
					t.Fatalf("SearchIDs k=%d = %v, %v; want nil, %v", k, got, err, tt.want)
				}
			}
		})
	}
}

func TestFlatEmptyAndSmall(t *testing.T) {
	f, _ := NewFlat(2)
	q := []float32{1, 0}
	if got, err := f.Search(q, 5, nil); err != nil || len(got) != 0 {
		t.Fatalf("empty index: %v, %v", got, err)
	}
	if got, err := f.SearchIDs(q, 5, []uint64{1, 2}); err != nil || len(got) != 0 {
		t.Fatalf("empty index SearchIDs: %v, %v", got, err)
	}
	if f.Delete(1) {
		t.Fatal("Delete on empty index reported true")
	}
	_ = f.Add(1, []float32{3, 4})
	_ = f.Add(2, []float32{-1, 0})
	got, err := f.Search([]float32{10, 0}, 5, nil)
	want := []Result{{1, 0.6}, {2, -1}}
	if err != nil || len(got) != 2 || got[0].ID != 1 || got[1].ID != 2 ||
		math.Abs(float64(got[0].Score-want[0].Score)) > 1e-6 || got[1].Score != -1 {
		t.Fatalf("got %v, %v; want %v", got, err, want)
	}
	if got, err := f.Search(q, 0, nil); got != nil || err != nil {
		t.Fatalf("k=0: %v, %v; want nil, nil", got, err)
	}
	if got, err := f.SearchIDs(q, 5, nil); err != nil || len(got) != 0 {
		t.Fatalf("no ids: %v, %v", got, err)
	}
	// A filter that rejects everything.
	none := &SearchOptions{Filter: func(uint64) bool { return false }}
	if got, err := f.Search(q, 5, none); err != nil || len(got) != 0 {
		t.Fatalf("reject-all filter: %v, %v", got, err)
	}
}

// TestFlatShrink checks that memory is released after most vectors are
// deleted, and that the survivors stay correct.
func TestFlatShrink(t *testing.T) {
	const dim, n, keep = 8, 5000, 10
	rng := rand.New(rand.NewSource(9))
	f, _ := NewFlat(dim)
	m := newFlatModel(dim)
	for id := uint64(0); id < n; id++ {
		v := genVec(rng, dim)
		_ = f.Add(id, v)
		_ = m.add(id, v)
	}
	peak := f.Bytes()
	if raw := int64(n * (dim*4 + 8)); peak < raw {
		t.Fatalf("Bytes = %d, less than the raw data (%d)", peak, raw)
	}
	for _, id := range rng.Perm(n)[keep:] {
		if !f.Delete(uint64(id)) {
			t.Fatalf("Delete(%d) = false", id)
		}
		delete(m.vecs, uint64(id))
	}
	if got := f.Bytes(); got > peak/20 {
		t.Fatalf("Bytes = %d after deleting all but %d of %d, peak %d: storage not released", got, keep, n, peak)
	}
	q := genVec(rng, dim)
	got, err := f.Search(q, keep, nil)
	if err != nil {
		t.Fatal(err)
	}
	sc := m.scores(q, nil)
	checkAgainstRef(t, got, sc, refSearch(sc, keep))
	for id, want := range m.vecs {
		if got, ok := f.Vector(id); !ok || !slices.Equal(got, want) {
			t.Fatalf("Vector(%d) = %v, %v; want %v", id, got, ok, want)
		}
	}
}

// TestFlatVectorIsCopy checks that neither Add's input nor Vector's output
// aliases the index's storage.
func TestFlatVectorIsCopy(t *testing.T) {
	f, _ := NewFlat(2)
	v := []float32{1, 0}
	_ = f.Add(7, v)
	v[0], v[1] = 0, 1
	got, _ := f.Vector(7)
	if !slices.Equal(got, []float32{1, 0}) {
		t.Fatalf("Add kept a reference to its input: %v", got)
	}
	got[0] = 42
	if again, _ := f.Vector(7); again[0] != 1 {
		t.Fatalf("Vector returned the index's storage: %v", again)
	}
}

// TestFlatSearchAllocs checks that a search allocates only the slice it
// returns, once its pooled scratch is warm.
func TestFlatSearchAllocs(t *testing.T) {
	if raceEnabled {
		t.Skip("sync.Pool drops items under -race")
	}
	rng := rand.New(rand.NewSource(10))
	f, _ := NewFlat(32)
	for id := uint64(0); id < 500; id++ {
		_ = f.Add(id, genVec(rng, 32))
	}
	q := genVec(rng, 32)
	ids := []uint64{1, 5, 9, 400, 1000}
	_, _ = f.Search(q, 10, nil)
	if a := testing.AllocsPerRun(100, func() { _, _ = f.Search(q, 10, nil) }); a > 1 {
		t.Errorf("Search: %v allocations, want 1", a)
	}
	if a := testing.AllocsPerRun(100, func() { _, _ = f.SearchIDs(q, 10, ids) }); a > 1 {
		t.Errorf("SearchIDs: %v allocations, want 1", a)
	}
	if a := testing.AllocsPerRun(100, func() { _ = f.Add(3, q) }); a != 0 {
		t.Errorf("Add (replace): %v allocations, want 0", a)
	}
}

// TestFlatConcurrent runs writers, deleters and searchers at once; run it
// with -race. Each result must be well formed, and at the end the index
// must match what the writers left.
func TestFlatConcurrent(t *testing.T) {
	const dim, workers, ops, idSpace = 16, 4, 1000, 300
	f, _ := NewFlat(dim)
	var wg sync.WaitGroup
	errc := make(chan error, 3*workers)
	for w := 0; w < workers; w++ {
		wg.Add(3)
		go func(seed int64) { // adds and replaces
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < ops; i++ {
				if err := f.Add(uint64(rng.Intn(idSpace)), genVec(rng, dim)); err != nil {
					errc <- err
					return
				}
			}
		}(int64(w))
		go func(seed int64) { // deletes
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			for i := 0; i < ops; i++ {
				f.Delete(uint64(rng.Intn(idSpace)))
			}
		}(int64(100 + w))
		go func(seed int64) { // searches of every kind, and reads
			defer wg.Done()
			rng := rand.New(rand.NewSource(seed))
			opts := &SearchOptions{Filter: func(id uint64) bool { return id%2 == 0 }}
			for i := 0; i < ops; i++ {
				q := genVec(rng, dim)
				var got []Result
				var err error
				switch i % 3 {
				case 0:
					got, err = f.Search(q, 10, nil)
				case 1:
					got, err = f.Search(q, 10, opts)
				default:
					got, err = f.SearchIDs(q, 10, []uint64{1, 2, 3, 50, 51, 52, 299})
				}
				if err != nil {
					errc <- err
					return
				}
				if len(got) > 10 {
					errc <- fmt.Errorf("%d results for k=10", len(got))
					return
				}
				for j, r := range got {
					if r.Score < -1-scoreTol || r.Score > 1+scoreTol ||
						(j > 0 && compareResults(got[j-1], r) >= 0) ||
						(i%3 == 1 && r.ID%2 != 0) {
						errc <- fmt.Errorf("bad results %v", got)
						return
					}
				}
				_ = f.Len()
				_ = f.Bytes()
				_, _ = f.Vector(uint64(rng.Intn(idSpace)))
			}
		}(int64(200 + w))
	}
	wg.Wait()
	close(errc)
	for err := range errc {
		t.Fatal(err)
	}
	// Quiescent: every stored vector is found by searching for itself.
	n := f.Len()
	for id := uint64(0); id < idSpace; id++ {
		v, ok := f.Vector(id)
		if !ok {
			continue
		}
		n--
		got, err := f.SearchIDs(v, 1, []uint64{id})
		if err != nil || len(got) != 1 || math.Abs(float64(got[0].Score)-1) > scoreTol {
			t.Fatalf("self search of %d: %v, %v", id, got, err)
		}
	}
	if n != 0 {
		t.Fatalf("Len counts %d vectors that Vector cannot find", n)
	}
}

// BenchmarkFlatSearch measures exact top-10 search over seeded random unit
// vectors of 384 dimensions, the size of common sentence embeddings.
func BenchmarkFlatSearch(b *testing.B) {
	const dim, k = 384, 10
	for _, n := range []int{1000, 10000, 100000} {
		b.Run(fmt.Sprintf("n=%d/dim=%d/k=%d", n, dim, k), func(b *testing.B) {
			rng := rand.New(rand.NewSource(int64(n)))
			f, err := NewFlat(dim)
			if err != nil {
				b.Fatal(err)
			}
			for id := 0; id < n; id++ {
				if err := f.Add(uint64(id), genVec(rng, dim)); err != nil {
					b.Fatal(err)
				}
			}
			queries := make([][]float32, 64)
			for i := range queries {
				queries[i] = genVec(rng, dim)
			}
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				if _, err := f.Search(queries[i%len(queries)], k, nil); err != nil {
					b.Fatal(err)
				}
				i++
			}
			b.ReportMetric(float64(i)/b.Elapsed().Seconds(), "queries/s")
		})
	}
}

// TestFlatTies stores one vector under many ids, largest id in the first
// slot, so that every candidate after the first k ties with the worst kept
// one: a scan that skipped equal scores would keep the wrong ids.
func TestFlatTies(t *testing.T) {
	f, _ := NewFlat(3)
	for id := uint64(20); id >= 1; id-- {
		_ = f.Add(id, []float32{1, 2, 3})
	}
	_ = f.Add(100, []float32{-1, -2, -3})
	q := []float32{1, 1, 1}
	tests := []struct {
		name string
		run  func() ([]Result, error)
		want []uint64
	}{
		{"Search", func() ([]Result, error) { return f.Search(q, 3, nil) }, []uint64{1, 2, 3}},
		{"Search filtered", func() ([]Result, error) {
			return f.Search(q, 3, &SearchOptions{Filter: func(id uint64) bool { return id != 2 }})
		}, []uint64{1, 3, 4}},
		{"SearchIDs", func() ([]Result, error) {
			return f.SearchIDs(q, 3, []uint64{20, 9, 100, 7, 8, 1, 2, 3, 7})
		}, []uint64{1, 2, 3}},
		{"SearchIDs repeated", func() ([]Result, error) {
			return f.SearchIDs(q, 3, []uint64{5, 5, 5, 9, 5, 6})
		}, []uint64{5, 6, 9}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := tt.run()
			if err != nil || len(got) != len(tt.want) {
				t.Fatalf("got %v, %v; want ids %v", got, err, tt.want)
			}
			for i, r := range got {
				if r.ID != tt.want[i] || r.Score != got[0].Score {
					t.Fatalf("got %v, want ids %v with equal scores", got, tt.want)
				}
			}
		})
	}
}
