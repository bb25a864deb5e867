package bench

import (
	"context"
	"fmt"
	"math"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/viterin/vek/vek32"
)

// GroundTruth returns, for every query, the ids (indexes into base) of its
// depth nearest base vectors by cosine similarity, nearest first; equal
// similarities are ordered by smaller id. It is exact: every query is
// compared with every base vector, on all cores (GOMAXPROCS goroutines, one
// query at a time each). Vectors need not be normalised, but must be
// non-zero and of one dimension; it returns [ErrInvalidDataset] otherwise,
// or for a depth outside [1, len(base)], and ctx's error if ctx ends first.
//
// Similarities are float32 dot products with the base vectors' inverse
// norms applied (the query's norm does not change its ranking), through
// vek32's AVX2 kernel where the CPU has one.
func GroundTruth(ctx context.Context, base, queries [][]float32, depth int) ([][]int, error) {
	if len(base) == 0 || depth < 1 || depth > len(base) {
		return nil, fmt.Errorf("ground truth: depth %d for %d base vectors: %w", depth, len(base), ErrInvalidDataset)
	}
	dim := len(base[0])
	inv := make([]float32, len(base))
	for i, v := range base {
		if len(v) != dim || dim == 0 {
			return nil, fmt.Errorf("ground truth: base vector %d has dimension %d, want %d: %w", i, len(v), dim, ErrInvalidDataset)
		}
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if s == 0 || math.IsNaN(s) || math.IsInf(s, 0) {
			return nil, fmt.Errorf("ground truth: base vector %d is zero or not finite: %w", i, ErrInvalidDataset)
		}
		inv[i] = float32(1 / math.Sqrt(s))
	}
	for i, q := range queries {
		if len(q) != dim {
			return nil, fmt.Errorf("ground truth: query %d has dimension %d, want %d: %w", i, len(q), dim, ErrInvalidDataset)
		}
	}

	out := make([][]int, len(queries))
	flat := make([]int, len(queries)*depth)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range min(runtime.GOMAXPROCS(0), max(len(queries), 1)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			h := make(scoreHeap, 0, depth)
			for {
				qi := int(next.Add(1) - 1)
				if qi >= len(queries) || ctx.Err() != nil {
					return
				}
				q := queries[qi]
				h = h[:0]
				for id, b := range base {
					s := vek32.Dot(q, b) * inv[id]
					if len(h) < depth {
						h.push(scored{s, id})
					} else if worse(h[0], scored{s, id}) {
						h[0] = scored{s, id}
						h.down(0)
					}
				}
				row := flat[qi*depth : (qi+1)*depth : (qi+1)*depth]
				for i := len(h) - 1; i >= 0; i-- { // pop worst first, fill from the back
					row[i] = h[0].id
					h.pop()
				}
				out[qi] = row
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("ground truth: %w", err)
	}
	return out, nil
}

type scored struct {
	score float32
	id    int
}

// worse reports whether a ranks below b: lower similarity, or equal
// similarity and a larger id.
func worse(a, b scored) bool {
	return a.score < b.score || (a.score == b.score && a.id > b.id)
}

// scoreHeap is a min-heap whose root is the worst kept neighbour.
type scoreHeap []scored

func (h *scoreHeap) push(s scored) {
	*h = append(*h, s)
	for i := len(*h) - 1; i > 0; {
		p := (i - 1) / 2
		if !worse((*h)[i], (*h)[p]) {
			break
		}
		(*h)[i], (*h)[p] = (*h)[p], (*h)[i]
		i = p
	}
}

func (h *scoreHeap) pop() {
	n := len(*h) - 1
	(*h)[0] = (*h)[n]
	*h = (*h)[:n]
	h.down(0)
}

func (h scoreHeap) down(i int) {
	for {
		l := 2*i + 1
		if l >= len(h) {
			return
		}
		m := l
		if r := l + 1; r < len(h) && worse(h[r], h[l]) {
			m = r
		}
		if !worse(h[m], h[i]) {
			return
		}
		h[i], h[m] = h[m], h[i]
		i = m
	}
}
