package memory

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/index"
)

// refRankFacts is rankFacts as it was written first, the model the faster
// one must agree with: every fact analyzed joined, steps sorted in place.
func refRankFacts(steps []graph.Step, terms map[string]bool) (matched, other []rankedStep) {
	var buf []string
	for i := range steps {
		st := &steps[i]
		r := rankedStep{Step: st}
		if len(terms) > 0 {
			buf = index.AppendTerms(buf[:0], st.Subject+" "+strings.ReplaceAll(st.Predicate, "_", " ")+" "+st.Object)
			seen := map[string]bool{}
			for _, t := range buf {
				if terms[t] && !seen[t] {
					seen[t] = true
					r.matches++
				}
			}
		}
		r.score = float64(r.matches) + 1/float64(1+st.Hops)
		if len(terms) > 0 && r.matches == 0 {
			other = append(other, r)
		} else {
			matched = append(matched, r)
		}
	}
	order := func(a, b rankedStep) int {
		if a.matches != b.matches {
			return b.matches - a.matches
		}
		if a.Hops != b.Hops {
			return a.Hops - b.Hops
		}
		return b.ValidFrom.Compare(a.ValidFrom)
	}
	slices.SortStableFunc(matched, order)
	slices.SortStableFunc(other, order)
	return matched, other
}

// TestRankFactsModel checks rankFacts against refRankFacts on random walks:
// names and predicates from a small stock (with joiners, underscores,
// upper case, accents and stop words), duplicate ValidFrom times and hops,
// and queries of none, a few and more than 64 terms.
func TestRankFactsModel(t *testing.T) {
	stock := []string{"Dana", "alice", "renewal_owner", "works_at", "Acme Corp", "Lisbon", "entity-12", "entity-3",
		"the", "of", "meeting", "meetings", "Zoë", "café", "e.g.", "budget", "x_y_z", "Crème brûlée", "3942", "renewal",
		"owner", "a'b", "hotel", "flight_to", "Porto", "über", "日本語"}
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	r := rand.New(rand.NewPCG(7, 7))
	shared := &nameSet{}
	for trial := range 300 {
		n := r.IntN(60)
		steps := make([]graph.Step, n)
		for i := range steps {
			steps[i] = graph.Step{Fact: graph.Fact{
				ID:        fmt.Sprint("f", i),
				Subject:   stock[r.IntN(len(stock))],
				Predicate: stock[r.IntN(len(stock))],
				Object:    stock[r.IntN(len(stock))],
				ValidFrom: base.Add(time.Duration(r.IntN(5)) * time.Hour).Add(time.Duration(r.IntN(3))),
			}, Hops: 1 + r.IntN(3)}
		}
		terms := map[string]bool{}
		switch trial % 3 {
		case 1:
			for range 1 + r.IntN(4) {
				for _, term := range index.Analyze(stock[r.IntN(len(stock))]) {
					terms[term] = true
				}
			}
		case 2:
			for i := range 70 {
				terms[fmt.Sprint("filler", i)] = true
			}
			for _, term := range index.Analyze(strings.Join(stock, " ")) {
				if r.IntN(2) == 0 {
					terms[term] = true
				}
			}
		}
		ns := shared // caches the analysis across trials, as across queries
		if trial%2 == 0 {
			ns = nil
		}
		gotM, gotO := rankFacts(steps, terms, ns)
		wantM, wantO := refRankFacts(steps, terms)
		if !reflect.DeepEqual(gotM, wantM) || !reflect.DeepEqual(gotO, wantO) {
			t.Fatalf("trial %d, terms %v:\nmatched %v\nwant    %v\nother %v\nwant  %v", trial, terms, gotM, wantM, gotO, wantO)
		}
	}
}
