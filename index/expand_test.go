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
// terms, each once at the weight of its count (the multiset Analyze
// gives), synonyms at a lower weight times their word's count, and an
// expanded word in the group of its synonyms.
func TestExpandQueryTerms(t *testing.T) {
	for _, q := range []string{
		"Alice drives a red car",
		"What automobile does she own? The doctor bought it.",
		"car car automobile",
		"car drives car",
		"",
		"the",
		"日本の車",
		"Straße 42 ÉCOLE",
	} {
		wts, err := ExpandQuery(q)
		if err != nil {
			t.Fatal(err)
		}
		analyzed := Analyze(q)
		var own []string
		groups := map[uint32]int{}
		seen := map[WeightedTerm]bool{}
		for _, w := range wts {
			if key := (WeightedTerm{Term: w.Term, Group: w.Group}); seen[key] {
				t.Errorf("%q: %q twice in group %d", q, w.Term, w.Group)
			} else {
				seen[key] = true
			}
			if slices.Contains(analyzed, w.Term) {
				if w.Weight < 1 || w.Weight != math.Trunc(w.Weight) {
					t.Errorf("%q: own term %q of weight %v", q, w.Term, w.Weight)
				}
				for range int(w.Weight) {
					own = append(own, w.Term)
				}
			} else {
				switch n := w.Weight / synonymWeight; {
				case n < 1 || n != math.Trunc(n):
					t.Errorf("%q: synonym %q of weight %v", q, w.Term, w.Weight)
				case w.Group == 0:
					t.Errorf("%q: synonym %q in group 0", q, w.Term)
				}
			}
			if w.Group != 0 {
				groups[w.Group]++
			}
		}
		slices.Sort(own)
		if want := slices.Sorted(slices.Values(analyzed)); !slices.Equal(own, want) {
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

// TestExpandQueryRepeats: a word said many times is looked up once, and
// its group carries the repeats in its weights. With one group per
// occurrence, a 100 KB query took a second to expand (quadratic) and
// its search scanned the postings once per occurrence. The ranking is the
// same as with one group per occurrence.
func TestExpandQueryRepeats(t *testing.T) {
	one, err := ExpandQuery("automobile")
	if err != nil {
		t.Fatal(err)
	}
	const n = 1000
	many, err := ExpandQuery(strings.Repeat("automobile ", n))
	if err != nil {
		t.Fatal(err)
	}
	if len(many) != len(one) {
		t.Fatalf("%d repeats give %d terms, one gives %d", n, len(many), len(one))
	}
	for i := range one {
		if many[i].Term != one[i].Term || many[i].Group != one[i].Group || many[i].Weight != n*one[i].Weight {
			t.Fatalf("term %d: %+v, want %+v with %d times its weight", i, many[i], one[i], n)
		}
	}

	// The same scores as one group per occurrence (the old expansion).
	x := NewBM25(nil)
	x.Add(1, "Alice drives a red car")
	x.Add(2, "Bob sold his automobile, a car")
	x.Add(3, "the automobile was parked in the garage overnight")
	x.Add(4, "Alice walks")
	got, err := ExpandQuery("Alice automobile automobile")
	if err != nil {
		t.Fatal(err)
	}
	var old []WeightedTerm
	old = append(old, WeightedTerm{Term: "alic", Weight: 1})
	for occ := range 2 {
		for _, w := range one {
			w.Group += uint32(occ) * 100
			old = append(old, w)
		}
	}
	a, _ := x.SearchWeighted(got, 10, nil)
	b, _ := x.SearchWeighted(old, 10, nil)
	if len(a) != len(b) {
		t.Fatalf("merged %v, per occurrence %v", a, b)
	}
	for i := range a {
		if a[i].ID != b[i].ID || !near(a[i].Score, b[i].Score) {
			t.Fatalf("merged %v, per occurrence %v", a, b)
		}
	}
}

// TestExpandQueryBounded: a query expands at most maxExpandWords distinct
// words, however many it holds; the others keep their own terms.
func TestExpandQueryBounded(t *testing.T) {
	words := strings.Fields(`car doctor buy house child road city money movie song job kid
		dog boss home film trip gift shop store begin start talk speak walk help
		jump run eat drink sleep cook clean wash fix build break choose close
		open pay sell send show teach tell think write read learn leave lose make
		meet move need pick play put rest ride rise sing sit stand stay stop
		study swim take throw travel try turn visit wait want watch wear win
		work worry boat bike plane train ship bus truck van coat shirt shoe hat
		bag box cup dish knife fork spoon table chair sofa bed lamp door window
		wall floor roof garden street town country nation world sea lake river
		boy girl man woman friend wife husband mother father son daughter baby
		teacher student lawyer nurse cop police soldier king queen party meeting
		game match team club church school college class lesson exam test book
		story letter note paper picture photo camera phone computer screen music
		band concert idea plan problem answer question reason chance choice
		fight war peace love fear hope anger joy`)
	expandable := 0
	for _, w := range words {
		if len(expansionsOf(t, w)) > 0 {
			expandable++
		}
	}
	if expandable <= maxExpandWords {
		t.Fatalf("only %d of the words expand: the test needs more than %d", expandable, maxExpandWords)
	}
	wts, err := ExpandQuery(strings.Repeat(strings.Join(words, " ")+" ", 20))
	if err != nil {
		t.Fatal(err)
	}
	groups := map[uint32]bool{}
	for _, w := range wts {
		if w.Group != 0 {
			groups[w.Group] = true
		}
	}
	if len(groups) == 0 || len(groups) > maxExpandWords {
		t.Fatalf("%d groups, want 1 to %d", len(groups), maxExpandWords)
	}
}
