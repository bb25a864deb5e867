package index

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"sync/atomic"
	"unsafe"
)

// HNSW defaults, the values hnswlib's documentation and the paper's
// experiments settle on for recall above 0.95 on typical embeddings.
const (
	DefaultM              = 16
	DefaultEfConstruction = 200
	DefaultEfSearch       = 64
)

// maxLevel caps the layer count: with M=16 the chance that a node reaches
// level 16 is 16^-16, so the cap never binds in practice and keeps a level
// in one byte.
const maxLevel = 16

// HNSWOptions configures an [HNSW]. A nil *HNSWOptions and every zero field
// mean the documented default.
type HNSWOptions struct {
	// M is the number of neighbours a node keeps on the upper layers; layer
	// 0 keeps 2·M. Zero means [DefaultM] (16). Memory per vector grows by
	// about 8·M bytes.
	M int
	// EfConstruction is the candidate-list size while inserting. Zero means
	// [DefaultEfConstruction] (200). Higher builds a better graph, slower.
	EfConstruction int
	// EfSearch is the default candidate-list size of a search; a search's
	// own SearchOptions.Ef overrides it. Zero means [DefaultEfSearch] (64).
	EfSearch int
	// Seed seeds the level generator, so a single-goroutine build of the
	// same input gives the same graph.
	Seed uint64
}

func (o *HNSWOptions) withDefaults() HNSWOptions {
	var out HNSWOptions
	if o != nil {
		out = *o
	}
	if out.M == 0 {
		out.M = DefaultM
	}
	if out.EfConstruction == 0 {
		out.EfConstruction = DefaultEfConstruction
	}
	if out.EfSearch == 0 {
		out.EfSearch = DefaultEfSearch
	}
	return out
}

func (o *HNSWOptions) validate(dim int) error {
	var errs []error
	if dim < 1 || dim > MaxDim {
		errs = append(errs, fmt.Errorf("dimension %d is outside [1, %d]", dim, MaxDim))
	}
	if o.M < 2 || o.M > 256 {
		errs = append(errs, fmt.Errorf("M %d is outside [2, 256]", o.M))
	}
	if o.EfConstruction < 1 || o.EfConstruction > 1<<16 {
		errs = append(errs, fmt.Errorf("EfConstruction %d is outside [1, 65536]", o.EfConstruction))
	}
	if o.EfSearch < 1 || o.EfSearch > 1<<16 {
		errs = append(errs, fmt.Errorf("EfSearch %d is outside [1, 65536]", o.EfSearch))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

// Validate reports why [NewHNSW] would refuse these options at every
// dimension, or nil; zero fields mean the defaults, as there. A caller that
// builds indexes later (package engine, at a partition's first vector)
// checks its options up front with it. Errors wrap [ErrInvalidOptions].
func (o *HNSWOptions) Validate() error {
	w := o.withDefaults()
	return w.validate(1) // 1 is inside [1, MaxDim]: only the options are judged
}

// MaxDim is the largest vector dimension an index accepts.
const MaxDim = 1 << 16

// HNSW is an approximate nearest-neighbour index over cosine similarity:
// the hierarchical navigable small-world graph of Malkov and Yashunin (2018),
// with the paper's heuristic neighbour selection.
//
// Layout: vectors live in one contiguous slab, normalised on insert; layer-0
// neighbour lists live in a second slab with a fixed stride (a count and 2·M
// slots), and only the few nodes above layer 0 (about 1/M of them) have
// upper-layer lists. Visited sets are reused across searches. Where the
// CPU allows (see the quant field), a third slab holds int8 copies of the
// vectors for the searches' layer-0 walk. An unfiltered search over an
// index without deleted nodes keeps its candidates in one sorted pool
// (hnsw_pool.go); others use two heaps.
//
// Concurrency: HNSW is safe for concurrent use. Searches and inserts run in
// parallel: each holds a read lock on the index for its whole walk and locks
// one neighbour list at a time (striped mutexes, never two at once, so no
// lock order can deadlock). Reserving a slot for a new vector, Delete, and a
// change of entry point take the write lock briefly. A parallel build is
// several goroutines calling Add.
//
// Deletion marks the node deleted and repairs its neighbours' lists from
// its own; the node stays in the graph as a waypoint and is never returned.
// Its memory is reclaimed only by rebuilding the index.
type HNSW struct {
	dim            int
	m, m0          int
	efConstruction int
	efSearch       int
	levelMult      float64
	seed           uint64

	// mu: write-held to grow the slabs, to delete, and to move the entry
	// point; read-held by every search and insert walk, so no slab header
	// changes under a reader.
	mu sync.RWMutex
	// alloc serializes reserving slots and changes to byID. It is taken
	// only while holding mu (in either mode), never the other way round.
	alloc sync.Mutex

	rng  *rand.Rand    // under alloc
	n    atomic.Uint32 // nodes published; slot i < n is fully written
	live atomic.Int64  // nodes not deleted
	// anyDeleted is set, under mu write-held, when a node is first marked
	// deleted (by Delete, a replacing Add, or Decode), and never cleared: a
	// search reads it once under the read lock, and while it is false skips
	// the per-node deleted check, a cache miss on the deleted slab for
	// every candidate kept (3% of a siftsmall query, issue 15).
	anyDeleted bool
	nodes      int // slab capacity in nodes (the slabs' full length)
	// Slabs have full length; node i's entries are written once, by the
	// goroutine that reserved slot i, before n is raised past i.
	vecs    []float32 // nodes·dim, node i at [i·dim, (i+1)·dim)
	ids     []uint64
	levels  []uint8
	deleted []uint32 // 1 = deleted; atomic
	indeg   []int32  // layer-0 links into each node; atomic
	links0  []uint32 // nodes·(m0+1): count, then neighbours
	// quant: searches walk layer 0 on int8 copies of the
	// vectors (q8, nodes·dim, node i's scale in q8scale[i]) and re-scores
	// the ef nodes it keeps with vecs (distance_q8.go). Set at creation
	// when the CPU has the int8 kernel and dim is a multiple of 16; the
	// copies are derived, never encoded.
	quant   bool
	q8      []int8
	q8scale []float32
	// Upper-layer lists of node i (layers 1..level, m+1 slots each) start
	// at upperOff[i] in upper; level-0 nodes, most of them, have none.
	upperOff  []uint32
	upper     []uint32
	upperUsed int               // under alloc
	byID      map[uint64]uint32 // under alloc, or mu write-held
	entry     uint32            // entry, top, hasEntry: under mu
	top       int               // level of entry
	hasEntry  bool

	// linkLocks guard neighbour lists: list of node i under
	// linkLocks[i % len(linkLocks)].
	linkLocks [1024]sync.Mutex

	scratch sync.Pool // *searchScratch

	// testExactMatches overrides filterExactMatches in tests (-1 means 0).
	testExactMatches int
}

// NewHNSW returns an empty index of dim-dimensional vectors. A nil opts
// means defaults. It returns [ErrInvalidOptions] for a bad dimension or
// option.
func NewHNSW(dim int, opts *HNSWOptions) (*HNSW, error) {
	o := opts.withDefaults()
	if err := o.validate(dim); err != nil {
		return nil, err
	}
	return newHNSW(dim, o), nil
}

func newHNSW(dim int, o HNSWOptions) *HNSW {
	return &HNSW{
		dim:            dim,
		m:              o.M,
		m0:             2 * o.M,
		efConstruction: o.EfConstruction,
		efSearch:       o.EfSearch,
		levelMult:      1 / math.Log(float64(o.M)),
		seed:           o.Seed,
		rng:            rand.New(rand.NewPCG(o.Seed, 0x9e3779b97f4a7c15)),
		byID:           map[uint64]uint32{},
		quant:          dim%16 == 0 && hasQ8Kernel(),
	}
}

// Dim returns the vector dimension.
func (h *HNSW) Dim() int { return h.dim }

// Len returns the number of vectors that can be returned (deleted ones
// excluded).
func (h *HNSW) Len() int { return int(h.live.Load()) }

// Options returns the options the index was built with.
func (h *HNSW) Options() HNSWOptions {
	return HNSWOptions{M: h.m, EfConstruction: h.efConstruction, EfSearch: h.efSearch, Seed: h.seed}
}

// Bytes returns the memory the index holds: slabs at their capacity, the
// id map at an estimated 48 bytes an entry, and upper-layer lists.
func (h *HNSW) Bytes() int64 {
	h.mu.RLock()
	defer h.mu.RUnlock()
	h.alloc.Lock()
	entries := len(h.byID)
	h.alloc.Unlock()
	b := int64(len(h.vecs))*4 + int64(len(h.ids))*8 + int64(len(h.levels)) +
		int64(len(h.deleted))*4 + int64(len(h.indeg))*4 + int64(len(h.links0))*4 + int64(len(h.upperOff))*4 +
		int64(len(h.upper))*4 + int64(entries)*mapEntryBytes +
		int64(len(h.q8)) + int64(len(h.q8scale))*4
	return b + int64(unsafe.Sizeof(*h))
}

// Deleted returns the number of deleted nodes still held by the graph: when
// it grows large against Len, rebuild the index to reclaim their memory.
func (h *HNSW) Deleted() int { return int(int64(h.n.Load()) - h.live.Load()) }

// vec returns node i's vector. The caller holds mu (either mode).
func (h *HNSW) vec(i uint32) []float32 {
	off := int(i) * h.dim
	return h.vecs[off : off+h.dim : off+h.dim]
}

// isDeleted reports whether node i is deleted.
func (h *HNSW) isDeleted(i uint32) bool { return atomic.LoadUint32(&h.deleted[i]) != 0 }

// list returns node i's neighbour list on layer l: element 0 is the count,
// then the neighbours. The caller holds mu and the node's link lock to read
// or write it.
func (h *HNSW) list(i uint32, l int) []uint32 {
	if l == 0 {
		off := int(i) * (h.m0 + 1)
		return h.links0[off : off+h.m0+1 : off+h.m0+1]
	}
	off := int(h.upperOff[i]) + (l-1)*(h.m+1)
	return h.upper[off : off+h.m+1 : off+h.m+1]
}

func (h *HNSW) maxLinks(l int) int {
	if l == 0 {
		return h.m0
	}
	return h.m
}

func (h *HNSW) linkLock(i uint32) *sync.Mutex { return &h.linkLocks[i%uint32(len(h.linkLocks))] }

// setList writes a list with atomic stores, for lock-free readers; the
// caller holds the list's link lock (or the write lock). Searches read
// lists without locking, with atomic loads: a reader may see a list half
// rewritten, which is harmless to a graph walk (as in hnswlib's queries),
// since every id ever stored is a published node. The neighbours
// are written before the count grows, so a reader never sees a count
// beyond the ids written.
func setList(lst []uint32, ids []cand) {
	if uint32(len(ids)) < lst[0] {
		atomic.StoreUint32(&lst[0], uint32(len(ids)))
	}
	for j, c := range ids {
		atomic.StoreUint32(&lst[1+j], c.id)
	}
	atomic.StoreUint32(&lst[0], uint32(len(ids)))
}

// Add inserts v under id, replacing the vector of an existing id. v is
// copied and normalised. It returns [ErrDimensionMismatch] for a vector of
// the wrong length and [ErrZeroVector] for one without direction; the index
// is unchanged then. Add is safe to call from many goroutines at once, and
// they insert in parallel.
func (h *HNSW) Add(id uint64, v []float32) error {
	if len(v) != h.dim {
		return fmt.Errorf("%w: got %d, index has %d", ErrDimensionMismatch, len(v), h.dim)
	}
	// Normalise before touching the index, so a bad vector leaves it (and
	// an existing vector under id) unchanged.
	nv, err := Normalize(make([]float32, 0, h.dim), v)
	if err != nil {
		return err
	}
	for {
		h.mu.RLock()
		node, st := h.reserve(id, nv)
		if st == reserved {
			if h.hasEntry {
				ep, top := h.entry, h.top
				level := int(h.levels[node])
				h.connect(node, level, ep, top)
				h.mu.RUnlock()
				if level > top {
					h.raiseEntry(node, level)
				}
				return nil
			}
			h.mu.RUnlock()
			h.mu.Lock()
			if !h.hasEntry {
				// The first node: nothing to link to.
				h.entry, h.top, h.hasEntry = node, int(h.levels[node]), true
				h.mu.Unlock()
				return nil
			}
			h.mu.Unlock()
			// Another node became the entry meanwhile: link to it.
			h.mu.RLock()
			level := int(h.levels[node])
			ep, top := h.entry, h.top
			h.connect(node, level, ep, top)
			h.mu.RUnlock()
			if level > top {
				h.raiseEntry(node, level)
			}
			return nil
		}
		h.mu.RUnlock()
		// Slow path, rare: the slabs are full, or id must be replaced.
		h.mu.Lock()
		switch st {
		case full:
			if h.nodes == math.MaxUint32 {
				h.mu.Unlock()
				return fmt.Errorf("%w: index is full", ErrInvalidOptions)
			}
			h.growLocked()
		case exists:
			if old, ok := h.byID[id]; ok {
				h.deleteLocked(old)
			}
		}
		h.mu.Unlock()
	}
}

// raiseEntry makes node the entry point if its level tops the graph's.
func (h *HNSW) raiseEntry(node uint32, level int) {
	h.mu.Lock()
	if level > h.top && !h.isDeleted(node) {
		h.entry, h.top = node, level
	}
	h.mu.Unlock()
}

type reserveStatus int

const (
	reserved reserveStatus = iota
	full                   // the slabs must grow first
	exists                 // id is present and must be deleted first
)

// reserve takes the next slot for id, draws its level and writes its
// vector, then publishes it by raising n. The caller holds mu for reading.
func (h *HNSW) reserve(id uint64, v []float32) (uint32, reserveStatus) {
	h.alloc.Lock()
	defer h.alloc.Unlock()
	if _, ok := h.byID[id]; ok {
		return 0, exists
	}
	i := h.n.Load()
	if int(i) >= h.nodes {
		return 0, full
	}
	level := min(int(-math.Log(1-h.rng.Float64())*h.levelMult), maxLevel)
	need := level * (h.m + 1)
	if h.upperUsed+need > len(h.upper) {
		return 0, full
	}
	copy(h.vec(i), v)
	if h.quant {
		off := int(i) * h.dim
		h.q8scale[i] = quantize8(h.q8[off:off+h.dim], v)
	}
	h.ids[i] = id
	h.levels[i] = uint8(level)
	h.deleted[i] = 0
	atomic.StoreInt32(&h.indeg[i], 0)
	clear(h.list(i, 0))
	h.upperOff[i] = uint32(h.upperUsed)
	clear(h.upper[h.upperUsed : h.upperUsed+need])
	h.upperUsed += need
	h.byID[id] = i
	h.live.Add(1)
	h.n.Store(i + 1)
	return i, reserved
}

// growLocked enlarges every slab by an eighth (at least 64 nodes). The
// slabs are most of the index's memory, and doubling would leave up to half
// of them idle: measured 1169 bytes a vector on siftsmall against 758 now.
// The caller holds mu for writing.
func (h *HNSW) growLocked() {
	n := h.nodes + max(h.nodes/8, 64)
	n = min(n, math.MaxUint32)
	h.vecs = grown(h.vecs, n*h.dim)
	h.ids = grown(h.ids, n)
	h.levels = grown(h.levels, n)
	h.deleted = grown(h.deleted, n)
	h.indeg = grown(h.indeg, n)
	h.links0 = grown(h.links0, n*(h.m0+1))
	h.upperOff = grown(h.upperOff, n)
	if h.quant {
		h.q8 = grown(h.q8, n*h.dim)
		h.q8scale = grown(h.q8scale, n)
	}
	// Upper lists: about one node in M-1 has any, with (m+1) slots a layer.
	want := h.upperUsed + max((n-h.nodes)*(h.m+1)/(h.m-1)*2, (maxLevel+1)*(h.m+1))
	h.upper = grown(h.upper, want)
	h.nodes = n
}

// grown returns s copied into a new slice of length n.
func grown[T any](s []T, n int) []T {
	out := make([]T, n)
	copy(out, s)
	return out
}

// connect links a new node into the graph: a greedy descent from the entry
// point to the node's level, then on each layer a beam search for its
// closest nodes, the heuristic selection of M of them, and the reverse
// links (shrinking any list that overflows). The caller holds mu for
// reading.
func (h *HNSW) connect(node uint32, level int, ep uint32, top int) {
	s := h.getScratch()
	defer h.scratch.Put(s)
	q := h.vec(node)
	cur, curD := ep, -dot(q, h.vec(ep))
	for l := top; l > level; l-- {
		cur, curD = h.greedy(s, q, cur, curD, l)
	}
	for l := min(level, top); l >= 0; l-- {
		s.entries = append(s.entries[:0], cand{curD, cur})
		found := h.searchLayer(s, q, s.entries, h.efConstruction, l, nil)
		// found is sorted nearest first.
		s.selected = h.selectNeighbours(s.selected[:0], found, h.m)
		mu := h.linkLock(node)
		mu.Lock()
		lst := h.list(node, l)
		if lst[0] == 0 {
			setList(lst, s.selected)
			if l == 0 {
				for _, c := range s.selected {
					atomic.AddInt32(&h.indeg[c.id], 1)
				}
			}
		} else {
			// A concurrent insert found this node through its upper layers
			// and linked to it already: merge, rather than overwrite its
			// link.
			nv := h.vec(node)
			pool := append(s.shrink[:0], s.selected...)
			for _, x := range lst[1 : 1+lst[0]] {
				if !containsCand(pool, x) {
					pool = append(pool, cand{-dot(nv, h.vec(x)), x})
				}
			}
			sortCands(pool)
			h.relink(s, lst, pool, l, math.MaxUint32)
		}
		mu.Unlock()
		for _, c := range s.selected {
			h.addLink(s, c.id, node, c.d, l)
		}
		if len(found) > 0 {
			cur, curD = found[0].id, found[0].d
		}
	}
}

// addLink adds node to the layer-l list of n (at distance d from it). When
// the list is full, the heuristic chooses which of the old neighbours and
// the new one to keep.
func (h *HNSW) addLink(s *searchScratch, n, node uint32, d float32, l int) {
	mu := h.linkLock(n)
	mu.Lock()
	defer mu.Unlock()
	lst := h.list(n, l)
	cnt := int(lst[0])
	for _, x := range lst[1 : 1+cnt] {
		if x == node {
			return
		}
	}
	if limit := h.maxLinks(l); cnt < limit {
		atomic.StoreUint32(&lst[1+cnt], node)
		atomic.StoreUint32(&lst[0], uint32(cnt+1))
		if l == 0 {
			atomic.AddInt32(&h.indeg[node], 1)
		}
		return
	}
	nv := h.vec(n)
	pool := append(s.shrink[:0], cand{d, node})
	for _, x := range lst[1 : 1+cnt] {
		pool = append(pool, cand{-dot(nv, h.vec(x)), x})
	}
	sortCands(pool)
	h.relink(s, lst, pool, l, node)
}

// relink replaces a list (under its lock) with the best of pool: the
// heuristic's choice, topped up with the nearest pruned candidates. On
// layer 0 it never drops a node this list is the only way into: such a
// node takes the place of the farthest kept node that has another in-link,
// so every node stays reachable. (Best effort under concurrent inserts: two
// lists dropping the same node at once can each believe the other keeps
// it.) added is a node in pool that is not yet linked from this list, or
// a value no node has.
func (h *HNSW) relink(s *searchScratch, lst []uint32, pool []cand, l int, added uint32) {
	m := h.maxLinks(l)
	keep := h.fillPruned(h.selectNeighbours(s.selected2[:0], pool, m), pool, m)
	if l == 0 {
		linked := func(id uint32) bool { // in the list before this change
			for _, x := range lst[1 : 1+lst[0]] {
				if x == id {
					return true
				}
			}
			return false
		}
		for _, c := range pool {
			if containsCand(keep, c.id) || h.isDeleted(c.id) {
				continue
			}
			// c is dropped: if this list is its only way in, swap it for
			// the farthest kept node with another in-link.
			only := linked(c.id) && atomic.LoadInt32(&h.indeg[c.id]) <= 1 ||
				c.id == added && atomic.LoadInt32(&h.indeg[c.id]) == 0
			if !only {
				continue
			}
			for j := len(keep) - 1; j >= 0; j-- {
				k := keep[j].id
				if linked(k) && atomic.LoadInt32(&h.indeg[k]) > 1 {
					keep[j] = c
					break
				}
			}
		}
		for _, x := range lst[1 : 1+lst[0]] {
			if !containsCand(keep, x) {
				atomic.AddInt32(&h.indeg[x], -1)
			}
		}
		for _, c := range keep {
			if !linked(c.id) {
				atomic.AddInt32(&h.indeg[c.id], 1)
			}
		}
	}
	setList(lst, keep)
	s.shrink, s.selected2 = pool, keep
}

func containsCand(cs []cand, id uint32) bool {
	for _, c := range cs {
		if c.id == id {
			return true
		}
	}
	return false
}

// fillPruned tops a shrunk list up to m with the nearest candidates the
// heuristic passed over (the paper's keepPrunedConnections). Without it a
// full list that overflows can shrink to a handful of links, and the nodes
// it dropped may lose their only way in: measured on 800 clustered 16-d
// vectors built by two goroutines, up to 4 of them were unreachable even at
// ef 800.
func (h *HNSW) fillPruned(kept, cands []cand, m int) []cand {
	if len(kept) >= m || len(kept) == len(cands) {
		return kept
	}
	chosen := len(kept)
	for _, c := range cands {
		if len(kept) == m {
			break
		}
		dup := false
		for _, k := range kept[:chosen] { // at most m, so a scan beats a map
			if k.id == c.id {
				dup = true
				break
			}
		}
		if !dup {
			kept = append(kept, c)
		}
	}
	return kept
}

// selectNeighbours is the paper's heuristic (Algorithm 4, as hnswlib
// implements it): walk the candidates nearest first and keep one only if it
// is closer to the base than to every neighbour kept so far, so the kept
// neighbours point in different directions. cands must be sorted nearest
// first; distances are to the base node.
func (h *HNSW) selectNeighbours(dst, cands []cand, m int) []cand {
	if len(cands) <= m {
		return append(dst, cands...)
	}
	for _, c := range cands {
		if len(dst) == m {
			break
		}
		cv := h.vec(c.id)
		good := true
		for _, r := range dst {
			if -dot(cv, h.vec(r.id)) < c.d {
				good = false
				break
			}
		}
		if good {
			dst = append(dst, c)
		}
	}
	return dst
}

// ConnectOrphans links every live node that has no incoming layer-0 link,
// which no search could reach, into the lists of its nearest reachable
// nodes, and returns how many it found. A single-goroutine build leaves
// none; concurrent inserts can, rarely (measured: 0 to 4 in 800 vectors
// built by two goroutines), so call it after a parallel build. It is safe
// to call while searches and inserts run.
func (h *HNSW) ConnectOrphans() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	if !h.hasEntry {
		return 0
	}
	s := h.getScratch()
	defer h.scratch.Put(s)
	found := 0
	for i, end := uint32(0), h.n.Load(); i < end; i++ {
		if i == h.entry || h.isDeleted(i) || atomic.LoadInt32(&h.indeg[i]) > 0 {
			continue
		}
		found++
		q := h.vec(i)
		cur, curD := h.entry, -dot(q, h.vec(h.entry))
		for l := h.top; l > 0; l-- {
			cur, curD = h.greedy(s, q, cur, curD, l)
		}
		s.entries = append(s.entries[:0], cand{curD, cur})
		near := h.searchLayer(s, q, s.entries, h.efConstruction, 0, nil)
		// s.out is reused by addLink's scratch below only via shrink and
		// selected2, so copying the few ids first is enough.
		s.selected = append(s.selected[:0], near...)
		for _, c := range s.selected {
			if c.id == i {
				continue
			}
			h.addLink(s, c.id, i, c.d, 0)
			if atomic.LoadInt32(&h.indeg[i]) > 0 {
				break
			}
		}
	}
	return found
}

// greedy walks layer l from cur to a local minimum of the distance to q.
func (h *HNSW) greedy(s *searchScratch, q []float32, cur uint32, curD float32, l int) (uint32, float32) {
	for changed := true; changed; {
		changed = false
		lst := h.list(cur, l)
		cnt := min(int(atomic.LoadUint32(&lst[0])), len(lst)-1)
		batch := s.batch[:0]
		for j := 1; j <= cnt; j++ {
			batch = append(batch, atomic.LoadUint32(&lst[j]))
		}
		dists := append(s.dists[:0], make([]float32, len(batch))...)
		dotBatch(q, h.vecs, batch, dists)
		s.batch, s.dists = batch, dists
		for j, nb := range batch {
			if d := -dists[j]; d < curD {
				cur, curD, changed = nb, d, true
			}
		}
	}
	return cur, curD
}

// searchLayer is the beam search of layer l from the entry candidates: it
// keeps the ef nearest accepted nodes found and returns them nearest first
// (in s.out, valid until the scratch is reused). Deleted nodes, and nodes
// the filter rejects, are walked through but never kept. The caller holds
// mu for reading.
func (h *HNSW) searchLayer(s *searchScratch, q []float32, entries []cand, ef, l int, filter Filter) []cand {
	if filter == nil && !h.anyDeleted {
		return h.searchPool(s, q, entries, ef, l, false)
	}
	return h.searchHeaps(s, q, entries, ef, l, filter, false)
}

// searchHeaps is searchLayer with a filter or deleted nodes: a min-heap of
// candidates to expand, of every node, and a max-heap of the ef nearest
// accepted nodes. With quant it scores the int8 copies, like searchPool.
func (h *HNSW) searchHeaps(s *searchScratch, q []float32, entries []cand, ef, l int, filter Filter, quant bool) []cand {
	s.visit.reset(h.nodes) // capacity: nodes published during the walk fit
	s.cands = s.cands[:0]
	s.res = s.res[:0]
	checkDeleted := h.anyDeleted
	for _, e := range entries {
		s.visit.visit(e.id)
		s.cands.push(e)
		if h.accepts(e.id, filter) {
			s.res.push(e)
		}
	}
	for len(s.cands) > 0 {
		c := s.cands.pop()
		if len(s.res) >= ef && c.d > s.res.top().d {
			break
		}
		if len(s.cands) > 0 {
			// The nearest candidate left is usually the next expanded:
			// start loading its list while this one's neighbours are
			// scored.
			prefetchList(&h.list(s.cands[0].id, l)[0])
		}
		batch, dists := h.scoreUnvisited(s, q, c.id, l, quant)
		for j, nb := range batch {
			d := -dists[j]
			if len(s.res) < ef || d < s.res.top().d {
				s.cands.push(cand{d, nb})
				ok := !checkDeleted || !h.isDeleted(nb)
				if ok && filter != nil {
					ok = filter(h.ids[nb])
				}
				if ok {
					if len(s.res) < ef {
						s.res.push(cand{d, nb})
					} else {
						s.res.replaceTop(cand{d, nb})
					}
				}
			}
		}
	}
	// Drain the max-heap farthest first into s.out, back to front.
	s.out = append(s.out[:0], make([]cand, len(s.res))...)
	for i := len(s.out) - 1; i >= 0; i-- {
		s.out[i] = s.res.pop()
	}
	return s.out
}

// accepts reports whether node i may be a result: not deleted, and passing
// the filter if there is one.
func (h *HNSW) accepts(i uint32, filter Filter) bool {
	return !h.isDeleted(i) && (filter == nil || filter(h.ids[i]))
}

// Filtered searches switch to an exact scan of the matching vectors when a
// sample of the index suggests few match: below filterExactFraction of the
// index, or filterExactMatches vectors, the graph walk would visit most of
// the index anyway (and the filtered graph may fall apart into islands),
// while the exact scan costs one filter call per vector and one dot product
// per match.
const (
	filterSample        = 256
	filterExactFraction = 0.02
	filterExactMatches  = 4096
)

// exactBelow returns the match count under which a filtered search scans
// exactly; tests lower it to exercise the filtered walk on small indexes.
func (h *HNSW) exactBelow() int {
	if h.testExactMatches != 0 {
		return max(h.testExactMatches, 0)
	}
	return filterExactMatches
}

// Search returns the k nearest vectors to q by cosine similarity, nearest
// first. opts.Ef sets the search breadth (default EfSearch, at least k);
// opts.Filter restricts the results, applied during the walk, and a
// selective filter switches to an exact scan of the matching vectors. It
// returns [ErrDimensionMismatch] for a query of the wrong length and
// [ErrZeroVector] for one without direction. Safe for concurrent use.
func (h *HNSW) Search(q []float32, k int, opts *SearchOptions) ([]Result, error) {
	if len(q) != h.dim {
		return nil, fmt.Errorf("%w: got %d, index has %d", ErrDimensionMismatch, len(q), h.dim)
	}
	if k <= 0 {
		return nil, nil
	}
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	ef := o.Ef
	if ef <= 0 {
		ef = h.efSearch
	}
	ef = max(ef, k)

	s := h.getScratch()
	defer h.scratch.Put(s)
	var err error
	if s.query, err = Normalize(s.query[:0], q); err != nil {
		return nil, err
	}
	qn := s.query

	h.mu.RLock()
	defer h.mu.RUnlock()
	if !h.hasEntry || h.live.Load() == 0 {
		return nil, nil
	}
	if o.Filter != nil && h.selective(o.Filter) {
		return h.exact(s, qn, k, o.Filter), nil
	}
	cur, curD := h.entry, -dot(qn, h.vec(h.entry))
	for l := h.top; l > 0; l-- {
		cur, curD = h.greedy(s, qn, cur, curD, l)
	}
	if h.quant {
		return h.searchQ8(s, qn, k, ef, cur, o.Filter), nil
	}
	s.entries = append(s.entries[:0], cand{curD, cur})
	found := h.searchLayer(s, qn, s.entries, ef, 0, o.Filter)
	if o.Filter != nil && len(found) < k {
		// The walk ran out of matching nodes before finding k: the exact
		// scan finds every match there is.
		return h.exact(s, qn, k, o.Filter), nil
	}
	out := make([]Result, 0, min(k, len(found)))
	for _, c := range found[:min(k, len(found))] {
		out = append(out, Result{ID: h.ids[c.id], Score: -c.d})
	}
	return out, nil
}

// selective estimates from an evenly spaced sample whether filter matches
// few enough vectors that an exact scan beats the graph walk.
func (h *HNSW) selective(filter Filter) bool {
	live, n := h.live.Load(), int(h.n.Load())
	if live <= int64(h.exactBelow()) {
		return true
	}
	step := max(n/filterSample, 1)
	seen, pass := 0, 0
	for i := 0; i < n && seen < filterSample; i += step {
		if h.isDeleted(uint32(i)) {
			continue
		}
		seen++
		if filter(h.ids[i]) {
			pass++
		}
	}
	if seen == 0 {
		return true
	}
	frac := float64(pass) / float64(seen)
	return frac < filterExactFraction || frac*float64(live) <= float64(h.exactBelow())
}

// exact scans every live node the filter accepts. The caller holds mu.
func (h *HNSW) exact(s *searchScratch, q []float32, k int, filter Filter) []Result {
	s.res = s.res[:0]
	for i, end := 0, int(h.n.Load()); i < end; i++ {
		n := uint32(i)
		if h.isDeleted(n) || (filter != nil && !filter(h.ids[n])) {
			continue
		}
		d := -dot(q, h.vec(n))
		if len(s.res) < k {
			s.res.push(cand{d, n})
		} else if d < s.res.top().d || (d == s.res.top().d && h.ids[n] < h.ids[s.res.top().id]) {
			s.res.replaceTop(cand{d, n})
		}
	}
	out := make([]Result, len(s.res))
	for i := len(out) - 1; i >= 0; i-- {
		c := s.res.pop()
		out[i] = Result{ID: h.ids[c.id], Score: -c.d}
	}
	return out
}

// Delete removes id from the results of later searches and repairs the
// graph around it: each neighbour that linked to it gets a new list chosen
// by the heuristic from its other neighbours and the deleted node's. It
// reports whether id was present. Delete takes the write lock, so it waits
// for running searches and inserts.
func (h *HNSW) Delete(id uint64) bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	node, ok := h.byID[id]
	if !ok {
		return false
	}
	h.deleteLocked(node)
	return true
}

func (h *HNSW) deleteLocked(node uint32) {
	delete(h.byID, h.ids[node])
	atomic.StoreUint32(&h.deleted[node], 1)
	h.anyDeleted = true
	h.live.Add(-1)
	s := h.getScratch()
	defer h.scratch.Put(s)
	for l := int(h.levels[node]); l >= 0; l-- {
		dl := h.list(node, l)
		own := append([]uint32(nil), dl[1:1+dl[0]]...)
		for _, n := range own {
			if !h.isDeleted(n) {
				h.repair(s, n, node, own, l)
			}
		}
	}
	if node == h.entry {
		h.pickEntryLocked()
	}
}

// repair removes the deleted node from n's layer-l list and refills the
// list from n's other neighbours and the deleted node's neighbours.
func (h *HNSW) repair(s *searchScratch, n, deleted uint32, theirs []uint32, l int) {
	lst := h.list(n, l)
	cnt := int(lst[0])
	found := false
	for _, x := range lst[1 : 1+cnt] {
		if x == deleted {
			found = true
			break
		}
	}
	if !found {
		return
	}
	nv := h.vec(n)
	pool := s.shrink[:0]
	seen := map[uint32]bool{n: true, deleted: true}
	for _, src := range [][]uint32{lst[1 : 1+cnt], theirs} {
		for _, x := range src {
			if seen[x] || h.isDeleted(x) || int(h.levels[x]) < l {
				continue
			}
			seen[x] = true
			pool = append(pool, cand{-dot(nv, h.vec(x)), x})
		}
	}
	sortCands(pool)
	h.relink(s, lst, pool, l, math.MaxUint32)
}

// pickEntryLocked makes the highest live node the entry point, or clears it
// when no node is live.
func (h *HNSW) pickEntryLocked() {
	h.hasEntry = false
	h.top = 0
	for i, end := 0, int(h.n.Load()); i < end; i++ {
		n := uint32(i)
		if h.isDeleted(n) {
			continue
		}
		if !h.hasEntry || int(h.levels[n]) > h.top {
			h.entry, h.top, h.hasEntry = n, int(h.levels[n]), true
		}
	}
}

// cand is a node and its distance (the negated cosine similarity) to the
// vector being searched for or linked.
type cand struct {
	d  float32
	id uint32
}

func sortCands(c []cand) {
	sort.Slice(c, func(i, j int) bool { return c[i].d < c[j].d || (c[i].d == c[j].d && c[i].id < c[j].id) })
}

// visitedSet marks visited nodes with a generation tag, so clearing it
// between searches is free until the tag wraps (hnswlib's VisitedList).
type visitedSet struct {
	marks []uint16
	tag   uint16
}

func (v *visitedSet) reset(n int) {
	if len(v.marks) < n {
		v.marks = make([]uint16, n+n/4+64)
		v.tag = 0
	}
	v.tag++
	if v.tag == 0 {
		clear(v.marks)
		v.tag = 1
	}
}

// visit marks i and reports whether it was already marked.
func (v *visitedSet) visit(i uint32) bool {
	if v.marks[i] == v.tag {
		return true
	}
	v.marks[i] = v.tag
	return false
}

// searchScratch holds the buffers of one search or insert, pooled so a
// search allocates only its result slice.
type searchScratch struct {
	visit     visitedSet
	cands     minHeap
	res       maxHeap
	out       []cand
	entries   []cand
	selected  []cand
	selected2 []cand
	shrink    []cand
	query     []float32
	pool      []poolEntry
	batch     []uint32  // a list's unvisited neighbours, for dotBatch
	dists     []float32 // their similarities to the query
}

func (h *HNSW) getScratch() *searchScratch {
	if s, ok := h.scratch.Get().(*searchScratch); ok {
		return s
	}
	return &searchScratch{}
}

// scoreUnvisited returns the neighbours of node c on layer l that the walk
// has not visited, marking them visited, and their similarities to q (of
// the int8 copies when quant). The list is read in place, atomically (see
// setList): copying the whole list under its lock first cost 13% of a
// siftsmall query. One batched call scores every new neighbour,
// prefetching each vector two products ahead; walking the ids in list
// order then has the same outcome as one product at a time.
func (h *HNSW) scoreUnvisited(s *searchScratch, q []float32, c uint32, l int, quant bool) ([]uint32, []float32) {
	lst := h.list(c, l)
	cnt := min(int(atomic.LoadUint32(&lst[0])), len(lst)-1)
	batch, dists := s.unvisited(lst[1 : 1+cnt])
	if quant {
		dotBatchQ8(q, h.q8, batch, h.q8scale, dists)
	} else {
		dotBatch(q, h.vecs, batch, dists)
	}
	return batch, dists
}
