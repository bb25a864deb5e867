package index

import (
	"math/rand/v2"
	"slices"
	"testing"
)

// TestCandHeapsModel checks minHeap and maxHeap against a sorted slice
// each, under random pushes, pops and replaceTop calls, with many equal
// distances so ties are exercised.
func TestCandHeapsModel(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 4))
	for round := range 200 {
		var lo minHeap
		var hi maxHeap
		var loModel, hiModel []float32 // kept sorted ascending
		insert := func(m []float32, d float32) []float32 {
			i, _ := slices.BinarySearch(m, d)
			return slices.Insert(m, i, d)
		}
		for step := range 300 {
			d := float32(rng.IntN(20)) / 4
			switch op := rng.IntN(4); {
			case op < 2:
				lo.push(cand{d, uint32(step)})
				hi.push(cand{d, uint32(step)})
				loModel, hiModel = insert(loModel, d), insert(hiModel, d)
			case op == 2 && len(loModel) > 0:
				if got := lo.pop().d; got != loModel[0] {
					t.Fatalf("round %d step %d: minHeap.pop = %v, want %v", round, step, got, loModel[0])
				}
				loModel = loModel[1:]
				last := len(hiModel) - 1
				if got := hi.pop().d; got != hiModel[last] {
					t.Fatalf("round %d step %d: maxHeap.pop = %v, want %v", round, step, got, hiModel[last])
				}
				hiModel = hiModel[:last]
			case op == 3 && len(hiModel) > 0:
				last := len(hiModel) - 1
				if got := hi.top().d; got != hiModel[last] {
					t.Fatalf("round %d step %d: maxHeap.top = %v, want %v", round, step, got, hiModel[last])
				}
				hi.replaceTop(cand{d, uint32(step)})
				hiModel = insert(hiModel[:last], d)
			}
			if len(lo) != len(loModel) || len(hi) != len(hiModel) {
				t.Fatalf("round %d step %d: sizes %d, %d, want %d, %d", round, step, len(lo), len(hi), len(loModel), len(hiModel))
			}
		}
		for i, want := range loModel {
			if got := lo.pop().d; got != want {
				t.Fatalf("round %d: drain minHeap[%d] = %v, want %v", round, i, got, want)
			}
		}
		for i := len(hiModel) - 1; i >= 0; i-- {
			if got := hi.pop().d; got != hiModel[i] {
				t.Fatalf("round %d: drain maxHeap = %v, want %v", round, got, hiModel[i])
			}
		}
	}
}
