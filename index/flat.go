package index

import (
	"errors"
	"fmt"
	"math"
	"sync"
)

// maxFlatLen is the most vectors a Flat holds: slots are int32 to halve the
// id map's values.
const maxFlatLen = math.MaxInt32

// errFlatFull is returned by [Flat.Add] when the index already holds
// maxFlatLen vectors. It is unexported because no caller can reach it in
// practice: maxFlatLen vectors take at least 24 GiB (ids and one dimension).
var errFlatFull = errors.New("index: flat index full")

// mapEntryBytes estimates the memory one entry of the id map costs: 12
// bytes of key and value padded to 16, plus a control byte, at a load
// factor of at most 7/8, in a table that doubles (so on average 3/4 full).
// Measured with runtime.MemStats (go1.26, amd64) over 1e3 to 1e6 entries:
// 23.6 to 37.7 bytes, depending on where n falls between doublings.
const mapEntryBytes = 32

// Flat is an exact vector index: a search compares the query with every
// stored vector. It is the index for small partitions, where a scan costs
// less than a graph (one dot product per vector and nothing to maintain),
// and [Flat.SearchIDs] is the exact fallback for filters that match few
// vectors.
//
// Vectors are normalised to unit length on entry and kept in one contiguous
// slab of float32, in slot order, with the ids in a parallel slice; a map
// finds the slot of an id. Delete moves the last vector into the freed slot,
// so the slab has no holes and a scan reads memory sequentially.
//
// Flat is safe for concurrent use: searches share a read lock and run in
// parallel; Add and Delete take the write lock.
type Flat struct {
	dim int // immutable after NewFlat

	// scratch holds per-search buffers (*flatScratch), so that a search
	// allocates only the slice it returns.
	scratch sync.Pool

	mu struct {
		sync.RWMutex
		vecs []float32        // len(ids)*dim; vector of slot i at [i*dim, (i+1)*dim)
		ids  []uint64         // id of slot i
		slot map[uint64]int32 // id -> slot
		buf  []float32        // Add's normalisation buffer, len dim
	}
}

// flatScratch is the per-search state Flat reuses through its pool.
type flatScratch struct {
	q  []float32
	tk topK
}

// NewFlat returns an empty exact index for vectors of dim dimensions. It
// returns [ErrInvalidOptions] unless 1 <= dim <= [MaxDim].
func NewFlat(dim int) (*Flat, error) {
	if dim < 1 || dim > MaxDim {
		return nil, fmt.Errorf("%w: dim %d not in [1, %d]", ErrInvalidOptions, dim, MaxDim)
	}
	f := &Flat{dim: dim}
	f.mu.slot = make(map[uint64]int32)
	f.mu.buf = make([]float32, 0, dim)
	f.scratch.New = func() any {
		return &flatScratch{q: make([]float32, 0, dim)}
	}
	return f, nil
}

// Dim returns the dimension of the vectors f holds.
func (f *Flat) Dim() int { return f.dim }

// Len returns the number of vectors in f.
func (f *Flat) Len() int {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return len(f.mu.ids)
}

// Add stores a unit-length copy of v under id, replacing the vector of an
// existing id. It returns [ErrDimensionMismatch] when len(v) != f.Dim() and
// [ErrZeroVector] for a vector with zero norm or a NaN or infinite
// component; on error f is unchanged. f keeps no reference to v.
func (f *Flat) Add(id uint64, v []float32) error {
	if len(v) != f.dim {
		return fmt.Errorf("flat add: %w: got %d, want %d", ErrDimensionMismatch, len(v), f.dim)
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	u, err := normalizeInto(f.mu.buf[:0], v)
	if err != nil {
		return fmt.Errorf("flat add: %w", err)
	}
	f.mu.buf = u
	if s, ok := f.mu.slot[id]; ok {
		off := int(s) * f.dim
		copy(f.mu.vecs[off:off+f.dim], u)
		return nil
	}
	if len(f.mu.ids) >= maxFlatLen {
		return fmt.Errorf("flat add: %w (%d vectors)", errFlatFull, len(f.mu.ids))
	}
	f.mu.slot[id] = int32(len(f.mu.ids))
	f.mu.ids = append(f.mu.ids, id)
	f.mu.vecs = append(f.mu.vecs, u...)
	return nil
}

// Delete removes the vector stored under id and reports whether there was
// one. It runs in amortised O(1): the last vector moves into the freed slot,
// and the storage shrinks when three quarters of it is unused.
func (f *Flat) Delete(id uint64) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	s, ok := f.mu.slot[id]
	if !ok {
		return false
	}
	delete(f.mu.slot, id)
	last := len(f.mu.ids) - 1
	if i := int(s); i != last {
		moved := f.mu.ids[last]
		f.mu.ids[i] = moved
		f.mu.slot[moved] = s
		copy(f.mu.vecs[i*f.dim:(i+1)*f.dim], f.mu.vecs[last*f.dim:])
	}
	f.mu.ids = f.mu.ids[:last]
	f.mu.vecs = f.mu.vecs[:last*f.dim]
	f.shrinkLocked()
	return true
}

// shrinkLocked releases storage after many deletes: when at most a quarter
// of the id slice's capacity is in use, the slab, ids and map are copied
// into storage half full, so an index that grew and was emptied does not
// hold its peak memory forever. Go maps never shrink, hence the rebuild.
// Copying n elements after at least 3n deletes keeps Delete amortised O(1).
func (f *Flat) shrinkLocked() {
	const minCap = 64
	n := len(f.mu.ids)
	if cap(f.mu.ids) <= minCap || n > cap(f.mu.ids)/4 {
		return
	}
	c := max(2*n, minCap)
	ids := make([]uint64, n, c)
	copy(ids, f.mu.ids)
	vecs := make([]float32, n*f.dim, c*f.dim)
	copy(vecs, f.mu.vecs)
	slot := make(map[uint64]int32, n)
	for i, id := range ids {
		slot[id] = int32(i)
	}
	f.mu.ids, f.mu.vecs, f.mu.slot = ids, vecs, slot
}

// Search returns the k stored vectors most similar to q (cosine similarity),
// best first: Score descending, ties by smaller ID. It returns fewer than k
// results when fewer vectors exist or pass the filter.
//
// q is normalised internally and not retained. Search returns
// [ErrDimensionMismatch] when len(q) != f.Dim() and [ErrZeroVector] for a
// zero or non-finite q; a valid q with k <= 0 returns nil, nil. opts may be
// nil; its Ef is ignored, and its Filter is applied before each dot product,
// so rejected vectors cost one call.
//
// The Filter runs while f's read lock is held: it must not call methods of
// f, or it may deadlock with a waiting writer. The returned slice is new and
// belongs to the caller.
func (f *Flat) Search(q []float32, k int, opts *SearchOptions) ([]Result, error) {
	sc, err := f.prepare(q)
	if err != nil {
		return nil, fmt.Errorf("flat search: %w", err)
	}
	defer f.scratch.Put(sc)
	if k <= 0 {
		return nil, nil
	}
	var filter Filter
	if opts != nil {
		filter = opts.Filter
	}

	f.mu.RLock()
	defer f.mu.RUnlock()
	ids, vecs, dim := f.mu.ids, f.mu.vecs, f.dim
	tk := &sc.tk
	tk.reset(min(k, len(ids)))
	thr, full := tk.worst()
	for i, id := range ids {
		if filter != nil && !filter(id) {
			continue
		}
		off := i * dim
		s := dot(sc.q, vecs[off:off+dim:off+dim])
		if full && s < thr {
			continue
		}
		tk.push(id, s)
		thr, full = tk.worst()
	}
	return tk.appendSorted(make([]Result, 0, tk.len())), nil
}

// SearchIDs is [Flat.Search] restricted to the given ids, with no filter:
// the exact fallback for a filter that matches few vectors, whose cost is
// len(ids) lookups and dot products rather than a scan of f. Ids not in f
// are skipped, and an id listed twice is returned once. Errors and result
// order are those of Search. f keeps no reference to q or ids.
func (f *Flat) SearchIDs(q []float32, k int, ids []uint64) ([]Result, error) {
	sc, err := f.prepare(q)
	if err != nil {
		return nil, fmt.Errorf("flat search ids: %w", err)
	}
	defer f.scratch.Put(sc)
	if k <= 0 {
		return nil, nil
	}

	f.mu.RLock()
	defer f.mu.RUnlock()
	vecs, dim := f.mu.vecs, f.dim
	tk := &sc.tk
	tk.reset(min(k, len(ids), len(f.mu.ids)))
	thr, full := tk.worst()
	for _, id := range ids {
		s, ok := f.mu.slot[id]
		if !ok {
			continue
		}
		off := int(s) * dim
		score := dot(sc.q, vecs[off:off+dim:off+dim])
		if full && score < thr {
			continue
		}
		// Only candidates that would enter pay for the duplicate check;
		// after the first few hundred that is a small fraction.
		if tk.has(id) {
			continue
		}
		tk.push(id, score)
		thr, full = tk.worst()
	}
	return tk.appendSorted(make([]Result, 0, tk.len())), nil
}

// prepare checks q and returns pooled scratch holding its normalised copy.
// The caller returns the scratch to f.scratch.
func (f *Flat) prepare(q []float32) (*flatScratch, error) {
	if len(q) != f.dim {
		return nil, fmt.Errorf("%w: got %d, want %d", ErrDimensionMismatch, len(q), f.dim)
	}
	sc := f.scratch.Get().(*flatScratch)
	u, err := normalizeInto(sc.q[:0], q)
	if err != nil {
		f.scratch.Put(sc)
		return nil, err
	}
	sc.q = u
	return sc, nil
}

// normalizeInto is [Normalize] plus a check of its output. Normalize scales
// by a float32 reciprocal of the norm, which overflows to +Inf when the norm
// is below about 2.9e-39 (all components subnormal), and then returns
// infinite or NaN components without an error. Every component is scaled by
// the same factor, so checking the first one catches it.
func normalizeInto(dst, v []float32) ([]float32, error) {
	n := len(dst)
	out, err := Normalize(dst, v)
	if err != nil {
		return dst, err
	}
	if x := float64(out[n]); math.IsNaN(x) || math.IsInf(x, 0) {
		return dst, ErrZeroVector
	}
	return out, nil
}

// Bytes returns the approximate memory f holds, in bytes: the capacity of
// the vector slab and id slice, and an estimate for the id map.
func (f *Flat) Bytes() int64 {
	f.mu.RLock()
	defer f.mu.RUnlock()
	return int64(cap(f.mu.vecs))*4 +
		int64(cap(f.mu.ids))*8 +
		int64(cap(f.mu.buf))*4 +
		int64(len(f.mu.slot))*mapEntryBytes
}

// Vector returns a copy of the unit-length vector stored under id, and
// whether there is one. The copy belongs to the caller.
func (f *Flat) Vector(id uint64) ([]float32, bool) {
	f.mu.RLock()
	defer f.mu.RUnlock()
	s, ok := f.mu.slot[id]
	if !ok {
		return nil, false
	}
	off := int(s) * f.dim
	return append([]float32(nil), f.mu.vecs[off:off+f.dim]...), true
}
