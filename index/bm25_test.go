package index

import (
	"bytes"
	"cmp"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"
)

// bm25Model is the reference for BM25: the live documents in a map and the
// ranking function computed from scratch on every search.
type bm25Model struct {
	k1, b float64
	docs  map[uint64][]string
}

func newBM25Model(o BM25Options) *bm25Model {
	return &bm25Model{k1: o.K1, b: o.B, docs: map[uint64][]string{}}
}

// score returns the BM25 score of every document holding a query term.
func (m *bm25Model) score(query []string) map[uint64]float64 {
	n := float64(len(m.docs))
	var total float64
	df := map[string]float64{}
	for _, terms := range m.docs {
		total += float64(len(terms))
		seen := map[string]bool{}
		for _, t := range terms {
			if !seen[t] {
				seen[t] = true
				df[t]++
			}
		}
	}
	avgdl := total / n
	scores := map[uint64]float64{}
	for id, terms := range m.docs {
		dl := float64(len(terms))
		for _, q := range query { // each occurrence of a query term counts
			tf := 0.0
			for _, t := range terms {
				if t == q {
					tf++
				}
			}
			if tf == 0 {
				continue
			}
			idf := math.Log(1 + (n-df[q]+0.5)/(df[q]+0.5))
			scores[id] += idf * tf * (m.k1 + 1) / (tf + m.k1*(1-m.b+m.b*dl/avgdl))
		}
	}
	return scores
}

// search returns the k best documents by score, as BM25.Search should.
func (m *bm25Model) search(query []string, k int, filter Filter) []Result {
	var res []Result
	for id, s := range m.score(query) {
		if filter == nil || filter(id) {
			res = append(res, Result{ID: id, Score: float32(s)})
		}
	}
	slices.SortFunc(res, func(a, b Result) int {
		if c := cmp.Compare(b.Score, a.Score); c != 0 {
			return c
		}
		return cmp.Compare(a.ID, b.ID)
	})
	return res[:min(k, len(res))]
}

// scoresClose reports whether a BM25 score (float32) matches the reference
// within 1e-6, relative for scores above 1.
func scoresClose(got float32, want float64) bool {
	return math.Abs(float64(got)-want) <= 1e-6*max(1, math.Abs(want))
}

// checkSearch compares a search of x with the model: the same number of
// results, scores rank by rank within 1e-6, each result's score its own
// reference score, and ids distinct, stored and accepted by the filter.
// Ids may differ only where scores tie.
func checkSearch(t *testing.T, x *BM25, m *bm25Model, query []string, k int, filter Filter) {
	t.Helper()
	got, err := x.SearchTerms(query, k, &SearchOptions{Filter: filter})
	if err != nil {
		t.Fatal(err)
	}
	want := m.search(query, k, filter)
	scores := m.score(query)
	if len(got) != len(want) {
		t.Fatalf("search %q k %d: %d results, want %d\ngot  %v\nwant %v", query, k, len(got), len(want), got, want)
	}
	seen := map[uint64]bool{}
	for i, r := range got {
		s, ok := scores[r.ID]
		if !ok || seen[r.ID] || (filter != nil && !filter(r.ID)) {
			t.Fatalf("search %q: result %v is not a matching live document (or repeats)", query, r)
		}
		seen[r.ID] = true
		if !scoresClose(r.Score, s) || !scoresClose(r.Score, float64(want[i].Score)) {
			t.Fatalf("search %q rank %d: %v, reference score %v, reference rank %v", query, i, r, s, want[i])
		}
		if i > 0 && compareResults(got[i-1], r) >= 0 {
			t.Fatalf("search %q: results out of order: %v", query, got)
		}
	}
}

// checkBM25 verifies x's internal invariants: statistics equal to those
// recomputed from the live postings, postings in slot order, and the id map
// and forward lists agreeing with both.
func checkBM25(t testing.TB, x *BM25) {
	t.Helper()
	x.mu.RLock()
	defer x.mu.RUnlock()
	var total uint64
	dead := 0
	for s, l := range x.mu.lens {
		if l == deadDoc {
			dead++
			continue
		}
		total += uint64(l)
		if got, ok := x.mu.slot[x.mu.ids[s]]; !ok || got != uint32(s) {
			t.Fatalf("slot %d (id %d) not in the id map", s, x.mu.ids[s])
		}
		var dl uint64
		for _, tid := range x.fwdLocked(uint32(s)) {
			i := slices.IndexFunc(x.mu.post[tid], func(p posting) bool { return p.doc == uint32(s) })
			if i < 0 {
				t.Fatalf("slot %d lists term %q without a posting", s, x.mu.terms[tid])
			}
			dl += uint64(x.mu.post[tid][i].tf)
		}
		if dl != uint64(l) {
			t.Fatalf("slot %d: length %d, postings sum to %d", s, l, dl)
		}
	}
	if dead != x.mu.dead || total != x.mu.total || len(x.mu.slot) != len(x.mu.ids)-dead {
		t.Fatalf("dead %d (counted %d), total %d (counted %d), %d ids mapped of %d live",
			x.mu.dead, dead, x.mu.total, total, len(x.mu.slot), len(x.mu.ids)-dead)
	}
	for tid, p := range x.mu.post {
		var df uint32
		for i, e := range p {
			if i > 0 && e.doc <= p[i-1].doc || e.tf == 0 {
				t.Fatalf("term %q: postings out of order or tf 0: %v", x.mu.terms[tid], p)
			}
			if x.mu.lens[e.doc] != deadDoc {
				df++
			}
		}
		if df != x.mu.df[tid] || x.mu.dict[x.mu.terms[tid]] != uint32(tid) {
			t.Fatalf("term %q: df %d, counted %d", x.mu.terms[tid], x.mu.df[tid], df)
		}
	}
}

// randTerms returns n terms drawn from a skewed vocabulary of 40 words, so
// that document frequencies range from most documents to a few.
func randTerms(rng *rand.Rand, n int) []string {
	terms := make([]string, n)
	for i := range terms {
		terms[i] = fmt.Sprintf("t%d", int(40*math.Pow(rng.Float64(), 2.5)))
	}
	return terms
}

// TestBM25Model runs random adds, replaces, deletes and searches against
// the brute-force model, and checks at intervals that the index equals one
// built from its live documents alone (same results, bit for bit) and that
// it survives an encode and decode.
func TestBM25Model(t *testing.T) {
	for seed := range uint64(6) {
		t.Run(fmt.Sprintf("seed=%d", seed), func(t *testing.T) {
			rng := rand.New(rand.NewPCG(seed, 99))
			opts := BM25Options{K1: 1.2, B: 0.75}
			if seed%2 == 1 {
				opts = BM25Options{K1: 2, B: 0.3}
			}
			x, m := NewBM25(&opts), newBM25Model(opts)
			idRange := uint64(20 + seed*40) // small ranges replace often
			compactions := 0
			ops := 3000
			if raceEnabled {
				ops = 1000
			}
			for op := range ops {
				switch r := rng.IntN(100); {
				case r < 45:
					id := rng.Uint64N(idRange)
					terms := randTerms(rng, rng.IntN(13))
					x.AddTerms(id, terms)
					m.docs[id] = terms
				case r < 70:
					id := rng.Uint64N(idRange + 5)
					dead := x.mu.dead
					x.Delete(id)
					delete(m.docs, id)
					if x.mu.dead < dead {
						compactions++
					}
				default:
					query := randTerms(rng, rng.IntN(6))
					if rng.IntN(10) == 0 {
						query = append(query, "absent")
					}
					var filter Filter
					if rng.IntN(3) == 0 {
						mod := rng.Uint64N(3) + 2
						filter = func(id uint64) bool { return id%mod != 0 }
					}
					checkSearch(t, x, m, query, 1+rng.IntN(15), filter)
				}
				if x.Len() != len(m.docs) {
					t.Fatalf("op %d: Len %d, model %d", op, x.Len(), len(m.docs))
				}
				if op%100 == 99 {
					checkBM25(t, x)
					checkFresh(t, rng, x, m)
				}
			}
			if compactions == 0 {
				t.Errorf("no compaction in 3000 operations")
			}
		})
	}
}

// checkFresh compares x with an index built from the model's documents in
// random order, and with x encoded and decoded: every search must give the
// same results bit for bit, since the statistics and the order in which
// each score is summed are the same.
func checkFresh(t *testing.T, rng *rand.Rand, x *BM25, m *bm25Model) {
	t.Helper()
	fresh := NewBM25(&BM25Options{K1: m.k1, B: m.b})
	ids := make([]uint64, 0, len(m.docs))
	for id := range m.docs {
		ids = append(ids, id)
	}
	rng.Shuffle(len(ids), func(i, j int) { ids[i], ids[j] = ids[j], ids[i] })
	for _, id := range ids {
		fresh.AddTerms(id, m.docs[id])
	}
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	decoded, err := DecodeBM25(&buf)
	if err != nil {
		t.Fatal(err)
	}
	checkBM25(t, decoded)
	for range 20 {
		query, k := randTerms(rng, 1+rng.IntN(5)), 1+rng.IntN(10)
		a, _ := x.SearchTerms(query, k, nil)
		b, _ := fresh.SearchTerms(query, k, nil)
		c, _ := decoded.SearchTerms(query, k, nil)
		if !reflect.DeepEqual(a, b) || !reflect.DeepEqual(a, c) {
			t.Fatalf("search %q: index %v, fresh %v, decoded %v", query, a, b, c)
		}
	}
}

func TestBM25Scores(t *testing.T) {
	x := NewBM25(nil)
	x.AddTerms(1, []string{"a", "b"})
	x.AddTerms(2, []string{"a", "c", "c"})
	x.AddTerms(3, nil) // empty: counts in N and avgdl
	// N = 3, avgdl = 5/3; "c": df 1, tf 2 in a document of length 3.
	idf := math.Log(1 + (3-1+0.5)/(1+0.5))
	want := idf * 2 * 2.2 / (2 + 1.2*(0.25+0.75*3/(5.0/3)))
	got, err := x.Search("c", 10, nil)
	if err != nil || len(got) != 1 || got[0].ID != 2 || !scoresClose(got[0].Score, want) {
		t.Fatalf("Search(c) = %v, %v; want [{2 %v}]", got, err, want)
	}
	// A repeated query term counts once per occurrence.
	twice, _ := x.SearchTerms([]string{"c", "c"}, 10, nil)
	if len(twice) != 1 || !scoresClose(twice[0].Score, 2*want) {
		t.Fatalf("SearchTerms(c c) = %v, want score %v", twice, 2*want)
	}
	// "a" is in 2 of 3 documents: a positive idf all the same; the shorter
	// document ranks first.
	got, _ = x.SearchTerms([]string{"a"}, 10, nil)
	if len(got) != 2 || got[0].ID != 1 || got[1].ID != 2 || got[1].Score <= 0 {
		t.Fatalf("SearchTerms(a) = %v", got)
	}
	if o := x.Options(); o.K1 != 1.2 || o.B != 0.75 {
		t.Fatalf("default options %+v", o)
	}
}

func TestBM25Search(t *testing.T) {
	x := NewBM25(nil)
	docs := map[uint64]string{
		1: "The customer called about account 3942 and a refund.",
		2: "Alice's account was closed; she opened account 3943.",
		3: "Running totals are kept in the user_id column.",
		4: "The runner ran a marathon in under three hours.",
		5: "Contact alice@example.com about the invoice.",
	}
	for id, text := range docs {
		x.Add(id, text)
	}
	tests := []struct {
		query string
		want  []uint64
	}{
		{"account 3942", []uint64{1, 2}},
		{"3942", []uint64{1}},
		{"Alice", []uint64{2}},
		{"user_id", []uint64{3}},
		{"run", []uint64{3}},
		{"runners running", []uint64{3, 4}}, // one term each, equal lengths: a tie
		{"alice@example.com", []uint64{5}},
		{"the and of", nil},
		{"", nil},
		{"unknown words", nil},
	}
	for _, tt := range tests {
		got, err := x.Search(tt.query, 10, nil)
		if err != nil {
			t.Fatal(err)
		}
		var ids []uint64
		for _, r := range got {
			ids = append(ids, r.ID)
		}
		if !slices.Equal(ids, tt.want) {
			t.Errorf("Search(%q) = %v, want ids %v", tt.query, got, tt.want)
		}
	}
	for _, k := range []int{0, -1} {
		if got, err := x.Search("account", k, nil); got != nil || err != nil {
			t.Errorf("Search with k %d = %v, %v; want nil, nil", k, got, err)
		}
	}
	got, _ := x.Search("account", 10, &SearchOptions{Filter: func(id uint64) bool { return id != 1 }})
	if len(got) != 1 || got[0].ID != 2 {
		t.Errorf("filtered search = %v, want only 2", got)
	}

	// Replacing a document drops its old terms; deleting drops it.
	x.Add(1, "nothing in common")
	if got, err := x.Search("3942", 10, nil); err != nil || len(got) != 0 {
		t.Errorf("after replace: %v, %v; want no hits and no error", got, err)
	}
	x.Delete(2)
	x.Delete(2)
	x.Delete(99)
	if got, err := x.Search("account", 10, nil); err != nil || len(got) != 0 || x.Len() != 4 {
		t.Errorf("after delete: %v, %v, Len %d; want no hits, no error, Len 4", got, err, x.Len())
	}
	checkBM25(t, x)
}

// TestBM25Ties stores one text under many ids, largest first, so that
// every candidate past the first k ties with the worst kept one.
func TestBM25Ties(t *testing.T) {
	x := NewBM25(nil)
	for id := uint64(50); id >= 1; id-- {
		x.Add(id, "same words")
	}
	got, _ := x.Search("words", 3, nil)
	if len(got) != 3 || got[0].ID != 1 || got[1].ID != 2 || got[2].ID != 3 {
		t.Fatalf("ties: %v, want ids 1, 2, 3", got)
	}
}

// TestBM25Compaction deletes most documents and checks that storage
// shrinks to the live ones and that terms no one holds leave the dictionary.
func TestBM25Compaction(t *testing.T) {
	x := NewBM25(nil)
	for id := range uint64(1000) {
		x.AddTerms(id, []string{"common", fmt.Sprintf("own%d", id)})
	}
	for id := range uint64(990) {
		x.Delete(id)
	}
	checkBM25(t, x)
	if len(x.mu.ids) > 2*10+64 || len(x.mu.terms) > 2*(10+1)+64 {
		t.Fatalf("after deleting 990 of 1000: %d slots, %d terms", len(x.mu.ids), len(x.mu.terms))
	}
	got, _ := x.SearchTerms([]string{"common"}, 100, nil)
	if len(got) != 10 || got[0].ID != 990 {
		t.Fatalf("search after compaction: %v", got)
	}
	// Replacing one id over and over does not grow the index either.
	for range 1000 {
		x.AddTerms(5000, []string{"again"})
	}
	if len(x.mu.ids) > 100 {
		t.Fatalf("1000 replaces left %d slots", len(x.mu.ids))
	}
	checkBM25(t, x)
}

func TestNewBM25Options(t *testing.T) {
	if o := NewBM25(&BM25Options{K1: 2, B: 1}).Options(); o != (BM25Options{K1: 2, B: 1}) {
		t.Errorf("options %+v", o)
	}
	for _, o := range []BM25Options{{K1: -1}, {B: 1.5}, {K1: math.NaN()}, {K1: math.Inf(1), B: -1}} {
		func() {
			defer func() {
				err, _ := recover().(error)
				if !errors.Is(err, ErrInvalidOptions) {
					t.Errorf("NewBM25(%+v) panicked with %v, want ErrInvalidOptions", o, err)
				}
			}()
			NewBM25(&o)
		}()
	}
}

// TestBM25Concurrent runs searches and encodes during writes; with -race
// it checks the locking.
func TestBM25Concurrent(t *testing.T) {
	x := NewBM25(nil)
	rng := rand.New(rand.NewPCG(1, 1))
	for id := range uint64(200) {
		x.AddTerms(id, randTerms(rng, 10))
	}
	var wg sync.WaitGroup
	for g := range 4 {
		wg.Go(func() {
			rng := rand.New(rand.NewPCG(uint64(g), 2))
			for range 300 {
				switch g {
				case 0:
					id := rng.Uint64N(300)
					if rng.IntN(3) == 0 {
						x.Delete(id)
					} else {
						x.Add(id, "t1 t2 words "+fmt.Sprint(id))
					}
				case 1:
					if err := x.Encode(&bytes.Buffer{}); err != nil {
						t.Error(err)
					}
				default:
					res, err := x.Search("t1 t3 words", 5, nil)
					if err != nil || len(res) == 0 {
						t.Errorf("search: %v, %v", res, err)
					}
				}
			}
		})
	}
	wg.Wait()
	checkBM25(t, x)
}

func TestBM25EncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 3))
	x := NewBM25(&BM25Options{K1: 1.5, B: 0.5})
	for id := range uint64(500) {
		x.AddTerms(id*7, randTerms(rng, rng.IntN(20)))
	}
	x.Add(1, "Unicode: café 東京 user_id account 3942")
	for id := uint64(0); id < 500*7; id += 21 {
		x.Delete(id)
	}
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeBM25(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	checkBM25(t, got)
	if got.Len() != x.Len() || got.Options() != x.Options() {
		t.Fatalf("decoded Len %d %+v, want %d %+v", got.Len(), got.Options(), x.Len(), x.Options())
	}
	for range 50 {
		q := randTerms(rng, 1+rng.IntN(4))
		a, _ := x.SearchTerms(q, 10, nil)
		b, _ := got.SearchTerms(q, 10, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("search %q differs after decode:\n%v\n%v", q, a, b)
		}
	}
	if r, _ := got.Search("café account", 1, nil); len(r) != 1 || r[0].ID != 1 {
		t.Fatalf("decoded index lost a text document: %v", r)
	}
	// Re-encoding gives the same bytes, and the decoded index takes writes.
	var again bytes.Buffer
	if err := got.Encode(&again); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("re-encode differs (%v)", err)
	}
	got.Add(1, "replaced")
	got.Delete(7)
	checkBM25(t, got)

	empty := NewBM25(nil)
	buf.Reset()
	if err := empty.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if e, err := DecodeBM25(&buf); err != nil || e.Len() != 0 {
		t.Fatalf("empty index: %v, %v", e, err)
	}
}

func TestBM25DecodeCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(4, 4))
	x := NewBM25(nil)
	for id := range uint64(100) {
		x.AddTerms(id, randTerms(rng, 1+rng.IntN(8)))
	}
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Every truncation and every single-bit flip is caught (every fifth
	// under -race, which adds nothing to a loop on one goroutine).
	step := 1
	if raceEnabled {
		step = 5
	}
	for cut := 0; cut < len(good); cut += step {
		if _, err := DecodeBM25(bytes.NewReader(good[:cut])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d of %d: %v, want ErrCorrupt", cut, len(good), err)
		}
	}
	for i := 0; i < len(good); i += step {
		bad := bytes.Clone(good)
		bad[i] ^= 1 << (i % 8)
		if _, err := DecodeBM25(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit flip at byte %d: %v, want ErrCorrupt", i, err)
		}
	}
}

// FuzzDecodeBM25 fuzzes the body of an encoding, sealed with a recomputed
// checksum (see sealCRC) so that mutations reach the decoder proper; the
// raw input is decoded too, for the checksum path. Whatever decodes must
// be a consistent index that searches, takes writes and re-encodes, and
// decoding is a fixed point: decode → encode → decode gives an equal
// index and the same bytes again. An encoding made by Encode decodes and
// re-encodes to itself.
func FuzzDecodeBM25(f *testing.F) {
	rng := rand.New(rand.NewPCG(8, 8))
	for _, n := range []int{0, 1, 5, 20} {
		x := NewBM25(nil)
		for id := range n {
			x.AddTerms(uint64(id), randTerms(rng, rng.IntN(6)))
		}
		var buf bytes.Buffer
		if err := x.Encode(&buf); err != nil {
			f.Fatal(err)
		}
		if again := reencodeBM25(f, buf.Bytes()); !bytes.Equal(again, buf.Bytes()) {
			f.Fatalf("an encoding of %d documents does not re-encode to itself", n)
		}
		f.Add(buf.Bytes()[:buf.Len()-4])
	}
	f.Add([]byte(bm25Magic))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<10 {
			return // big inputs only slow the minimizer
		}
		if x, err := DecodeBM25(bytes.NewReader(body)); err == nil {
			checkDecodedBM25(t, x)
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error does not wrap ErrCorrupt: %v", err)
		}
		x, err := DecodeBM25(bytes.NewReader(sealCRC(body)))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		checkDecodedBM25(t, x)
	})
}

// reencodeBM25 decodes b, which must decode, and encodes it again.
func reencodeBM25(t testing.TB, b []byte) []byte {
	t.Helper()
	x, err := DecodeBM25(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.Bytes()
}

// checkDecodedBM25 checks a decoded index is consistent and round-trips
// to an equal one, then searches and writes to it.
func checkDecodedBM25(t *testing.T, x *BM25) {
	t.Helper()
	checkBM25(t, x)
	var enc bytes.Buffer
	if err := x.Encode(&enc); err != nil {
		t.Fatalf("encode a decoded index: %v", err)
	}
	x2, err := DecodeBM25(bytes.NewReader(enc.Bytes()))
	if err != nil {
		t.Fatalf("re-encoded index does not decode: %v", err)
	}
	checkBM25(t, x2)
	if again := reencodeBM25(t, enc.Bytes()); !bytes.Equal(again, enc.Bytes()) {
		t.Fatalf("decode → encode is not stable:\n%x\n%x", enc.Bytes(), again)
	}
	x.mu.RLock()
	query := slices.Clone(x.mu.terms)
	x.mu.RUnlock()
	x2.mu.RLock()
	terms2 := slices.Clone(x2.mu.terms)
	x2.mu.RUnlock()
	if x2.Len() != x.Len() || !slices.Equal(terms2, query) {
		t.Fatalf("round trip: Len %d, terms %q; want %d, %q", x2.Len(), terms2, x.Len(), query)
	}
	res, err := x.SearchTerms(query, 3, nil)
	if err != nil || len(res) > 3 || (len(query) > 0 && len(res) == 0) {
		t.Fatalf("search for every term: %v, %v", res, err)
	}
	res2, err := x2.SearchTerms(query, 3, nil)
	if err != nil || fmt.Sprint(res2) != fmt.Sprint(res) {
		t.Fatalf("search differs after a round trip:\n%v\n%v (%v)", res, res2, err)
	}
	x.AddTerms(1<<63, []string{"t1", "new"})
	x.Delete(0)
	checkBM25(t, x)
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeBM25(&buf); err != nil {
		t.Fatalf("index with writes does not decode: %v", err)
	}
}

// BenchmarkBM25Search measures top-10 search of 5-term text queries over
// short documents (10 to 30 words). Words are drawn from a Zipf
// distribution over 50,000 letter-only words with its head flattened (as
// if the commonest words were stop words), so the commonest word is in
// about 7% of documents. "zipf" queries draw their words from the same
// distribution; "common" queries are the five commonest words, the longest
// postings lists there are. The time includes analyzing the query.
func BenchmarkBM25Search(b *testing.B) {
	const vocab, k = 50000, 10
	for _, n := range []int{1000, 10000, 100000} {
		rng := rand.New(rand.NewPCG(uint64(n), 1))
		zipf := rand.NewZipf(rand.New(rand.NewPCG(uint64(n), 2)), 1.07, 50, vocab-1)
		text := func(words int) string {
			var sb strings.Builder
			for i := range words {
				if i > 0 {
					sb.WriteByte(' ')
				}
				sb.WriteString(benchWord(zipf.Uint64()))
			}
			return sb.String()
		}
		var before runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		x := NewBM25(nil)
		for id := range uint64(n) {
			x.Add(id, text(10+rng.IntN(21)))
		}
		var after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&after)
		heapPerDoc := float64(after.HeapAlloc-before.HeapAlloc) / float64(n)

		zipfQueries := make([]string, 64)
		for i := range zipfQueries {
			zipfQueries[i] = text(5)
		}
		common := []string{strings.Join([]string{benchWord(0), benchWord(1), benchWord(2), benchWord(3), benchWord(4)}, " ")}
		for _, qs := range []struct {
			name    string
			queries []string
		}{{"zipf", zipfQueries}, {"common", common}} {
			b.Run(fmt.Sprintf("docs=%d/q=%s", n, qs.name), func(b *testing.B) {
				b.ReportAllocs()
				i := 0
				for b.Loop() {
					if _, err := x.Search(qs.queries[i%len(qs.queries)], k, nil); err != nil {
						b.Fatal(err)
					}
					i++
				}
				b.ReportMetric(heapPerDoc, "heapB/doc")
			})
		}
		runtime.KeepAlive(x)
	}
}

// benchWord spells r as syllables of letters ("bak", "dimo"), so that the
// stemmer sees word-like input and the analyzer keeps each as one word.
func benchWord(r uint64) string {
	const cons, vows = "bdfgklmnprstvz", "aeiou"
	var sb strings.Builder
	for {
		sb.WriteByte(cons[r%uint64(len(cons))])
		r /= uint64(len(cons))
		sb.WriteByte(vows[r%uint64(len(vows))])
		r /= uint64(len(vows))
		if r == 0 {
			break
		}
	}
	sb.WriteByte('x') // no stop word, and a consonant ending the stemmer keeps
	return sb.String()
}

func ExampleBM25() {
	x := NewBM25(nil)
	x.Add(1, "The customer asked about account 3942.")
	x.Add(2, "Refunds for account 3943 were issued.")
	x.Add(3, "The customer prefers email.")
	hits, err := x.Search("customer account 3942", 2, nil)
	if err != nil {
		panic(err)
	}
	for _, h := range hits {
		fmt.Printf("%d %.3f\n", h.ID, h.Score)
	}
	// Output:
	// 1 1.852
	// 3 0.508
}

// BenchmarkBM25LongQuery searches with a query of 20,000 distinct terms
// (a long text given as a query): the cost must grow with the query's
// length, not its square.
func BenchmarkBM25LongQuery(b *testing.B) {
	x := NewBM25(nil)
	rng := rand.New(rand.NewPCG(1, 2))
	word := func(i int) string { return fmt.Sprintf("w%05d", i) }
	for d := range 2000 {
		var sb strings.Builder
		for range 20 {
			sb.WriteString(word(rng.IntN(20000)) + " ")
		}
		x.Add(uint64(d+1), sb.String())
	}
	terms := make([]string, 20000)
	wts := make([]WeightedTerm, 20000)
	for i := range terms {
		terms[i] = word(i)
		wts[i] = WeightedTerm{Term: word(i), Weight: 1}
	}
	b.Run("terms", func(b *testing.B) {
		for b.Loop() {
			if _, err := x.SearchTerms(terms, 10, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("weighted", func(b *testing.B) {
		for b.Loop() {
			if _, err := x.SearchWeighted(wts, 10, nil); err != nil {
				b.Fatal(err)
			}
		}
	})
}
