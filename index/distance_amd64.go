//go:build amd64 && !purego

package index

import "github.com/viterin/vek"

// useAVX2 reports whether the CPU has AVX2 and FMA (and the OS saves the
// YMM registers), as vek detects them through golang.org/x/sys/cpu. It is
// fixed at start-up; tests flip it to compare the kernels.
var useAVX2 = vek.Info().Acceleration

// useAVX512 selects the AVX-512 forms of the assembly kernels, when useAVX2
// is on and the CPU and OS have AVX-512F: half the FMA and load
// instructions of the AVX2 form per product, and a masked tail instead of a
// scalar loop. Tests flip it to compare the two.
var useAVX512 = useAVX2 && hasAVX512()

// hasAVX512 reports whether the CPU has AVX-512F and the OS saves the
// opmask and ZMM registers (XCR0 bits 1, 2, 5, 6 and 7, read with XGETBV,
// which CPUID.1:ECX.OSXSAVE says is allowed).
func hasAVX512() bool {
	maxLeaf, _, _, _ := cpuid(0, 0)
	if maxLeaf < 7 {
		return false
	}
	if _, _, c, _ := cpuid(1, 0); c&(1<<27) == 0 {
		return false
	}
	if xgetbv0()&0xe6 != 0xe6 {
		return false
	}
	_, b, _, _ := cpuid(7, 0)
	return b&(1<<16) != 0
}

// cpuid executes CPUID with EAX = leaf and ECX = sub.
func cpuid(leaf, sub uint32) (a, b, c, d uint32)

// xgetbv0 returns the low half of XCR0.
func xgetbv0() uint32

// dotAVX512 is dotAVX2's AVX-512F form.
//
//go:noescape
func dotAVX512(a, b *float32, n int) float32

// dotBatchAVX512 is dotBatchAVX2's AVX-512F form.
//
//go:noescape
func dotBatchAVX512(q, base *float32, dim int, ids *uint32, n int, out *float32, ahead int)

// dotAVX2 returns the dot product of the n float32 at a and b. n may be
// any length, zero included.
//
//go:noescape
func dotAVX2(a, b *float32, n int) float32

// dotBatchAVX2 sets out[i] to the dot product of q with the dim-long vector
// at base + ids[i]·dim, for i < n (n ≥ 1), prefetching every cache line of
// the vector ahead products ahead. Every id must index a whole vector
// inside base's slab.
//
//go:noescape
func dotBatchAVX2(q, base *float32, dim int, ids *uint32, n int, out *float32, ahead int)

// dotAsm is the AVX2 kernel behind dot; callers guarantee equal non-zero
// lengths.
func dotAsm(a, b []float32) float32 {
	if useAVX512 {
		return dotAVX512(&a[0], &b[0], len(a))
	}
	return dotAVX2(&a[0], &b[0], len(a))
}

// dotBatchAsm is dotBatch's AVX2 path; dotBatch has checked every id.
func dotBatchAsm(q, vecs []float32, ids []uint32, out []float32) {
	if useAVX512 {
		dotBatchAVX512(&q[0], &vecs[0], len(q), &ids[0], len(ids), &out[0], prefetchAhead)
		return
	}
	dotBatchAVX2(&q[0], &vecs[0], len(q), &ids[0], len(ids), &out[0], prefetchAhead)
}

// prefetchAhead is how many vectors ahead of the one being summed
// dotBatchAVX2 prefetches: one 384-float vector is 24 cache lines and its
// product takes a few tens of nanoseconds, less than a memory access, so
// the loads of the next two are kept in flight. Two is chosen from that
// arithmetic: on the overloaded machine of the change (issue 15), 1, 2 and
// 4 could not be told apart, though each beat no prefetch in most runs on a
// 30,000 × 384 graph (bench/results/vectors.md).
const prefetchAhead = 2

// prefetchList asks the CPU to start loading the neighbour list at p, which
// the graph walk reads next (see searchLayer).
//
//go:noescape
func prefetchList(p *uint32)

// dotBatchQ8AVX512 is dotBatchQ8's AVX-512 kernel (distance_amd64.s);
// dim must be a multiple of 16.
//
//go:noescape
func dotBatchQ8AVX512(q *float32, base *int8, dim int, ids *uint32, n int, scales *float32, out *float32)

// hasQ8Kernel reports whether dotBatchQ8 has an assembly kernel here.
func hasQ8Kernel() bool { return useAVX512 }

func dotBatchQ8Asm(q []float32, base []int8, ids []uint32, scales, out []float32) {
	dotBatchQ8AVX512(&q[0], &base[0], len(q), &ids[0], len(ids), &scales[0], &out[0])
}
