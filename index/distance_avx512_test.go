//go:build amd64 && !purego

package index

import (
	"math"
	"math/rand"
	"testing"
)

// bothAsmKernels runs fn once with each assembly kernel the CPU has: the
// AVX2 form always (when the assembly runs at all), the AVX-512 form when
// the CPU has it.
func bothAsmKernels(t *testing.T, fn func(t *testing.T)) {
	if !useAVX2 {
		t.Skip("no AVX2: the portable kernel is the one in use")
	}
	had := useAVX512
	defer func() { useAVX512 = had }()
	useAVX512 = false
	t.Run("avx2-fma", fn)
	if !hasAVX512() {
		t.Log("no AVX-512F on this CPU: only the AVX2 kernel ran")
		return
	}
	useAVX512 = true
	t.Run("avx512f", fn)
}

// TestAsmKernelsExact checks each assembly kernel, single and batch, with
// small integers (exact in float32) at every length from 1 to 300 and a
// few long ones, so every remainder modulo 8, 16, 32 and 64 is covered and
// a tail element dropped or repeated is caught exactly.
func TestAsmKernelsExact(t *testing.T) {
	bothAsmKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(11))
		lens := []int{383, 384, 385, 768, 1536, 1537}
		for n := 1; n <= 300; n++ {
			lens = append(lens, n)
		}
		for _, n := range lens {
			const nv = 5
			q := make([]float32, n)
			vecs := make([]float32, nv*n)
			for i := range q {
				q[i] = float32(rng.Intn(7) - 3)
			}
			for i := range vecs {
				vecs[i] = float32(rng.Intn(7) - 3)
			}
			ids := []uint32{4, 0, 2, 2, 1, 3}
			out := make([]float32, len(ids)+1)
			out[len(ids)] = 12345 // must stay untouched
			dotBatchAsm(q, vecs, ids, out[:len(ids)])
			for i, id := range ids {
				v := vecs[int(id)*n : int(id+1)*n]
				want := float32(refDot64(q, v))
				if got := dotAsm(q, v); got != want {
					t.Fatalf("dotAsm n=%d: got %v, want %v", n, got, want)
				}
				if out[i] != want {
					t.Fatalf("dotBatchAsm n=%d #%d: got %v, want %v", n, i, out[i], want)
				}
			}
			if out[len(ids)] != 12345 {
				t.Fatalf("dotBatchAsm n=%d wrote past its output", n)
			}
		}
	})
}

// TestAsmKernelsAgree checks each assembly kernel against a float64
// reference on random Gaussian vectors, within dotTolerance.
func TestAsmKernelsAgree(t *testing.T) {
	bothAsmKernels(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(12))
		for n := 1; n <= 1031; n += 3 {
			a, b := genVec(rng, n), genVec(rng, n)
			got, want := float64(dotAsm(a, b)), refDot64(a, b)
			if tol := dotTolerance(a, b); math.Abs(got-want) > tol {
				t.Fatalf("n=%d: got %g, want %g (tolerance %g)", n, got, want, tol)
			}
		}
	})
}

// TestAsmKernelsEndOfSlab scores the last vector of a slab whose end is
// the end of its allocation, so a masked tail that read past the vector
// would be caught by the race detector's or the OS's bounds (a masked-off
// lane must not fault).
func TestAsmKernelsEndOfSlab(t *testing.T) {
	bothAsmKernels(t, func(t *testing.T) {
		for _, dim := range []int{1, 5, 17, 127, 129} {
			vecs := make([]float32, 3*dim)
			q := make([]float32, dim)
			for i := range q {
				q[i] = 1
			}
			for i := range vecs {
				vecs[i] = 2
			}
			out := make([]float32, 1)
			dotBatchAsm(q, vecs, []uint32{2}, out)
			if want := float32(2 * dim); out[0] != want {
				t.Fatalf("dim=%d: got %v, want %v", dim, out[0], want)
			}
		}
	})
}
