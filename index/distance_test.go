package index

import (
	"errors"
	"fmt"
	"math"
	"math/rand"
	"testing"

	"github.com/viterin/vek"
)

// refDot64 is the reference dot product: a plain loop in float64, whose
// rounding error is negligible next to float32's.
func refDot64(a, b []float32) float64 {
	var s float64
	for i := range a {
		s += float64(a[i]) * float64(b[i])
	}
	return s
}

// dotTolerance bounds the rounding error of any float32 summation order of
// a·b: n unit roundoffs (2^-24) of sum |a_i b_i| (Higham's gamma_n bound,
// doubled for safety, covering FMA and tree-shaped sums alike).
func dotTolerance(a, b []float32) float64 {
	var abs float64
	for i := range a {
		abs += math.Abs(float64(a[i]) * float64(b[i]))
	}
	return 2*float64(len(a))*0x1p-24*abs + 1e-30
}

// genVec returns n standard normal components from rng.
func genVec(rng *rand.Rand, n int) []float32 {
	v := make([]float32, n)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return v
}

// naiveDot is the baseline of BenchmarkDot: the loop anyone would write.
func naiveDot(a, b []float32) float32 {
	var s float32
	for i := range a {
		s += a[i] * b[i]
	}
	return s
}

func TestKernelName(t *testing.T) {
	want := "go-unrolled4"
	if vek.Info().Acceleration && useAVX2 {
		want = "avx2-fma"
		if useAVX512 {
			want = "avx512f"
		}
	}
	if got := Kernel(); got != want {
		t.Fatalf("Kernel() = %q, want %q (vek acceleration %v)", got, want, vek.Info().Acceleration)
	}
}

// TestDotKernelsAgree checks the kernel in use and the portable kernel
// against a float64 reference at every length from 1 to 1031, so every
// remainder modulo 4, 8 and 16 (the unrolling and SIMD widths) is covered.
func TestDotKernelsAgree(t *testing.T) {
	kernels := []struct {
		name string
		fn   func(a, b []float32) float32
	}{
		{"in-use=" + Kernel(), dot},
		{"go-unrolled4", dotUnrolled},
	}
	if useAVX2 {
		kernels = append(kernels, struct {
			name string
			fn   func(a, b []float32) float32
		}{"avx2-fma", dotAsm})
	}
	rng := rand.New(rand.NewSource(1))
	for _, k := range kernels {
		t.Run(k.name, func(t *testing.T) {
			for n := 1; n <= 1031; n++ {
				a, b := genVec(rng, n), genVec(rng, n)
				got, want := float64(k.fn(a, b)), refDot64(a, b)
				if tol := dotTolerance(a, b); math.Abs(got-want) > tol {
					t.Fatalf("n=%d: got %g, want %g (tolerance %g)", n, got, want, tol)
				}
			}
		})
	}
}

// TestDotKernelsExact uses small integers, whose products and sums are
// exact in float32: any kernel that drops or repeats an element of the tail
// is caught exactly, not within a tolerance.
func TestDotKernelsExact(t *testing.T) {
	rng := rand.New(rand.NewSource(2))
	for n := 1; n <= 1031; n++ {
		a, b := make([]float32, n), make([]float32, n)
		for i := range a {
			a[i] = float32(rng.Intn(7) - 3)
			b[i] = float32(rng.Intn(7) - 3)
		}
		want := float32(refDot64(a, b))
		if got := dot(a, b); got != want {
			t.Fatalf("dot n=%d: got %v, want %v", n, got, want)
		}
		if got := dotUnrolled(a, b); got != want {
			t.Fatalf("dotUnrolled n=%d: got %v, want %v", n, got, want)
		}
		if got, err := Dot(a, b); err != nil || got != want {
			t.Fatalf("Dot n=%d: got %v, %v, want %v", n, got, err, want)
		}
	}
}

func TestDotErrors(t *testing.T) {
	tests := []struct {
		name string
		a, b []float32
	}{
		{"both nil", nil, nil},
		{"both empty", []float32{}, []float32{}},
		{"a empty", nil, []float32{1}},
		{"b empty", []float32{1}, nil},
		{"a shorter", []float32{1, 2}, []float32{1, 2, 3}},
		{"b shorter", []float32{1, 2, 3, 4, 5}, []float32{1, 2, 3, 4}},
		{"off by one at 8", make([]float32, 8), make([]float32, 9)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := Dot(tt.a, tt.b)
			if !errors.Is(err, ErrDimensionMismatch) {
				t.Fatalf("Dot error = %v, want ErrDimensionMismatch", err)
			}
			if got != 0 {
				t.Fatalf("Dot = %v on error, want 0", got)
			}
		})
	}
}

func TestNormalize(t *testing.T) {
	inf := float32(math.Inf(1))
	nan := float32(math.NaN())
	tests := []struct {
		name    string
		v       []float32
		wantErr error
	}{
		{"unit", []float32{1, 0, 0}, nil},
		{"3-4-5", []float32{3, 4}, nil},
		{"negative", []float32{-2, -2, -2, -2}, nil},
		{"single", []float32{-7}, nil},
		{"large", []float32{1e30, -3e30, 2e30}, nil},
		{"near max float32", []float32{3e38, 3e38, 3e38}, nil},
		{"small", []float32{1e-20, 2e-20}, nil},
		{"nil", nil, ErrDimensionMismatch},
		{"empty", []float32{}, ErrDimensionMismatch},
		{"zero", []float32{0, 0, 0}, ErrZeroVector},
		{"negative zero", []float32{float32(math.Copysign(0, -1))}, ErrZeroVector},
		{"NaN", []float32{1, nan, 1}, ErrZeroVector},
		{"+Inf", []float32{inf, 1}, ErrZeroVector},
		{"-Inf", []float32{1, -inf}, ErrZeroVector},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			prefix := []float32{42}
			got, err := Normalize(prefix, tt.v)
			if tt.wantErr != nil {
				if !errors.Is(err, tt.wantErr) {
					t.Fatalf("error = %v, want %v", err, tt.wantErr)
				}
				if len(got) != 1 || got[0] != 42 {
					t.Fatalf("dst changed on error: %v", got)
				}
				return
			}
			if err != nil {
				t.Fatalf("unexpected error %v", err)
			}
			if len(got) != 1+len(tt.v) || got[0] != 42 {
				t.Fatalf("Normalize must append to dst: got %v", got)
			}
			assertUnitParallel(t, got[1:], tt.v)
		})
	}
}

// TestNormalizeRandom checks unit norm over random vectors of many lengths.
func TestNormalizeRandom(t *testing.T) {
	rng := rand.New(rand.NewSource(3))
	for n := 1; n <= 1031; n += 7 {
		v := genVec(rng, n)
		for i := range v {
			v[i] *= float32(math.Pow(10, float64(rng.Intn(21)-10)))
		}
		u, err := Normalize(nil, v)
		if err != nil {
			t.Fatalf("n=%d: %v", n, err)
		}
		assertUnitParallel(t, u, v)
	}
}

// TestNormalizeSubnormal covers vectors whose norm is below the smallest
// normal float32 (1.18e-38). Normalize must return a finite unit vector or
// ErrZeroVector; today it returns +Inf components, because the reciprocal
// of the norm is rounded to float32 before scaling (1/1e-39 overflows).
// Flat guards against this in normalizeInto.
func TestNormalizeSubnormal(t *testing.T) {
	for _, v := range [][]float32{{1e-45}, {1e-39, 1e-39}, {1e-40, 0, -1e-40}} {
		u, err := Normalize(nil, v)
		if errors.Is(err, ErrZeroVector) {
			continue
		}
		if err != nil {
			t.Fatalf("%v: %v", v, err)
		}
		assertUnitParallel(t, u, v)
	}
}

// assertUnitParallel checks that u has unit norm and points the way v does.
func assertUnitParallel(t *testing.T, u, v []float32) {
	t.Helper()
	var norm float64
	for _, x := range u {
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			t.Fatalf("non-finite component in %v", u)
		}
		norm += float64(x) * float64(x)
	}
	if math.Abs(math.Sqrt(norm)-1) > 1e-6 {
		t.Fatalf("norm %v, want 1 (u=%v)", math.Sqrt(norm), u)
	}
	// cos(u, v) must be 1: compare in float64 to avoid overflow in v·v.
	var uv, vv float64
	for i := range v {
		uv += float64(u[i]) * float64(v[i])
		vv += float64(v[i]) * float64(v[i])
	}
	if c := uv / math.Sqrt(vv) / math.Sqrt(norm); math.Abs(c-1) > 1e-6 {
		t.Fatalf("cos(u, v) = %v, want 1", c)
	}
}

// FuzzDot checks that Dot never panics and agrees with the reference for
// any pair of lengths and values.
func FuzzDot(f *testing.F) {
	f.Add([]byte{}, 0)
	f.Add([]byte{1, 2, 3, 4, 5, 6, 7, 8}, 1)
	f.Add(make([]byte, 4*17), 9)
	f.Fuzz(func(t *testing.T, data []byte, split int) {
		v := make([]float32, len(data)/4)
		for i := range v {
			// Small integers keep the sum exact, so any kernel must match.
			v[i] = float32(int8(data[4*i]))
		}
		if split < 0 || split > len(v) {
			split = len(v) / 2
		}
		a, b := v[:split], v[split:]
		got, err := Dot(a, b)
		if len(a) != len(b) || len(a) == 0 {
			if !errors.Is(err, ErrDimensionMismatch) {
				t.Fatalf("lengths %d, %d: error %v, want ErrDimensionMismatch", len(a), len(b), err)
			}
			return
		}
		if err != nil {
			t.Fatal(err)
		}
		if want := float32(refDot64(a, b)); got != want {
			t.Fatalf("Dot = %v, want %v", got, want)
		}
	})
}

// BenchmarkDot compares, per dimension, the kernel in use, the portable
// unrolled kernel and a naive loop, so the speed-up is visible in one run.
// All three are called through a function value, as the index calls dot.
func BenchmarkDot(b *testing.B) {
	kernels := []struct {
		name string
		fn   func(a, b []float32) float32
	}{
		{Kernel(), dot},
		{"go-unrolled4", dotUnrolled},
		{"naive", naiveDot},
	}
	if Kernel() == "go-unrolled4" {
		kernels = kernels[1:] // the kernel in use is the unrolled loop
	}
	rng := rand.New(rand.NewSource(4))
	for _, dim := range []int{128, 384, 768} {
		x, y := genVec(rng, dim), genVec(rng, dim)
		for _, k := range kernels {
			b.Run(fmt.Sprintf("dim=%d/kernel=%s", dim, k.name), func(b *testing.B) {
				b.ReportAllocs()
				var s float32
				for b.Loop() {
					s += k.fn(x, y)
				}
				benchSink = s
			})
		}
	}
}

// benchSink keeps benchmark results alive.
var benchSink float32
