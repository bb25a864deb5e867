package index

import (
	"fmt"
	"math"
	"math/rand"
	"slices"
	"testing"
)

// refTopK is the reference: sort everything, keep the first k.
func refTopK(rs []Result, k int) []Result {
	all := slices.Clone(rs)
	slices.SortFunc(all, compareResults)
	return all[:min(max(k, 0), len(all))]
}

// TestTopKAgainstSort pushes random scores, drawn from a small set so that
// ties are common, and compares with a full sort.
func TestTopKAgainstSort(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	tk := newTopK(0)
	for iter := 0; iter < 2000; iter++ {
		n := rng.Intn(200)
		k := rng.Intn(25) - 2 // includes k <= 0
		levels := 1 + rng.Intn(20)
		rs := make([]Result, n)
		perm := rng.Perm(n) // distinct ids, in random order
		for i := range rs {
			rs[i] = Result{ID: uint64(perm[i]) * 3, Score: float32(rng.Intn(levels)) / float32(levels)}
		}
		tk.reset(k) // reused across iterations, as a scan's scratch is
		for _, r := range rs {
			tk.push(r.ID, r.Score)
		}
		got := tk.appendSorted(nil)
		want := refTopK(rs, k)
		if !slices.Equal(got, want) {
			t.Fatalf("iter %d n=%d k=%d:\n got %v\nwant %v", iter, n, k, got, want)
		}
		if tk.len() != len(want) {
			t.Fatalf("len() = %d, want %d", tk.len(), len(want))
		}
	}
}

// TestTopKWorstSkip checks the contract a scan relies on: when full, a
// score strictly below worst() never enters, so skipping the push changes
// nothing.
func TestTopKWorstSkip(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for iter := 0; iter < 500; iter++ {
		k := 1 + rng.Intn(10)
		a, b := newTopK(k), newTopK(k)
		var rs []Result
		for id := uint64(0); id < 100; id++ {
			s := float32(rng.Intn(8))
			rs = append(rs, Result{ID: id, Score: s})
			a.push(id, s)
			if thr, full := b.worst(); full && s < thr {
				continue
			}
			b.push(id, s)
		}
		ga, gb := a.appendSorted(nil), b.appendSorted(nil)
		if !slices.Equal(ga, gb) || !slices.Equal(ga, refTopK(rs, k)) {
			t.Fatalf("iter %d: push-all %v, skipping %v, want %v", iter, ga, gb, refTopK(rs, k))
		}
	}
}

func TestTopKEdges(t *testing.T) {
	nan := float32(math.NaN())
	tests := []struct {
		name   string
		k      int
		pushes []Result
		want   []Result
		full   bool
	}{
		{"k=0 keeps nothing", 0, []Result{{1, 1}}, nil, true},
		{"negative k", -3, []Result{{1, 1}}, nil, true},
		{"empty", 3, nil, nil, false},
		{"fewer than k", 3, []Result{{2, 0.5}, {1, 0.9}}, []Result{{1, 0.9}, {2, 0.5}}, false},
		{"NaN ignored", 2, []Result{{1, nan}, {2, 0.1}}, []Result{{2, 0.1}}, false},
		{"tie keeps smaller id", 1, []Result{{9, 0.5}, {3, 0.5}, {7, 0.5}}, []Result{{3, 0.5}}, true},
		{"tie does not evict smaller id", 1, []Result{{3, 0.5}, {9, 0.5}}, []Result{{3, 0.5}}, true},
		{"negative scores", 2, []Result{{1, -0.9}, {2, -0.1}, {3, -0.5}}, []Result{{2, -0.1}, {3, -0.5}}, true},
		{"infinities", 2, []Result{{1, float32(math.Inf(-1))}, {2, float32(math.Inf(1))}, {3, 0}}, []Result{{2, float32(math.Inf(1))}, {3, 0}}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tk := newTopK(tt.k)
			for _, r := range tt.pushes {
				tk.push(r.ID, r.Score)
			}
			if got := tk.appendSorted(nil); !slices.Equal(got, tt.want) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
			if _, full := tk.worst(); full != tt.full {
				t.Fatalf("full = %v, want %v", full, tt.full)
			}
		})
	}
}

func TestTopKAppendSortedKeepsDstAndState(t *testing.T) {
	tk := newTopK(2)
	tk.push(1, 0.1)
	tk.push(2, 0.2)
	dst := []Result{{ID: 99, Score: 9}}
	got := tk.appendSorted(dst)
	want := []Result{{99, 9}, {2, 0.2}, {1, 0.1}}
	if !slices.Equal(got, want) {
		t.Fatalf("got %v, want %v", got, want)
	}
	// The collector is unchanged and keeps collecting.
	tk.push(3, 0.15)
	if got := tk.appendSorted(nil); !slices.Equal(got, []Result{{2, 0.2}, {3, 0.15}}) {
		t.Fatalf("after more pushes: %v", got)
	}
	if !tk.has(3) || tk.has(1) {
		t.Fatalf("has: 3 kept, 1 evicted; got has(3)=%v has(1)=%v", tk.has(3), tk.has(1))
	}
}

func TestTopKPushDoesNotAllocate(t *testing.T) {
	tk := newTopK(10)
	rng := rand.New(rand.NewSource(7))
	scores := make([]float32, 1000)
	for i := range scores {
		scores[i] = rng.Float32()
	}
	allocs := testing.AllocsPerRun(100, func() {
		tk.reset(10)
		for i, s := range scores {
			tk.push(uint64(i), s)
		}
	})
	if allocs != 0 {
		t.Fatalf("%v allocations per run, want 0", allocs)
	}
}

func BenchmarkTopKPush(b *testing.B) {
	rng := rand.New(rand.NewSource(8))
	scores := make([]float32, 1<<16)
	for i := range scores {
		scores[i] = rng.Float32()
	}
	for _, k := range []int{10, 100} {
		b.Run(fmt.Sprintf("k=%d", k), func(b *testing.B) {
			b.ReportAllocs()
			tk := newTopK(k)
			i := 0
			for b.Loop() {
				if i&(len(scores)-1) == 0 {
					tk.reset(k)
				}
				tk.push(uint64(i), scores[i&(len(scores)-1)])
				i++
			}
		})
	}
}
