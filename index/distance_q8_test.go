package index

import (
	"math"
	"math/rand/v2"
	"testing"
)

// TestDotBatchQ8Exact checks the int8 batch product, through whichever
// kernel runs here, against an exact reference on inputs whose products
// and sums are small integers (so every summation order gives the same
// float), at dimensions that exercise the 64- and 16-element steps, with
// repeated ids and a scale per node.
func TestDotBatchQ8Exact(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 8))
	for _, dim := range []int{16, 32, 48, 64, 80, 128, 144, 384, 768} {
		const nodes = 50
		q := make([]float32, dim)
		for i := range q {
			q[i] = float32(rng.IntN(9) - 4)
		}
		base := make([]int8, nodes*dim)
		for i := range base {
			base[i] = int8(rng.IntN(255) - 127)
		}
		scales := make([]float32, nodes)
		for i := range scales {
			scales[i] = float32(1 + rng.IntN(4))
		}
		ids := make([]uint32, 37)
		for i := range ids {
			ids[i] = uint32(rng.IntN(nodes))
		}
		out := make([]float32, len(ids))
		dotBatchQ8(q, base, ids, scales, out)
		for i, id := range ids {
			var want int64
			for j := range dim {
				want += int64(q[j]) * int64(base[int(id)*dim+j])
			}
			want *= int64(scales[id])
			if out[i] != float32(want) {
				t.Fatalf("dim %d: out[%d] (node %d) = %v, want %d (kernel %v)", dim, i, id, out[i], want, hasQ8Kernel())
			}
		}
	}
}

// TestDotBatchQ8RejectsOutside pins the bounds check made before the
// kernel reads anything: an id past the slab or the scales panics.
func TestDotBatchQ8RejectsOutside(t *testing.T) {
	q := make([]float32, 16)
	base := make([]int8, 2*16)
	for _, tc := range []struct {
		name   string
		scales []float32
		id     uint32
	}{{"past the slab", make([]float32, 3), 2}, {"past the scales", make([]float32, 1), 1}} {
		func() {
			defer func() {
				if recover() == nil {
					t.Errorf("%s: no panic", tc.name)
				}
			}()
			dotBatchQ8(q, base, []uint32{0, tc.id}, tc.scales, make([]float32, 2))
		}()
	}
}

// TestQuantize8 checks the round trip: every component within half a
// step of the original, the largest magnitude at ±127, zeros kept.
func TestQuantize8(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	for range 200 {
		v := make([]float32, 1+rng.IntN(300))
		for i := range v {
			v[i] = float32(rng.NormFloat64())
		}
		dst := make([]int8, len(v))
		s := quantize8(dst, v)
		var amax float32
		hit := false
		for i, x := range v {
			amax = max(amax, float32(math.Abs(float64(x))))
			if err := math.Abs(float64(x) - float64(s)*float64(dst[i])); err > float64(s)/2*1.0001 {
				t.Fatalf("component %d: %v back as %v·%d, error %g > step/2", i, x, s, dst[i], err)
			}
			hit = hit || dst[i] == 127 || dst[i] == -127
		}
		if amax > 0 && !hit {
			t.Fatalf("no component at ±127: %v", dst)
		}
	}
	dst := []int8{5, 5}
	if s := quantize8(dst, []float32{0, 0}); s != 0 || dst[0] != 0 || dst[1] != 0 {
		t.Fatalf("zero vector: scale %v, %v", s, dst)
	}
}
