package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestSearchPoolMatchesHeaps pins the pool search to the two-heap beam
// search it replaced for unfiltered walks: on every layer, from the same
// entry, both must return the same nodes at the same distances in the same
// order, at small and large ef. Equal distances are avoided by the random
// data, so the order is defined.
func TestSearchPoolMatchesHeaps(t *testing.T) {
	rng := rand.New(rand.NewPCG(9, 9))
	data := clustered(rng, 1500+60, 24, 12)
	h, _ := buildHNSW(t, data[:1500], &HNSWOptions{Seed: 3})
	s := h.getScratch()
	for qi, q := range data[1500:] {
		qn, err := Normalize(nil, q)
		if err != nil {
			t.Fatal(err)
		}
		for _, ef := range []int{1, 4, 10, 24, 100} {
			for l := h.top; l >= 0; l-- {
				e := uint32(rng.IntN(int(h.n.Load())))
				for int(h.levels[e]) < l {
					e = uint32(rng.IntN(int(h.n.Load())))
				}
				entries := []cand{{-dot(qn, h.vec(e)), e}}
				want := slices.Clone(h.searchHeaps(s, qn, entries, ef, l, nil, false))
				got := h.searchPool(s, qn, entries, ef, l, false)
				if !slices.Equal(got, want) {
					t.Fatalf("query %d ef %d layer %d: pool %v, heaps %v", qi, ef, l, got, want)
				}
			}
		}
	}
}

// TestPoolInsert checks the sorted pool against a model: inserts keep it
// sorted, equal distances go after the ones present, a full pool drops its
// farthest, and the returned position is where the entry landed.
func TestPoolInsert(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 6))
	for round := range 300 {
		ef := 1 + rng.IntN(12)
		var pool []poolEntry
		for step := range 60 {
			e := poolEntry{d: float32(rng.IntN(8)), id: uint32(step)}
			if len(pool) == ef && !(e.d < pool[ef-1].d) {
				continue
			}
			want := slices.Clone(pool)
			at := len(want)
			for i, x := range want {
				if x.d > e.d {
					at = i
					break
				}
			}
			want = slices.Insert(want, at, e)[:min(len(want)+1, ef)]
			var pos int
			pool, pos = poolInsert(pool, ef, e)
			if !slices.Equal(pool, want) || pos != at {
				t.Fatalf("round %d step %d: got %v at %d, want %v at %d", round, step, pool, pos, want, at)
			}
		}
	}
}
