package bench

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
)

func TestParseSpec(t *testing.T) {
	tests := []struct {
		spec string
		want syntheticSpec // checked when ok
		ok   bool
		msgs []string // substrings of the error, one per problem
	}{
		{"n=100000,dim=384,clusters=1000,seed=1", syntheticSpec{100000, 384, 1000, 1000, 1, 1}, true, nil},
		{" n = 20 , dim=3,clusters=2,seed=7,queries=5,sigma=0.5 ", syntheticSpec{20, 3, 2, 5, 7, 0.5}, true, nil},
		{"n=500", syntheticSpec{500, 384, 500, 1000, 1, 1}, false, []string{"clusters=1000 exceeds n=500"}},
		{"", syntheticSpec{}, false, []string{"empty"}},
		{"n=x,dim=0,bogus=1", syntheticSpec{}, false, []string{"n=x: not an integer", "dim=0: out of range", "bogus=1: unknown key"}},
		{"n=10,n=20", syntheticSpec{}, false, []string{"n given twice"}},
		{"seed=-1", syntheticSpec{}, false, []string{"seed=-1"}},
		{"sigma=NaN", syntheticSpec{}, false, []string{"sigma=NaN: out of range"}},
		{"sigma=0", syntheticSpec{}, false, []string{"out of range"}},
		{"n", syntheticSpec{}, false, []string{"not key=value"}},
		{"n=50000000,dim=65536", syntheticSpec{}, false, []string{"exceed"}},
	}
	for _, tt := range tests {
		t.Run(tt.spec, func(t *testing.T) {
			got, err := parseSpec(tt.spec)
			if tt.ok {
				if err != nil || got != tt.want {
					t.Fatalf("parseSpec = %+v, %v; want %+v", got, err, tt.want)
				}
				again, err := parseSpec(got.String())
				if err != nil || again != got {
					t.Fatalf("canonical %q parses to %+v, %v", got.String(), again, err)
				}
				return
			}
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("err = %v, want ErrInvalidSpec", err)
			}
			for _, m := range tt.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
		})
	}
}

func FuzzParseSpec(f *testing.F) {
	for _, s := range []string{"n=100000,dim=384,clusters=1000,seed=1", "n=2,dim=1,clusters=2,queries=1,sigma=1e-3", "", ",", "n==1", "sigma=inf", "seed=18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, spec string) {
		s, err := parseSpec(spec)
		if err != nil {
			if !errors.Is(err, ErrInvalidSpec) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if s.n < 1 || s.dim < 1 || s.clusters < 1 || s.clusters > s.n || s.queries < 1 || !(s.sigma > 0) {
			t.Fatalf("accepted %q as %+v", spec, s)
		}
		if again, err := parseSpec(s.String()); err != nil || again != s {
			t.Fatalf("canonical form %q: %+v, %v", s.String(), again, err)
		}
	})
}

func TestSynthetic(t *testing.T) {
	ctx := context.Background()
	spec := "n=600,dim=16,clusters=6,seed=3,queries=20"
	a, err := Synthetic(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Synthetic(ctx, spec)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Base) != 600 || len(a.Queries) != 20 || a.Dim != 16 || len(a.Truth) != 20 || len(a.Truth[0]) != 100 {
		t.Fatalf("shape: %d base, %d queries, dim %d, truth %d×%d", len(a.Base), len(a.Queries), a.Dim, len(a.Truth), len(a.Truth[0]))
	}
	if a.Name != "synthetic:n=600,dim=16,clusters=6,seed=3,queries=20,sigma=1" {
		t.Errorf("name %q", a.Name)
	}
	if !slices.EqualFunc(a.Base, b.Base, slices.Equal) || !slices.EqualFunc(a.Queries, b.Queries, slices.Equal) ||
		!slices.EqualFunc(a.Truth, b.Truth, slices.Equal) {
		t.Fatal("same seed gave different data")
	}
	c, err := Synthetic(ctx, "n=600,dim=16,clusters=6,seed=4,queries=20")
	if err != nil {
		t.Fatal(err)
	}
	if slices.Equal(a.Base[0], c.Base[0]) {
		t.Fatal("different seeds gave the same first vector")
	}
	for i, v := range append(slices.Clone(a.Base), a.Queries...) {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if math.Abs(s-1) > 1e-5 {
			t.Fatalf("vector %d has squared norm %v", i, s)
		}
	}
	for qi, q := range a.Queries { // queries are fresh draws, not base copies
		for _, v := range a.Base {
			if slices.Equal(q, v) {
				t.Fatalf("query %d copies a base vector", qi)
			}
		}
	}
	if err := a.validate(); err != nil {
		t.Fatal(err)
	}
}

// naiveTruth ranks every base vector for every query by float64 cosine.
func naiveTruth(base, queries [][]float32, depth int) [][]int {
	norm := func(v []float32) float64 {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		return math.Sqrt(s)
	}
	out := make([][]int, len(queries))
	for qi, q := range queries {
		ids := make([]int, len(base))
		sims := make([]float64, len(base))
		for i, b := range base {
			ids[i] = i
			var d float64
			for j := range b {
				d += float64(q[j]) * float64(b[j])
			}
			sims[i] = d / norm(q) / norm(b)
		}
		sort.SliceStable(ids, func(x, y int) bool { return sims[ids[x]] > sims[ids[y]] })
		out[qi] = ids[:depth]
	}
	return out
}

func randomVectors(rng *rand.Rand, n, dim int) [][]float32 {
	out := make([][]float32, n)
	for i := range out {
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = float32(rng.NormFloat64()) * 10 // not normalised
		}
	}
	return out
}

func TestGroundTruthMatchesNaive(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, tc := range []struct{ n, q, dim, depth int }{{300, 25, 24, 10}, {50, 7, 3, 50}, {1, 1, 5, 1}} {
		base, queries := randomVectors(rng, tc.n, tc.dim), randomVectors(rng, tc.q, tc.dim)
		got, err := GroundTruth(context.Background(), base, queries, tc.depth)
		if err != nil {
			t.Fatal(err)
		}
		want := naiveTruth(base, queries, tc.depth)
		if !slices.EqualFunc(got, want, slices.Equal) {
			t.Fatalf("n=%d dim=%d: GroundTruth differs from the naive ranking:\n%v\n%v", tc.n, tc.dim, got[0], want[0])
		}
	}
}

func TestGroundTruthErrors(t *testing.T) {
	ctx := context.Background()
	ok := [][]float32{{1, 0}, {0, 1}}
	for name, call := range map[string]func() error{
		"depth 0":        func() error { _, err := GroundTruth(ctx, ok, ok, 0); return err },
		"depth > n":      func() error { _, err := GroundTruth(ctx, ok, ok, 3); return err },
		"no base":        func() error { _, err := GroundTruth(ctx, nil, ok, 1); return err },
		"zero vector":    func() error { _, err := GroundTruth(ctx, [][]float32{{0, 0}}, ok, 1); return err },
		"ragged base":    func() error { _, err := GroundTruth(ctx, [][]float32{{1, 0}, {1}}, ok, 1); return err },
		"query mismatch": func() error { _, err := GroundTruth(ctx, ok, [][]float32{{1}}, 1); return err },
	} {
		if err := call(); !errors.Is(err, ErrInvalidDataset) {
			t.Errorf("%s: %v", name, err)
		}
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := GroundTruth(cancelled, ok, ok, 1); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// writeSet writes a data set under dir with the given prefix.
func writeSet(t *testing.T, dir, prefix string, base, queries [][]float32, truth [][]int) {
	t.Helper()
	write := func(name string, fn func(*os.File) error) {
		f, err := os.Create(filepath.Join(dir, prefix+name))
		if err != nil {
			t.Fatal(err)
		}
		if err := fn(f); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	write("_base.fvecs", func(f *os.File) error { return WriteFvecs(f, base) })
	if queries != nil {
		write("_query.fvecs", func(f *os.File) error { return WriteFvecs(f, queries) })
	}
	if truth != nil {
		write("_groundtruth_cosine.ivecs", func(f *os.File) error { return WriteIvecs(f, truth) })
	}
}

func TestLoadDir(t *testing.T) {
	ctx := context.Background()
	rng := rand.New(rand.NewPCG(5, 6))
	base, queries := randomVectors(rng, 120, 8), randomVectors(rng, 9, 8)

	t.Run("computes truth", func(t *testing.T) {
		dir := t.TempDir()
		writeSet(t, dir, "toy", base, queries, nil)
		ds, err := LoadDir(ctx, dir)
		if err != nil {
			t.Fatal(err)
		}
		if ds.Name != "toy" || ds.Dim != 8 || len(ds.Base) != 120 || len(ds.Queries) != 9 {
			t.Fatalf("loaded %q dim %d, %d base, %d queries", ds.Name, ds.Dim, len(ds.Base), len(ds.Queries))
		}
		if want := naiveTruth(base, queries, 100); !slices.EqualFunc(ds.Truth, want, slices.Equal) {
			t.Fatal("computed truth differs from the naive ranking")
		}
	})
	t.Run("reads truth", func(t *testing.T) {
		dir := t.TempDir()
		truth := make([][]int, len(queries))
		for i := range truth {
			truth[i] = []int{i, 0, 1}
		}
		writeSet(t, dir, "toy", base, queries, truth)
		ds, err := LoadDir(ctx, dir)
		if err != nil || !slices.EqualFunc(ds.Truth, truth, slices.Equal) {
			t.Fatalf("truth = %v, %v", ds.Truth, err)
		}
		if err := ds.ensureTruth(ctx, 3); err != nil || ds.Truth[2][0] != 2 {
			t.Fatalf("ensureTruth(3) replaced a deep enough file: %v", err)
		}
		if err := ds.ensureTruth(ctx, 5); err != nil || len(ds.Truth[0]) != 100 {
			t.Fatalf("ensureTruth(5) did not deepen the truth: %v", err)
		}
	})

	truncate := func(dir, name string) {
		p := filepath.Join(dir, name)
		st, err := os.Stat(p)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, st.Size()-3); err != nil {
			t.Fatal(err)
		}
	}
	for _, tc := range []struct {
		name  string
		setup func(dir string)
		err   error
	}{
		{"empty dir", func(string) {}, ErrNoDataset},
		{"no queries", func(dir string) { writeSet(t, dir, "a", base, nil, nil) }, ErrNoDataset},
		{"two sets", func(dir string) {
			writeSet(t, dir, "a", base, queries, nil)
			writeSet(t, dir, "b", base, queries, nil)
		}, ErrNoDataset},
		{"truncated base", func(dir string) {
			writeSet(t, dir, "a", base, queries, nil)
			truncate(dir, "a_base.fvecs")
		}, ErrTruncated},
		{"dimension mismatch", func(dir string) { writeSet(t, dir, "a", base, randomVectors(rng, 2, 4), nil) }, ErrDimensionMismatch},
		{"zero vector", func(dir string) { writeSet(t, dir, "a", append(slices.Clone(base), make([]float32, 8)), queries, nil) }, ErrInvalidDataset},
		{"truth out of range", func(dir string) {
			writeSet(t, dir, "a", base, queries, slices.Repeat([][]int{{120}}, len(queries)))
		}, ErrInvalidDataset},
		{"truth rows", func(dir string) { writeSet(t, dir, "a", base, queries, [][]int{{1}}) }, ErrInvalidDataset},
		{"corrupt truth", func(dir string) {
			writeSet(t, dir, "a", base, queries, [][]int{{1}})
			os.WriteFile(filepath.Join(dir, "a_groundtruth_cosine.ivecs"), le(-3), 0o644)
		}, ErrCorrupt},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			tc.setup(dir)
			if _, err := LoadDir(ctx, dir); !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
		})
	}
}

// TestSiftsmallTruth checks the brute-force ground truth against the
// shipped cosine ground truth of siftsmall, when the data is present.
func TestSiftsmallTruth(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "siftsmall")
	if _, err := os.Stat(dir); err != nil {
		t.Skipf("no siftsmall data at %s (see ../shared/data/README.md)", dir)
	}
	ds, err := LoadDir(context.Background(), dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(ds.Base) != 10000 || len(ds.Queries) != 100 || ds.Dim != 128 || len(ds.Truth[0]) != 100 {
		t.Fatalf("siftsmall: %d base, %d queries, dim %d, truth depth %d", len(ds.Base), len(ds.Queries), ds.Dim, len(ds.Truth[0]))
	}
	got, err := GroundTruth(context.Background(), ds.Base, ds.Queries, 10)
	if err != nil {
		t.Fatal(err)
	}
	if r := recallAt(got, ds.Truth, 10); r < 0.999 {
		t.Fatalf("computed top 10 agrees with the shipped file on %.4f", r)
	}
}

// recallAt is the mean share of each truth row's first k ids found among
// the first k of got.
func recallAt(got, truth [][]int, k int) float64 {
	var sum float64
	for i := range truth {
		sum += recallOne(got[i], truth[i], k)
	}
	return sum / float64(len(truth))
}
