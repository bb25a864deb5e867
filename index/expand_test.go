package index

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
)

// expansionsOf returns the expansion terms (weight below 1) of query.
func expansionsOf(t *testing.T, query string) []string {
	t.Helper()
	wts, err := ExpandQuery(query)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, w := range wts {
		if w.Weight < 1 {
			out = append(out, w.Term)
		}
	}
	return out
}

func TestExpandQuerySynonyms(t *testing.T) {
	for _, c := range []struct {
		query string
		want  []string // analyzed terms among the expansions
	}{
		{"car", []string{"automobil", "auto"}},
		{"automobile", []string{"car"}},
		{"cars", []string{"automobil"}},
		{"buy", []string{"purchas"}},
		{"purchase", []string{"buy"}},
		{"bought", []string{"purchas"}},
		{"doctor", []string{"physician"}},
		{"physician", []string{"doctor"}},
		{"What automobile does she own?", []string{"car"}},
		{"Doctors say so.", []string{"physician"}}, // capital at the start of a sentence
		{"He left. Doctors came.", []string{"physician"}},
	} {
		got := expansionsOf(t, c.query)
		for _, w := range c.want {
			if !slices.Contains(got, w) {
				t.Errorf("%q expands to %q, want %q among them", c.query, got, w)
			}
		}
	}
}

func TestExpandQueryNot(t *testing.T) {
	for _, c := range []struct {
		query string
		not   []string // must not be among the expansions; nil: no expansion at all
	}{
		{"it", nil},
		{"the of and it is", nil},
		{"42 1,000 v1.2 user_id", nil},
		{"with Will and Bill", nil}, // names mid-sentence
		{"I met Will", []string{"volit", "testament"}},
		{"and Mark", nil},     // a name mid-sentence
		{"Will you?", nil},    // a modal, even at the start
		{"can may must", nil}, // modals
		{"NASA", nil},         // an acronym
		{"café", nil},         // not ASCII
		{"ox", nil},           // too short
		{"car", []string{"gondola", "railcar", "machin", "car"}}, // rare senses; the word itself
		{"doctor", []string{"dr", "medic"}},                      // "Dr." is multiword-free but "medic" is another synset
		{"buy", []string{"bargain", "steal"}},                    // the noun "a good buy" is rare
	} {
		got := expansionsOf(t, c.query)
		if c.not == nil && len(got) > 0 {
			t.Errorf("%q expands to %q, want nothing", c.query, got)
		}
		for _, w := range c.not {
			if slices.Contains(got, w) {
				t.Errorf("%q expands to %q, must not hold %q", c.query, got, w)
			}
		}
	}
}

// TestExpandQueryTerms checks the weights and groups: the query's own
// terms at weight 1 in the order Analyze gives them, synonyms at a lower
// weight, and an expanded word in the group of its synonyms.
func TestExpandQueryTerms(t *testing.T) {
	for _, q := range []string{
		"Alice drives a red car",
		"What automobile does she own? The doctor bought it.",
		"car car automobile",
		"",
		"the",
		"日本の車",
		"Straße 42 ÉCOLE",
	} {
		wts, err := ExpandQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		var own []string
		groups := map[uint32]int{}
		for _, w := range wts {
			switch {
			case w.Weight == 1:
				own = append(own, w.Term)
			case w.Weight != synonymWeight:
				t.Errorf("%q: weight %v", q, w.Weight)
			case w.Group == 0:
				t.Errorf("%q: synonym %q in group 0", q, w.Term)
			case slices.Contains(Analyze(q), w.Term):
				t.Errorf("%q: synonym %q is a term of the query", q, w.Term)
			}
			if w.Group != 0 {
				groups[w.Group]++
			}
		}
		if want := Analyze(q); !slices.Equal(own, want) {
			t.Errorf("%q: own terms %q, Analyze gives %q", q, own, want)
		}
		for g, n := range groups {
			if n < 2 {
				t.Errorf("%q: group %d has one term", q, g)
			}
		}
	}
	if wts, err := ExpandQuery("the"); wts != nil || err != nil {
		t.Errorf("stop words only: %v, %v", wts, err)
	}
}

func TestSearchWeighted(t *testing.T) {
	x := NewBM25(nil)
	x.Add(1, "Alice drives a red car")
	x.Add(2, "Bob sold his automobile")
	x.Add(3, "the car and the automobile were parked in the garage overnight")
	x.Add(4, "nothing to see")
	wts, err := ExpandQuery("automobile")
	if err != nil {
		t.Fatal(err)
	}
	res, err := x.SearchWeighted(wts, 10, nil)
	if err != nil {
		t.Fatal(err)
	}
	ids := make([]uint64, len(res))
	for i, r := range res {
		ids[i] = r.ID
	}
	// 3 holds the word and a synonym, but they count once: the word's score
	// there is below its score in the shorter 2, which holds the word alone.
	if !slices.Equal(ids, []uint64{2, 3, 1}) {
		t.Fatalf("automobile: %v", res)
	}
	plain, _ := x.SearchTerms([]string{"automobil"}, 10, nil)
	if len(plain) != 2 || plain[0].Score != res[0].Score || plain[1].Score != res[1].Score {
		t.Errorf("a group counts its best term once: plain %v, weighted %v", plain, res)
	}
	one, _ := x.SearchTerms([]string{"car"}, 10, nil)
	if one[0].ID != 1 || !near(res[2].Score, one[0].Score*float32(synonymWeight)) {
		t.Errorf("a synonym alone scores at its weight: %v against %v", res[2], one)
	}

	// Filter and k.
	res, _ = x.SearchWeighted(wts, 1, &SearchOptions{Filter: func(id uint64) bool { return id != 2 }})
	if len(res) != 1 || res[0].ID != 3 {
		t.Errorf("filtered top 1: %v", res)
	}
	if res, err := x.SearchWeighted(wts, 0, nil); res != nil || err != nil {
		t.Errorf("k 0: %v %v", res, err)
	}
	for _, w := range []float64{0, -1, math.Inf(1), math.NaN()} {
		if _, err := x.SearchWeighted([]WeightedTerm{{Term: "car", Weight: w}}, 5, nil); err == nil {
			t.Errorf("weight %v: no error", w)
		}
	}
	if res, err := NewBM25(nil).SearchWeighted(wts, 5, nil); res != nil || err != nil {
		t.Errorf("empty index: %v %v", res, err)
	}
}

func near(a, b float32) bool { return a-b < 1e-5 && b-a < 1e-5 }

// TestSearchWeightedModel checks SearchWeighted against SearchTerms (at
// weight 1, group 0, they rank alike bit for bit) and against a
// brute-force scorer for random weights and groups.
func TestSearchWeightedModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	x := NewBM25(nil)
	m := newBM25Model(BM25Options{K1: defaultK1, B: defaultB})
	for id := range uint64(300) {
		terms := randTerms(rng, rng.IntN(15))
		x.AddTerms(id, terms)
		m.docs[id] = terms
		if id%7 == 0 {
			x.Delete(id / 2)
			delete(m.docs, id/2)
		}
	}
	for i := range 300 {
		query := randTerms(rng, 1+rng.IntN(6))
		k := 1 + rng.IntN(20)
		plain := make([]WeightedTerm, len(query))
		for j, q := range query {
			plain[j] = WeightedTerm{Term: q, Weight: 1}
		}
		a, _ := x.SearchTerms(query, k, nil)
		b, _ := x.SearchWeighted(plain, k, nil)
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("query %q: SearchTerms %v, SearchWeighted %v", query, a, b)
		}

		wq := make([]WeightedTerm, len(query))
		for j, q := range query {
			wq[j] = WeightedTerm{Term: q, Weight: 0.1 + rng.Float64(), Group: uint32(rng.IntN(3))}
		}
		got, _ := x.SearchWeighted(wq, k, nil)
		want := m.weighted(wq)
		if len(got) != min(k, len(want)) {
			t.Fatalf("%d: query %v: %d results, model has %d", i, wq, len(got), len(want))
		}
		for j, r := range got {
			if !near(r.Score, float32(want[r.ID])) {
				t.Fatalf("%d: query %v: doc %d scores %v, model %v", i, wq, r.ID, r.Score, want[r.ID])
			}
			if j > 0 && r.Score > got[j-1].Score {
				t.Fatalf("results out of order: %v", got)
			}
		}
	}
}

// weighted scores every live document for wq by brute force: group 0
// terms add, other groups count their best term.
func (m *bm25Model) weighted(wq []WeightedTerm) map[uint64]float64 {
	out := map[uint64]float64{}
	best := map[uint64]map[uint32]float64{}
	for _, w := range wq {
		for id, s := range m.score([]string{w.Term}) {
			s *= w.Weight
			if w.Group == 0 {
				out[id] += s
				continue
			}
			if best[id] == nil {
				best[id] = map[uint32]float64{}
			}
			best[id][w.Group] = max(best[id][w.Group], s)
		}
	}
	for id, g := range best {
		for _, s := range g {
			out[id] += s
		}
	}
	return out
}

// commonWords are everyday nouns and verbs, for a benchmark whose queries
// WordNet can expand.
var commonWords = strings.Fields(`car house doctor buy money friend school work job
family child dog cat food dinner movie book music song game team city trip
travel vacation beach mountain garden paint picture photo class teacher
student letter phone computer store shop market price gift party wedding
birthday church hospital nurse lawyer office meeting plan idea problem
answer question story news paper river lake forest road street bike boat
plane train ticket hotel room kitchen bed chair table window door drive
walk run swim read write cook eat drink sleep learn teach speak talk call
meet visit help start finish open close build fix clean wash`)

// BenchmarkBM25Synonyms measures a top-10 BM25 search of 4-word queries
// of everyday words over 10,000 short documents, with and without
// synonym expansion (ExpandQuery and SearchWeighted against Search; both
// include analyzing the query).
func BenchmarkBM25Synonyms(b *testing.B) {
	rng := rand.New(rand.NewPCG(3, 4))
	zipf := rand.NewZipf(rand.New(rand.NewPCG(5, 6)), 1.07, 50, 20000)
	x := NewBM25(nil)
	for id := range uint64(10000) {
		var sb strings.Builder
		for i := range 10 + rng.IntN(21) {
			if i > 0 {
				sb.WriteByte(' ')
			}
			if rng.IntN(4) == 0 {
				sb.WriteString(commonWords[rng.IntN(len(commonWords))])
			} else {
				sb.WriteString(benchWord(zipf.Uint64()))
			}
		}
		x.Add(id, sb.String())
	}
	queries := make([]string, 64)
	for i := range queries {
		w := make([]string, 4)
		for j := range w {
			w[j] = commonWords[rng.IntN(len(commonWords))]
		}
		queries[i] = strings.Join(w, " ")
	}
	if _, err := ExpandQuery("load"); err != nil {
		b.Fatal(err)
	}
	for _, mode := range []string{"plain", "expanded"} {
		b.Run(fmt.Sprintf("synonyms=%s", mode), func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			for b.Loop() {
				q := queries[i%len(queries)]
				i++
				if mode == "plain" {
					if _, err := x.Search(q, 10, nil); err != nil {
						b.Fatal(err)
					}
					continue
				}
				wts, err := ExpandQuery(q)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := x.SearchWeighted(wts, 10, nil); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// FuzzExpandQuery checks that any text expands without error, that the
// terms of weight 1 are Analyze's, and that every weight is one
// SearchWeighted takes.
func FuzzExpandQuery(f *testing.F) {
	for _, s := range []string{"What automobile does she own?", "Will Bill buy a car?", "Ａｕｔｏ ŉ 42", "Doctor's cars. Mice!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, q string) {
		wts, err := ExpandQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		var own []string
		for _, w := range wts {
			if !(w.Weight > 0 && w.Weight <= 1) {
				t.Fatalf("weight %v", w.Weight)
			}
			if w.Weight == 1 {
				own = append(own, w.Term)
			}
		}
		if want := Analyze(q); !slices.Equal(own, want) {
			t.Fatalf("own terms %q, Analyze gives %q", own, want)
		}
	})
}
