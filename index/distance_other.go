//go:build !amd64 || purego

package index

// useAVX2 is false off amd64 and with the purego tag: the portable Go
// kernels run.
var useAVX2 = false

// useAVX512 is false with useAVX2.
var useAVX512 = false

// dotAsm and dotBatchAsm are never called when useAVX2 is false.
func dotAsm(a, b []float32) float32 { return dotUnrolled(a, b) }

func dotBatchAsm(q, vecs []float32, ids []uint32, out []float32) {
	dotBatchGo(q, vecs, ids, out)
}

// prefetchList is a no-op without the assembly.
func prefetchList(p *uint32) {}

// hasQ8Kernel is false without the assembly.
func hasQ8Kernel() bool { return false }

func dotBatchQ8Asm(q []float32, base []int8, ids []uint32, scales, out []float32) {
	dotBatchQ8Go(q, base, ids, scales, out)
}
