package index

import (
	"fmt"
	"math"
	"math/rand"
	"testing"
)

// batchInput returns a slab of n random vectors of length dim, a query, and
// ids that repeat, skip and reorder nodes, as a neighbour list does.
func batchInput(rng *rand.Rand, n, dim, nids int) (q, vecs []float32, ids []uint32) {
	q = genVec(rng, dim)
	vecs = genVec(rng, n*dim)
	ids = make([]uint32, nids)
	for i := range ids {
		ids[i] = uint32(rng.Intn(n))
	}
	return q, vecs, ids
}

// TestDotBatchAgrees checks dotBatch (the kernel in use) and its assembly
// path against one dot product per id in float64, at every length from 1
// to 260 (every remainder modulo 8 and 32, the assembly's step widths) and
// at the embedding sizes the index sees, with batches of 0 to 40 ids.
func TestDotBatchAgrees(t *testing.T) {
	rng := rand.New(rand.NewSource(5))
	dims := []int{384, 768, 1536, 1537}
	for d := 1; d <= 260; d++ {
		dims = append(dims, d)
	}
	out := make([]float32, 64)
	for _, dim := range dims {
		nids := rng.Intn(41)
		q, vecs, ids := batchInput(rng, 50, dim, nids)
		check := func(name string, got []float32) {
			t.Helper()
			for i, id := range ids {
				v := vecs[int(id)*dim : int(id+1)*dim]
				want := refDot64(q, v)
				if tol := dotTolerance(q, v); math.Abs(float64(got[i])-want) > tol {
					t.Fatalf("%s dim=%d id %d (#%d of %d): got %g, want %g (tolerance %g)", name, dim, id, i, len(ids), got[i], want, tol)
				}
			}
		}
		clear(out)
		dotBatch(q, vecs, ids, out[:nids])
		check("dotBatch", out)
		clear(out)
		dotBatchGo(q, vecs, ids, out[:nids])
		check("dotBatchGo", out)
		if useAVX2 && nids > 0 {
			clear(out)
			dotBatchAsm(q, vecs, ids, out[:nids])
			check("dotBatchAsm", out)
		}
	}
}

// TestDotBatchExact uses small integers, whose sums are exact in float32:
// the assembly and Go paths must give identical results, element by
// element, and must not write past len(ids).
func TestDotBatchExact(t *testing.T) {
	rng := rand.New(rand.NewSource(6))
	for dim := 1; dim <= 300; dim += 1 + dim/16 {
		q := make([]float32, dim)
		vecs := make([]float32, 20*dim)
		for i := range q {
			q[i] = float32(rng.Intn(7) - 3)
		}
		for i := range vecs {
			vecs[i] = float32(rng.Intn(7) - 3)
		}
		ids := []uint32{19, 0, 7, 7, 3, 19, 12}
		got := make([]float32, len(ids)+1)
		got[len(ids)] = 99 // a sentinel past the end
		dotBatch(q, vecs, ids, got[:len(ids)])
		for i, id := range ids {
			want := float32(refDot64(q, vecs[int(id)*dim:int(id+1)*dim]))
			if got[i] != want {
				t.Fatalf("dim=%d #%d: got %v, want %v", dim, i, got[i], want)
			}
		}
		if got[len(ids)] != 99 {
			t.Fatalf("dim=%d: dotBatch wrote past len(ids)", dim)
		}
	}
}

// TestDotBatchRejectsOutside checks that an id past the slab panics before
// any vector is read, rather than the assembly reading foreign memory.
func TestDotBatchRejectsOutside(t *testing.T) {
	q, vecs := make([]float32, 8), make([]float32, 8*4)
	defer func() {
		if recover() == nil {
			t.Fatal("no panic for an id outside the slab")
		}
	}()
	dotBatch(q, vecs, []uint32{1, 4}, make([]float32, 2))
}

// TestDotUsesBothPaths runs dot and dotBatch with the assembly switched
// off, so the portable paths are exercised on AVX2 machines too.
func TestDotUsesBothPaths(t *testing.T) {
	if !useAVX2 {
		t.Skip("no AVX2: the portable paths are the ones in use")
	}
	rng := rand.New(rand.NewSource(7))
	q, vecs, ids := batchInput(rng, 30, 101, 25)
	withAsm := make([]float32, len(ids))
	dotBatch(q, vecs, ids, withAsm)
	a := dot(q, vecs[:101])
	useAVX2 = false
	defer func() { useAVX2 = true }()
	without := make([]float32, len(ids))
	dotBatch(q, vecs, ids, without)
	b := dot(q, vecs[:101])
	for i := range ids {
		v := vecs[int(ids[i])*101 : int(ids[i]+1)*101]
		if tol := dotTolerance(q, v); math.Abs(float64(withAsm[i]-without[i])) > 2*tol {
			t.Fatalf("#%d: asm %v, Go %v", i, withAsm[i], without[i])
		}
	}
	if tol := dotTolerance(q, vecs[:101]); math.Abs(float64(a-b)) > 2*tol {
		t.Fatalf("dot: asm %v, Go %v", a, b)
	}
}

// FuzzDotBatch checks the assembly batch against the Go batch for any
// dimension, slab and id list: with small integer values both are exact,
// so they must agree bit for bit.
func FuzzDotBatch(f *testing.F) {
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8, 9}, uint8(3), []byte{0, 1, 2, 1})
	f.Add(make([]byte, 200), uint8(33), []byte{0, 5})
	f.Add(make([]byte, 97), uint8(9), []byte{})
	f.Fuzz(func(t *testing.T, data []byte, dim8 uint8, idBytes []byte) {
		dim := int(dim8)
		if dim == 0 || len(data) < dim*2 {
			return
		}
		q := make([]float32, dim)
		for i := range q {
			q[i] = float32(int8(data[i]))
		}
		n := (len(data) - dim) / dim
		vecs := make([]float32, n*dim)
		for i := range vecs {
			vecs[i] = float32(int8(data[dim+i]))
		}
		ids := make([]uint32, len(idBytes))
		for i, b := range idBytes {
			ids[i] = uint32(int(b) % n)
		}
		got := make([]float32, len(ids))
		want := make([]float32, len(ids))
		dotBatch(q, vecs, ids, got)
		dotBatchGo(q, vecs, ids, want)
		for i := range ids {
			exact := float32(refDot64(q, vecs[int(ids[i])*dim:int(ids[i]+1)*dim]))
			if got[i] != want[i] || got[i] != exact {
				t.Fatalf("dim=%d #%d id %d: dotBatch %v, Go %v, exact %v", dim, i, ids[i], got[i], want[i], exact)
			}
		}
	})
}

// BenchmarkDotBatch scores 32 ids, a full layer-0 list, against a slab too
// big for the caches, so the assembly's prefetching shows; "go" is the
// portable path on the same input.
func BenchmarkDotBatch(b *testing.B) {
	for _, dim := range []int{128, 384} {
		n := (64 << 20) / (4 * dim) // 64 MiB of vectors
		rng := rand.New(rand.NewSource(8))
		q, vecs, _ := batchInput(rng, 1, dim, 0)
		vecs = make([]float32, n*dim)
		for i := range vecs {
			vecs[i] = float32(i%7) - 3
		}
		ids := make([]uint32, 32)
		out := make([]float32, 32)
		paths := []struct {
			name string
			fn   func(q, vecs []float32, ids []uint32, out []float32)
		}{{Kernel(), dotBatch}, {"go", dotBatchGo}}

		for _, p := range paths {
			b.Run(fmt.Sprintf("dim=%d/kernel=%s", dim, p.name), func(b *testing.B) {
				b.ReportAllocs()
				for b.Loop() {
					for i := range ids {
						ids[i] = uint32(rng.Intn(n))
					}
					p.fn(q, vecs, ids, out)
				}
				benchSink = out[0]
			})
		}
	}
}
