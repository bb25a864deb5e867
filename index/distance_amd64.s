//go:build amd64 && !purego

#include "textflag.h"

// The dot-product core, written out in both functions (a macro cannot hold
// labels): four 8-lane FMA accumulators over 32 elements a step, then
// 8-element steps, a horizontal sum, and a scalar tail for n mod 8, so any
// length is exact to the element. In: SI, DI the vectors, CX the length.
// Out: X0. Clobbers AX, BX, Y0-Y7.

// func dotAVX2(a, b *float32, n int) float32
TEXT ·dotAVX2(SB), NOSPLIT, $0-28
	MOVQ    a+0(FP), SI
	MOVQ    b+8(FP), DI
	MOVQ    n+16(FP), CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	MOVQ    CX, BX
	XORQ    AX, AX

one_loop32:
	CMPQ    BX, $32
	JL      one_loop8
	VMOVUPS (SI)(AX*4), Y4
	VMOVUPS 32(SI)(AX*4), Y5
	VMOVUPS 64(SI)(AX*4), Y6
	VMOVUPS 96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ    $32, AX
	SUBQ    $32, BX
	JMP     one_loop32

one_loop8:
	CMPQ    BX, $8
	JL      one_reduce
	VMOVUPS (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ    $8, AX
	SUBQ    $8, BX
	JMP     one_loop8

one_reduce:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0

one_loop1:
	TESTQ   BX, BX
	JE      one_done
	VMOVSS  (SI)(AX*4), X1
	VFMADD231SS (DI)(AX*4), X1, X0
	INCQ    AX
	DECQ    BX
	JMP     one_loop1

one_done:
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotBatchAVX2(q, base *float32, dim int, ids *uint32, n int, out *float32, ahead int)
//
// out[i] = dot(q, base[ids[i]*dim : (ids[i]+1)*dim]) for i < n. It first
// prefetches every cache line of vectors 0 .. ahead-1, then before product
// i those of vector i+ahead, so the graph walk's scattered vectors arrive
// while earlier ones are summed (hnswlib prefetches the next vector's
// first line the same way).
TEXT ·dotBatchAVX2(SB), NOSPLIT, $0-56
	MOVQ    q+0(FP), R8
	MOVQ    base+8(FP), R9
	MOVQ    dim+16(FP), R10
	MOVQ    ids+24(FP), R11
	MOVQ    n+32(FP), R12
	MOVQ    out+40(FP), R13
	MOVQ    R10, R14
	SHLQ    $2, R14 // bytes per vector
	XORQ    DX, DX  // i

	// Prefetch vectors 0 .. ahead-1.
	MOVQ    ahead+48(FP), CX
	XORQ    DI, DI
batch_pfstart:
	CMPQ    DI, CX
	JGE     batch_loop
	CMPQ    DI, R12
	JGE     batch_loop
	MOVL    (R11)(DI*4), AX
	IMULQ   R14, AX
	ADDQ    R9, AX
	MOVQ    R14, BX
batch_pf0:
	PREFETCHT0 (AX)
	ADDQ    $64, AX
	SUBQ    $64, BX
	JG      batch_pf0
	INCQ    DI
	JMP     batch_pfstart

batch_loop:
	CMPQ    DX, R12
	JGE     batch_end
	MOVQ    ahead+48(FP), AX
	ADDQ    DX, AX
	CMPQ    AX, R12
	JGE     batch_nopf
	MOVL    (R11)(AX*4), AX
	IMULQ   R14, AX
	ADDQ    R9, AX
	MOVQ    R14, BX
batch_pf:
	PREFETCHT0 (AX)
	ADDQ    $64, AX
	SUBQ    $64, BX
	JG      batch_pf

batch_nopf:
	MOVL    (R11)(DX*4), DI
	IMULQ   R14, DI
	ADDQ    R9, DI
	MOVQ    R8, SI
	MOVQ    R10, CX
	VXORPS  Y0, Y0, Y0
	VXORPS  Y1, Y1, Y1
	VXORPS  Y2, Y2, Y2
	VXORPS  Y3, Y3, Y3
	MOVQ    CX, BX
	XORQ    AX, AX

batch_loop32:
	CMPQ    BX, $32
	JL      batch_loop8
	VMOVUPS (SI)(AX*4), Y4
	VMOVUPS 32(SI)(AX*4), Y5
	VMOVUPS 64(SI)(AX*4), Y6
	VMOVUPS 96(SI)(AX*4), Y7
	VFMADD231PS (DI)(AX*4), Y4, Y0
	VFMADD231PS 32(DI)(AX*4), Y5, Y1
	VFMADD231PS 64(DI)(AX*4), Y6, Y2
	VFMADD231PS 96(DI)(AX*4), Y7, Y3
	ADDQ    $32, AX
	SUBQ    $32, BX
	JMP     batch_loop32

batch_loop8:
	CMPQ    BX, $8
	JL      batch_reduce
	VMOVUPS (SI)(AX*4), Y4
	VFMADD231PS (DI)(AX*4), Y4, Y0
	ADDQ    $8, AX
	SUBQ    $8, BX
	JMP     batch_loop8

batch_reduce:
	VADDPS  Y1, Y0, Y0
	VADDPS  Y3, Y2, Y2
	VADDPS  Y2, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0

batch_loop1:
	TESTQ   BX, BX
	JE      batch_done
	VMOVSS  (SI)(AX*4), X1
	VFMADD231SS (DI)(AX*4), X1, X0
	INCQ    AX
	DECQ    BX
	JMP     batch_loop1

batch_done:
	VMOVSS  X0, (R13)(DX*4)
	INCQ    DX
	JMP     batch_loop

batch_end:
	VZEROUPPER
	RET

// func prefetchList(p *uint32)
//
// Prefetches the three cache lines a layer-0 neighbour list of up to 32
// links (132 bytes) can span. A prefetch never faults.
TEXT ·prefetchList(SB), NOSPLIT, $0-8
	MOVQ    p+0(FP), AX
	PREFETCHT0 (AX)
	PREFETCHT0 64(AX)
	PREFETCHT0 128(AX)
	RET

// The AVX-512 forms of the two products: four 16-lane FMA accumulators
// over 64 elements a step, then 16-element steps, and the last n mod 16
// elements in one masked step (masked-off lanes load as zero and never
// fault), then a horizontal sum. Only called when the CPU and OS have
// AVX-512F (hasAVX512).

// func dotAVX512(a, b *float32, n int) float32
TEXT ·dotAVX512(SB), NOSPLIT, $0-28
	MOVQ    a+0(FP), SI
	MOVQ    b+8(FP), DI
	MOVQ    n+16(FP), BX
	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z2, Z2, Z2
	VXORPS  Z3, Z3, Z3
	XORQ    AX, AX

z1_loop64:
	CMPQ    BX, $64
	JL      z1_loop16
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS 64(SI)(AX*4), Z5
	VMOVUPS 128(SI)(AX*4), Z6
	VMOVUPS 192(SI)(AX*4), Z7
	VFMADD231PS (DI)(AX*4), Z4, Z0
	VFMADD231PS 64(DI)(AX*4), Z5, Z1
	VFMADD231PS 128(DI)(AX*4), Z6, Z2
	VFMADD231PS 192(DI)(AX*4), Z7, Z3
	ADDQ    $64, AX
	SUBQ    $64, BX
	JMP     z1_loop64

z1_loop16:
	CMPQ    BX, $16
	JL      z1_tail
	VMOVUPS (SI)(AX*4), Z4
	VFMADD231PS (DI)(AX*4), Z4, Z0
	ADDQ    $16, AX
	SUBQ    $16, BX
	JMP     z1_loop16

z1_tail:
	TESTQ   BX, BX
	JE      z1_reduce
	MOVQ    BX, CX
	MOVL    $1, DX
	SHLL    CX, DX
	DECL    DX
	KMOVW   DX, K1
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	VMOVUPS.Z (DI)(AX*4), K1, Z5
	VFMADD231PS Z5, Z4, Z1

z1_reduce:
	VADDPS  Z1, Z0, Z0
	VADDPS  Z3, Z2, Z2
	VADDPS  Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS  Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0
	VMOVSS  X0, ret+24(FP)
	VZEROUPPER
	RET

// func dotBatchAVX512(q, base *float32, dim int, ids *uint32, n int, out *float32, ahead int)
//
// dotBatchAVX2 with the AVX-512 product; the same prefetching.
TEXT ·dotBatchAVX512(SB), NOSPLIT, $0-56
	MOVQ    q+0(FP), R8
	MOVQ    base+8(FP), R9
	MOVQ    dim+16(FP), R10
	MOVQ    ids+24(FP), R11
	MOVQ    n+32(FP), R12
	MOVQ    out+40(FP), R13
	MOVQ    R10, R14
	SHLQ    $2, R14 // bytes per vector
	XORQ    DX, DX  // i

	// The tail mask, the same for every vector: (1 << (dim mod 16)) - 1.
	MOVQ    R10, CX
	ANDQ    $15, CX
	MOVL    $1, AX
	SHLL    CX, AX
	DECL    AX
	KMOVW   AX, K1

	MOVQ    ahead+48(FP), CX
	XORQ    DI, DI
zb_pfstart:
	CMPQ    DI, CX
	JGE     zb_loop
	CMPQ    DI, R12
	JGE     zb_loop
	MOVL    (R11)(DI*4), AX
	IMULQ   R14, AX
	ADDQ    R9, AX
	MOVQ    R14, BX
zb_pf0:
	PREFETCHT0 (AX)
	ADDQ    $64, AX
	SUBQ    $64, BX
	JG      zb_pf0
	INCQ    DI
	JMP     zb_pfstart

zb_loop:
	CMPQ    DX, R12
	JGE     zb_end
	MOVQ    ahead+48(FP), AX
	ADDQ    DX, AX
	CMPQ    AX, R12
	JGE     zb_nopf
	MOVL    (R11)(AX*4), AX
	IMULQ   R14, AX
	ADDQ    R9, AX
	MOVQ    R14, BX
zb_pf:
	PREFETCHT0 (AX)
	ADDQ    $64, AX
	SUBQ    $64, BX
	JG      zb_pf

zb_nopf:
	MOVL    (R11)(DX*4), DI
	IMULQ   R14, DI
	ADDQ    R9, DI
	MOVQ    R8, SI
	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z2, Z2, Z2
	VXORPS  Z3, Z3, Z3
	MOVQ    R10, BX
	XORQ    AX, AX

zb_loop64:
	CMPQ    BX, $64
	JL      zb_loop16
	VMOVUPS (SI)(AX*4), Z4
	VMOVUPS 64(SI)(AX*4), Z5
	VMOVUPS 128(SI)(AX*4), Z6
	VMOVUPS 192(SI)(AX*4), Z7
	VFMADD231PS (DI)(AX*4), Z4, Z0
	VFMADD231PS 64(DI)(AX*4), Z5, Z1
	VFMADD231PS 128(DI)(AX*4), Z6, Z2
	VFMADD231PS 192(DI)(AX*4), Z7, Z3
	ADDQ    $64, AX
	SUBQ    $64, BX
	JMP     zb_loop64

zb_loop16:
	CMPQ    BX, $16
	JL      zb_tail
	VMOVUPS (SI)(AX*4), Z4
	VFMADD231PS (DI)(AX*4), Z4, Z0
	ADDQ    $16, AX
	SUBQ    $16, BX
	JMP     zb_loop16

zb_tail:
	TESTQ   BX, BX
	JE      zb_reduce
	VMOVUPS.Z (SI)(AX*4), K1, Z4
	VMOVUPS.Z (DI)(AX*4), K1, Z5
	VFMADD231PS Z5, Z4, Z1

zb_reduce:
	VADDPS  Z1, Z0, Z0
	VADDPS  Z3, Z2, Z2
	VADDPS  Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS  Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0
	VMOVSS  X0, (R13)(DX*4)
	INCQ    DX
	JMP     zb_loop

zb_end:
	VZEROUPPER
	RET

// func cpuid(leaf, sub uint32) (a, b, c, d uint32)
TEXT ·cpuid(SB), NOSPLIT, $0-24
	MOVL    leaf+0(FP), AX
	MOVL    sub+4(FP), CX
	CPUID
	MOVL    AX, a+8(FP)
	MOVL    BX, b+12(FP)
	MOVL    CX, c+16(FP)
	MOVL    DX, d+20(FP)
	RET

// func xgetbv0() uint32
TEXT ·xgetbv0(SB), NOSPLIT, $0-4
	MOVL    $0, CX
	XGETBV
	MOVL    AX, ret+0(FP)
	RET

// func dotBatchQ8AVX512(q *float32, base *int8, dim int, ids *uint32, n int, scales *float32, out *float32)
//
// out[i] = scales[ids[i]] · Σ q[j]·base[ids[i]·dim + j]: the float query
// against int8 vectors, each widened to 16 int32 lanes (VPMOVSXBD),
// converted to float and multiply-added, four accumulators over 64
// elements a step, then 16-element steps. dim must be a multiple of 16.
// Prefetches the vector two ahead (dim bytes, dim/64 lines).
TEXT ·dotBatchQ8AVX512(SB), NOSPLIT, $0-56
	MOVQ    q+0(FP), R8
	MOVQ    base+8(FP), R9
	MOVQ    dim+16(FP), R10
	MOVQ    ids+24(FP), R11
	MOVQ    n+32(FP), R12
	MOVQ    scales+40(FP), R14
	MOVQ    out+48(FP), R13
	XORQ    DX, DX // i

zq_loop:
	CMPQ    DX, R12
	JGE     zq_end
	MOVQ    DX, AX
	ADDQ    $2, AX
	CMPQ    AX, R12
	JGE     zq_nopf
	MOVL    (R11)(AX*4), AX
	IMULQ   R10, AX
	ADDQ    R9, AX
	MOVQ    R10, BX
zq_pf:
	PREFETCHT0 (AX)
	ADDQ    $64, AX
	SUBQ    $64, BX
	JG      zq_pf

zq_nopf:
	MOVL    (R11)(DX*4), CX
	MOVQ    CX, DI
	IMULQ   R10, DI
	ADDQ    R9, DI
	VXORPS  Z0, Z0, Z0
	VXORPS  Z1, Z1, Z1
	VXORPS  Z2, Z2, Z2
	VXORPS  Z3, Z3, Z3
	MOVQ    R10, BX
	XORQ    AX, AX

zq_loop64:
	CMPQ    BX, $64
	JL      zq_loop16
	VPMOVSXBD (DI)(AX*1), Z4
	VPMOVSXBD 16(DI)(AX*1), Z5
	VPMOVSXBD 32(DI)(AX*1), Z6
	VPMOVSXBD 48(DI)(AX*1), Z7
	VCVTDQ2PS Z4, Z4
	VCVTDQ2PS Z5, Z5
	VCVTDQ2PS Z6, Z6
	VCVTDQ2PS Z7, Z7
	VFMADD231PS (R8)(AX*4), Z4, Z0
	VFMADD231PS 64(R8)(AX*4), Z5, Z1
	VFMADD231PS 128(R8)(AX*4), Z6, Z2
	VFMADD231PS 192(R8)(AX*4), Z7, Z3
	ADDQ    $64, AX
	SUBQ    $64, BX
	JMP     zq_loop64

zq_loop16:
	CMPQ    BX, $16
	JL      zq_reduce
	VPMOVSXBD (DI)(AX*1), Z4
	VCVTDQ2PS Z4, Z4
	VFMADD231PS (R8)(AX*4), Z4, Z0
	ADDQ    $16, AX
	SUBQ    $16, BX
	JMP     zq_loop16

zq_reduce:
	VADDPS  Z1, Z0, Z0
	VADDPS  Z3, Z2, Z2
	VADDPS  Z2, Z0, Z0
	VEXTRACTF64X4 $1, Z0, Y1
	VADDPS  Y1, Y0, Y0
	VEXTRACTF128 $1, Y0, X1
	VADDPS  X1, X0, X0
	VMOVHLPS X0, X0, X1
	VADDPS  X1, X0, X0
	VMOVSHDUP X0, X1
	VADDSS  X1, X0, X0
	VMULSS  (R14)(CX*4), X0, X0
	VMOVSS  X0, (R13)(DX*4)
	INCQ    DX
	JMP     zq_loop

zq_end:
	VZEROUPPER
	RET
