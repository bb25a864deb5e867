package index

import (
	"cmp"
	"math"
	"slices"
)

// topK collects the k best results of a scan: highest Score first, ties
// broken by smaller ID, so that equal scores come back in the same order on
// every run.
//
// It is a binary min-heap keyed on the worst kept result, so the root is the
// result the next better candidate evicts. A scan asks worst() for the
// threshold and skips the push (and, for a filter-free index, nothing else)
// when a score is strictly below it. Pushes never allocate after newTopK or
// reset: the heap's backing array has capacity k from the start.
//
// The zero value holds k = 0 and accepts nothing; use newTopK. A topK is not
// safe for concurrent use.
type topK struct {
	k    int
	heap []Result // heap[0] is the worst kept result; len(heap) <= k
}

// newTopK returns a collector for the k best results. A negative k is
// treated as 0, which keeps nothing.
func newTopK(k int) *topK {
	t := &topK{}
	t.reset(k)
	return t
}

// reset empties the collector and sets its bound to k (negative means 0),
// reusing the backing array when it is large enough.
func (t *topK) reset(k int) {
	k = max(k, 0)
	t.k = k
	if cap(t.heap) < k {
		t.heap = make([]Result, 0, k)
	}
	t.heap = t.heap[:0]
}

// len returns how many results are kept, at most k.
func (t *topK) len() int { return len(t.heap) }

// worst returns the score a candidate must reach to be kept, and whether the
// collector is full. While it is not full every candidate is kept and the
// score is meaningless. When full, a candidate scoring strictly below the
// score is rejected by push; one scoring equal to it is kept only if its ID
// is smaller than the worst kept result's. With k = 0 it reports (+Inf,
// true), so a scan skips everything.
func (t *topK) worst() (float32, bool) {
	if len(t.heap) < t.k {
		return float32(math.Inf(-1)), false
	}
	if t.k == 0 {
		return float32(math.Inf(1)), true
	}
	return t.heap[0].Score, true
}

// push offers one candidate. NaN scores are ignored, since they have no
// place in the order. The collector does not look for duplicate ids: a
// caller that may offer an id twice checks has first.
func (t *topK) push(id uint64, score float32) {
	if score != score { // NaN
		return
	}
	r := Result{ID: id, Score: score}
	if len(t.heap) < t.k {
		t.heap = append(t.heap, r)
		t.up(len(t.heap) - 1)
		return
	}
	if t.k == 0 || !worse(t.heap[0], r) {
		return
	}
	t.heap[0] = r
	t.down(0)
}

// has reports whether a result with the given id is kept. It is a linear
// scan, O(k); callers use it only for candidates that would enter.
func (t *topK) has(id uint64) bool {
	for _, r := range t.heap {
		if r.ID == id {
			return true
		}
	}
	return false
}

// appendSorted appends the kept results to dst, best first (Score
// descending, then ID ascending), and returns the extended slice. It leaves
// the collector unchanged and allocates only if dst lacks capacity.
func (t *topK) appendSorted(dst []Result) []Result {
	n := len(dst)
	dst = append(dst, t.heap...)
	slices.SortFunc(dst[n:], compareResults)
	return dst
}

// compareResults orders results best first: higher Score, then smaller ID.
func compareResults(a, b Result) int {
	if c := cmp.Compare(b.Score, a.Score); c != 0 {
		return c
	}
	return cmp.Compare(a.ID, b.ID)
}

// worse reports whether a ranks below b: a lower score, or an equal score
// and a larger id. Scores are never NaN here (push drops them).
func worse(a, b Result) bool {
	if a.Score != b.Score {
		return a.Score < b.Score
	}
	return a.ID > b.ID
}

// up restores the heap property from index i towards the root.
func (t *topK) up(i int) {
	h := t.heap
	r := h[i]
	for i > 0 {
		p := (i - 1) / 2
		if !worse(r, h[p]) {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = r
}

// down restores the heap property from index i towards the leaves.
func (t *topK) down(i int) {
	h := t.heap
	n := len(h)
	r := h[i]
	for {
		c := 2*i + 1
		if c >= n {
			break
		}
		if c+1 < n && worse(h[c+1], h[c]) {
			c++
		}
		if !worse(h[c], r) {
			break
		}
		h[i] = h[c]
		i = c
	}
	h[i] = r
}

// minHeap and maxHeap are the HNSW search's candidate queue and bounded
// result list, over cand (hnsw.go).
//
// minHeap pops the nearest candidate first. It and maxHeap are two typed
// copies on purpose: a generic heap with a comparison function puts an
// indirect call on the search's hottest path.
type minHeap []cand

// The sifts move a hole rather than swapping: each step copies one element
// instead of two, with the same comparisons and so the same heap as the
// swapping form (the heaps were a quarter of a siftsmall query, issue 15).

func (hp *minHeap) push(c cand) {
	h := append(*hp, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].d <= c.d {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = c
	*hp = h
}

func (hp *minHeap) pop() cand {
	h := *hp
	top := h[0]
	n := len(h) - 1
	x := h[n]
	h = h[:n]
	*hp = h
	if n == 0 {
		return top
	}
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].d < h[l].d {
			m = r
		}
		if !(h[m].d < x.d) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
	return top
}

// maxHeap keeps the farthest candidate on top, to bound a result list.
type maxHeap []cand

func (hp maxHeap) top() cand { return hp[0] }

func (hp *maxHeap) push(c cand) {
	h := append(*hp, c)
	i := len(h) - 1
	for i > 0 {
		p := (i - 1) / 2
		if h[p].d >= c.d {
			break
		}
		h[i] = h[p]
		i = p
	}
	h[i] = c
	*hp = h
}

func (hp *maxHeap) pop() cand {
	h := *hp
	top := h[0]
	last := len(h) - 1
	x := h[last]
	*hp = h[:last]
	if last > 0 {
		hp.siftDown(x)
	}
	return top
}

// replaceTop replaces the farthest candidate with c in one sift.
func (hp *maxHeap) replaceTop(c cand) { hp.siftDown(c) }

// siftDown places x, which replaces the top, on its way down.
func (hp *maxHeap) siftDown(x cand) {
	h := *hp
	n := len(h)
	i := 0
	for {
		l := 2*i + 1
		if l >= n {
			break
		}
		m := l
		if r := l + 1; r < n && h[r].d > h[l].d {
			m = r
		}
		if !(h[m].d > x.d) {
			break
		}
		h[i] = h[m]
		i = m
	}
	h[i] = x
}
