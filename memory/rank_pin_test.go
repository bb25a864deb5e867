package memory

import (
	"math"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestFusionHalfLife pins the decay: a score halves with each half-life
// of age (2^(-age/HalfLife), not e^(-age/HalfLife)), and an item with no
// time or from the future keeps its score.
func TestFusionHalfLife(t *testing.T) {
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	const hl = 7 * 24 * time.Hour
	ages := map[string]time.Duration{"half": hl / 2, "one": hl, "two": 2 * hl, "ten": 10 * hl, "future": -hl}
	want := map[string]float64{"half": math.Sqrt(0.5), "one": 0.5, "two": 0.25, "ten": 1.0 / 1024, "future": 1, "timeless": 1}
	f := newFusion()
	defer f.release()
	for id, age := range ages {
		// Each first in a list of its own: undecayed, each scores 1/(k+1).
		f.addHits("list-"+id, SourceMemories, []engine.Hit{{Record: engine.Record{ID: id, Text: id, Time: now.Add(-age)}}})
	}
	f.addHits("list-timeless", SourceMemories, []engine.Hit{{Record: engine.Record{ID: "timeless", Text: "timeless"}}})
	for _, c := range f.rank(&Query{Now: now, HalfLife: hl}, nil) {
		if got, w := c.Fused*(rrfK+1), want[c.ID]; math.Abs(got-w) > 1e-12 {
			t.Errorf("%s: score %v of the undecayed one, want %v", c.ID, got, w)
		}
	}
}

// TestMMRLambda pins λ in MMR at values other than 0.5 (where λ and 1−λ
// are alike): with λ = 0.8 relevance leads and a near-duplicate of the
// first pick comes second; with λ = 0.2 novelty leads and it comes last.
func TestMMRLambda(t *testing.T) {
	cands := func() []*Candidate {
		return []*Candidate{
			{ID: "a", Fused: 1.0, vector: []float32{1, 0}},
			{ID: "a-again", Fused: 0.9, vector: []float32{1, 0.01}},
			{ID: "other", Fused: 0.5, vector: []float32{0, 1}},
		}
	}
	for _, c := range []struct {
		lambda float64
		want   []string
	}{
		// a-again: 0.8·0.9 − 0.2·1 = 0.52 beats other: 0.8·0.5 = 0.4.
		{0.8, []string{"a", "a-again", "other"}},
		// a-again: 0.2·0.9 − 0.8·1 = −0.62 loses to other: 0.2·0.5 = 0.1.
		{0.2, []string{"a", "other", "a-again"}},
		// Pure relevance: the fused order.
		{1, []string{"a", "a-again", "other"}},
	} {
		var got []string
		for _, p := range mmrPick(cands(), c.lambda) {
			got = append(got, p.ID)
		}
		if !slices.Equal(got, c.want) {
			t.Errorf("λ = %v: picked %v, want %v", c.lambda, got, c.want)
		}
	}
}

// TestRecallMMRLambda: through Recall, MMR with λ near 1 keeps the
// relevance order (the near-duplicate stays, as without MMR), and with
// λ near 0 brings in the different memory (TestRecallMMR checks 0.5).
func TestRecallMMRLambda(t *testing.T) {
	s := openMem(t, &Options{DedupThreshold: -1})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip budget is 2000 euros for flights and hotel"})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip budget is 2000 euros for flights and the hotel"})
	mustRemember(t, s, alice, Memory{Text: "The Lisbon trip starts on May 3"})
	for _, c := range []struct {
		lambda float64
		may3   bool
	}{{0.99, false}, {0.05, true}} {
		rec, err := s.Recall(bg, Query{Scope: alice, Text: "Lisbon trip budget 2000 euros flights hotel", TopK: 2, MMR: c.lambda})
		if err != nil {
			t.Fatal(err)
		}
		has := slices.ContainsFunc(rec.Items, func(it Item) bool { return strings.Contains(it.Text, "May 3") })
		if has != c.may3 {
			t.Errorf("λ = %v: items %+v; want the May 3 memory among them: %v", c.lambda, rec.Items, c.may3)
		}
	}
}
