package index

import (
	"fmt"
	"math"
)

// Similarity is cosine similarity, computed as a dot product over vectors
// normalised to unit length when they enter an index: one multiply-add per
// dimension instead of three.

// dot returns the dot product of a and b with the best kernel the CPU
// allows: our AVX-512F assembly (distance_amd64.s) on amd64 CPUs that have
// it, else our AVX2+FMA assembly on those that have both, else the 4-way
// unrolled Go loop. It does not check its input:
// callers guarantee equal, non-zero lengths.
//
// The assembly replaced vek32.Dot, which the index called through a
// function value: the call is now direct, without vek's length checks and
// dispatch, and the graph walk uses a batch form (dotBatch) that
// prefetches (issue 15; figures in bench/results/vectors.md).
func dot(a, b []float32) float32 {
	if useAVX2 {
		return dotAsm(a, b)
	}
	return dotUnrolled(a, b)
}

// dotBatch sets out[i] to dot(q, the vector of node ids[i]) for every i,
// where node j's vector is vecs[j·len(q) : (j+1)·len(q)]. The AVX2 path
// prefetches each vector while the previous one is summed, which is most
// of a graph walk's time once the vectors outgrow the caches. out must be
// as long as ids; every id must name a whole vector in vecs (it panics
// otherwise, before reading any).
func dotBatch(q, vecs []float32, ids []uint32, out []float32) {
	if len(ids) == 0 {
		return
	}
	out = out[:len(ids)]
	limit := uint32(len(vecs) / len(q))
	for _, id := range ids {
		if id >= limit {
			panic("index: dotBatch id outside the vector slab")
		}
	}
	if useAVX2 {
		dotBatchAsm(q, vecs, ids, out)
		return
	}
	dotBatchGo(q, vecs, ids, out)
}

// dotBatchGo is dotBatch's portable path.
func dotBatchGo(q, vecs []float32, ids []uint32, out []float32) {
	dim := len(q)
	for i, id := range ids {
		off := int(id) * dim
		out[i] = dotUnrolled(q, vecs[off:off+dim:off+dim])
	}
}

// Kernel returns the name of the dot-product kernel chosen at start-up:
// "avx512f", "avx2-fma" or "go-unrolled4".
func Kernel() string {
	if useAVX2 && useAVX512 {
		return "avx512f"
	}
	if useAVX2 {
		return "avx2-fma"
	}
	return "go-unrolled4"
}

// dotUnrolled is the portable kernel: four independent accumulators let the
// CPU overlap the multiply-adds of consecutive elements.
func dotUnrolled(a, b []float32) float32 {
	b = b[:len(a)]
	var s0, s1, s2, s3 float32
	i := 0
	for ; i+4 <= len(a); i += 4 {
		s0 += a[i] * b[i]
		s1 += a[i+1] * b[i+1]
		s2 += a[i+2] * b[i+2]
		s3 += a[i+3] * b[i+3]
	}
	for ; i < len(a); i++ {
		s0 += a[i] * b[i]
	}
	return (s0 + s1) + (s2 + s3)
}

// Dot returns the dot product of a and b: their cosine similarity when both
// have unit length. It returns [ErrDimensionMismatch] when the lengths
// differ or are zero.
func Dot(a, b []float32) (float32, error) {
	if len(a) != len(b) || len(a) == 0 {
		return 0, fmt.Errorf("%w: %d and %d", ErrDimensionMismatch, len(a), len(b))
	}
	return dot(a, b), nil
}

// Normalize appends v scaled to unit length to dst and returns the result.
// It returns [ErrDimensionMismatch] for an empty v and [ErrZeroVector] for a
// vector with zero norm or a NaN or infinite component.
func Normalize(dst, v []float32) ([]float32, error) {
	if len(v) == 0 {
		return dst, fmt.Errorf("%w: empty vector", ErrDimensionMismatch)
	}
	var sum float64
	for _, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return dst, ErrZeroVector
		}
		sum += f * f
	}
	if sum == 0 {
		return dst, ErrZeroVector
	}
	// Scale in float64: 1/norm overflows float32 for norms below about
	// 3e-39 (subnormal inputs), and rounds badly for huge ones.
	inv := 1 / math.Sqrt(sum)
	for _, x := range v {
		dst = append(dst, float32(float64(x)*inv))
	}
	return dst, nil
}

// Result is one search hit.
type Result struct {
	// ID is the caller's id of the vector.
	ID uint64
	// Score is the cosine similarity to the query, in [-1, 1]; higher is
	// closer.
	Score float32
}

// Filter reports whether the vector with the given id may be returned. It
// is called during the search, possibly many times, and must be fast and
// safe to call from the searching goroutine.
type Filter func(id uint64) bool

// SearchOptions tunes one search. A nil *SearchOptions means defaults.
type SearchOptions struct {
	// Ef is the HNSW search breadth (the size of the candidate list). Zero
	// means the index's EfSearch; it is raised to k when smaller. Ignored by
	// exact search.
	Ef int
	// Filter, when set, restricts results to ids it accepts.
	Filter Filter
}
