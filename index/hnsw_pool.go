package index

import "sync/atomic"

// poolEntry is one node of a search's candidate pool: its distance to the
// query, and whether its neighbour list has been expanded.
type poolEntry struct {
	d    float32
	id   uint32
	done bool
}

// searchPool is searchLayer's beam search without a filter or deleted
// nodes, on one sorted array instead of two heaps (the pool of NSG and
// DiskANN): the ef nearest nodes seen so far, nearest first, each marked
// once expanded. It expands the nearest unexpanded node until none is
// left. The heap form pops the nearest unexpanded candidate and stops when
// it is farther than the ef-th nearest seen; every candidate it expands is
// so among the ef nearest seen, which is the pool's rule, so both walk the
// same nodes and keep the same results (up to the order of equal
// distances). The heaps were a quarter of a siftsmall query at ef 24, and
// the pool needs no drain at the end. The caller holds mu for reading and
// has checked that no node is deleted. With quant, nodes are scored
// against their int8 copies (the distances returned are those).
func (h *HNSW) searchPool(s *searchScratch, q []float32, entries []cand, ef, l int, quant bool) []cand {
	s.visit.reset(h.nodes) // capacity: nodes published during the walk fit
	pool := s.pool[:0]
	for _, e := range entries {
		if s.visit.visit(e.id) {
			continue
		}
		if len(pool) < ef || e.d < pool[len(pool)-1].d {
			pool, _ = poolInsert(pool, ef, poolEntry{d: e.d, id: e.id})
		}
	}
	for cur := 0; cur < len(pool); {
		c := pool[cur].id
		pool[cur].done = true
		if next := nextUndone(pool, cur+1); next < len(pool) {
			// Usually the next expanded: start loading its list while this
			// one's neighbours are scored.
			prefetchList(&h.list(pool[next].id, l)[0])
		}
		batch, dists := h.scoreUnvisited(s, q, c, l, quant)
		low := len(pool)
		for j, nb := range batch {
			d := -dists[j]
			if len(pool) == ef && !(d < pool[ef-1].d) {
				continue
			}
			var pos int
			pool, pos = poolInsert(pool, ef, poolEntry{d: d, id: nb})
			low = min(low, pos)
		}
		// pool[:cur+1] is expanded; a node inserted at or before cur is
		// the nearest unexpanded one.
		if low <= cur {
			cur = low
		} else {
			cur = nextUndone(pool, cur+1)
		}
	}
	s.pool = pool
	s.out = s.out[:0]
	for _, e := range pool {
		s.out = append(s.out, cand{e.d, e.id})
	}
	return s.out
}

// poolInsert inserts e into pool (sorted by distance, at most ef long)
// after every entry not farther, dropping the farthest when pool is full,
// and returns the pool and e's position. The caller has checked that e is
// nearer than the farthest of a full pool.
func poolInsert(pool []poolEntry, ef int, e poolEntry) ([]poolEntry, int) {
	// Insertion sort from the far end: one mispredicted branch, where a
	// binary search over a few dozen entries mispredicts at every step
	// (it took a fifth of a siftsmall query).
	i := len(pool)
	if i < ef {
		pool = append(pool, e)
	} else {
		i--
	}
	for i > 0 && pool[i-1].d > e.d {
		pool[i] = pool[i-1]
		i--
	}
	pool[i] = e
	return pool, i
}

// nextUndone returns the index of the first unexpanded entry of pool at or
// after i, or len(pool).
func nextUndone(pool []poolEntry, i int) int {
	for i < len(pool) && pool[i].done {
		i++
	}
	return i
}

// searchQ8 is Search's layer-0 walk when the index keeps int8 copies: the
// walk from ep (the pool, or the heaps when there is a filter or a deleted
// node) scores the int8 copies, then the ef nodes found are re-scored
// with the float vectors and the k nearest returned, so scores are exact.
// A filtered walk that finds fewer than k matches falls back to the exact
// scan, as in Search. The caller holds mu for reading.
func (h *HNSW) searchQ8(s *searchScratch, q []float32, k, ef int, ep uint32, filter Filter) []Result {
	s.batch = append(s.batch[:0], ep)
	s.dists = append(s.dists[:0], 0)
	dotBatchQ8(q, h.q8, s.batch, h.q8scale, s.dists)
	s.entries = append(s.entries[:0], cand{-s.dists[0], ep})
	var found []cand
	if filter == nil && !h.anyDeleted {
		found = h.searchPool(s, q, s.entries, ef, 0, true)
	} else {
		found = h.searchHeaps(s, q, s.entries, ef, 0, filter, true)
		if filter != nil && len(found) < k {
			return h.exact(s, q, k, filter)
		}
	}
	ids := s.batch[:0]
	for _, c := range found {
		ids = append(ids, c.id)
	}
	dists := append(s.dists[:0], make([]float32, len(ids))...)
	dotBatch(q, h.vecs, ids, dists)
	s.batch, s.dists = ids, dists
	for i := range found {
		found[i].d = -dists[i]
	}
	sortCandsSmall(found)
	out := make([]Result, 0, min(k, len(found)))
	for _, c := range found[:min(k, len(found))] {
		out = append(out, Result{ID: h.ids[c.id], Score: -c.d})
	}
	return out
}

// sortCandsSmall sorts a few dozen candidates nearest first, ties by node,
// by insertion: the re-scored pool is nearly sorted already.
func sortCandsSmall(c []cand) {
	for i := 1; i < len(c); i++ {
		x := c[i]
		j := i
		for j > 0 && (c[j-1].d > x.d || c[j-1].d == x.d && c[j-1].id > x.id) {
			c[j] = c[j-1]
			j--
		}
		c[j] = x
	}
}

// unvisited marks the ids of lst visited and returns those that were not,
// in s.batch, with s.dists resized to match (contents undefined), for a
// dotBatch. It writes every id and advances past the new ones without a
// branch on the visited test, which mispredicts about every other id.
func (s *searchScratch) unvisited(lst []uint32) ([]uint32, []float32) {
	if cap(s.batch) < len(lst) {
		s.batch = make([]uint32, len(lst))
	}
	if cap(s.dists) < len(lst) {
		s.dists = make([]float32, len(lst))
	}
	batch := s.batch[:len(lst)]
	marks, tag := s.visit.marks, s.visit.tag
	n := 0
	for j := range lst {
		nb := atomic.LoadUint32(&lst[j])
		seen := marks[nb] == tag
		marks[nb] = tag
		batch[n] = nb
		if !seen {
			n++
		}
	}
	return batch[:n], s.dists[:n]
}
