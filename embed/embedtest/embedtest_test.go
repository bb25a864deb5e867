package embedtest_test

import (
	"context"
	"errors"
	"math"
	"slices"
	"sync"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func TestFake(t *testing.T) {
	ctx := context.Background()
	f := embedtest.NewFake(nil)
	if f.Dimensions() != 8 || f.Identity() != (embed.Identity{Provider: "fake", Model: "fake"}) {
		t.Errorf("defaults: %d dimensions, identity %v", f.Dimensions(), f.Identity())
	}
	vecs, err := f.Embed(ctx, []string{"a", "b", "a", ""})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(vecs[0], vecs[2]) || slices.Equal(vecs[0], vecs[1]) {
		t.Error("equal texts must give equal vectors, different texts different ones")
	}
	for i, v := range vecs {
		var s float64
		for _, x := range v {
			s += float64(x) * float64(x)
		}
		if math.Abs(math.Sqrt(s)-1) > 1e-5 || len(v) != 8 {
			t.Errorf("vector %d: length %d, norm %v", i, len(v), math.Sqrt(s))
		}
	}
	if !slices.Equal(vecs[1], f.Vector("b")) {
		t.Error("Vector differs from Embed")
	}
	// Pinned: the doc promises the same vector in any process.
	want := []float32{-0.17433883, 0.6770306, 0.6688542, 0.25272438}
	if got := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 4}).Vector("a"); !slices.Equal(got, want) {
		t.Errorf("Vector(\"a\") = %v, want %v", got, want)
	}
	if f.Calls() != 1 || !slices.Equal(f.Texts(), []string{"a", "b", "a", ""}) {
		t.Errorf("Calls %d, Texts %q", f.Calls(), f.Texts())
	}
	if v, err := f.Embed(ctx, nil); v != nil || err != nil || f.Calls() != 1 {
		t.Error("empty input must not count as a call")
	}

	boom := errors.New("boom")
	f.FailWith(boom)
	if _, err := f.Embed(ctx, []string{"x"}); !errors.Is(err, boom) {
		t.Errorf("err = %v, want boom", err)
	}
	f.FailWith(nil)
	if _, err := f.Embed(ctx, []string{"x"}); err != nil {
		t.Error(err)
	}
	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := f.Embed(cctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
	f.Reset()
	if f.Calls() != 0 || len(f.Texts()) != 0 {
		t.Error("Reset did not reset")
	}

	big := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 1 << 20, Model: "big"})
	if big.Dimensions() != embed.MaxDimensions || big.Identity().Model != "big" {
		t.Errorf("options: %d dimensions, identity %v", big.Dimensions(), big.Identity())
	}
}

func TestCacheStore(t *testing.T) {
	ctx := context.Background()
	var s embedtest.CacheStore // the zero value works
	vals, err := s.LoadEmbeddings(ctx, [][]byte{[]byte("k")})
	if err != nil || len(vals) != 1 || vals[0] != nil {
		t.Fatalf("empty store: (%q, %v)", vals, err)
	}
	value := []byte("v1")
	if err := s.StoreEmbeddings(ctx, [][]byte{[]byte("k"), []byte("j")}, [][]byte{value, {}}); err != nil {
		t.Fatal(err)
	}
	value[0] = 'X' // the store kept a copy
	vals, err = s.LoadEmbeddings(ctx, [][]byte{[]byte("j"), []byte("k"), []byte("missing")})
	if err != nil {
		t.Fatal(err)
	}
	if vals[0] == nil || len(vals[0]) != 0 || string(vals[1]) != "v1" || vals[2] != nil {
		t.Errorf("loaded %q", vals)
	}
	vals[1][0] = 'Y' // the caller got a copy
	if v, ok := s.Get([]byte("k")); !ok || string(v) != "v1" {
		t.Errorf("Get = (%q, %v)", v, ok)
	}
	s.Put([]byte("a"), []byte("planted"))
	if s.Len() != 3 || s.Loads() != 2 || s.Stores() != 1 {
		t.Errorf("Len %d, Loads %d, Stores %d", s.Len(), s.Loads(), s.Stores())
	}
	if keys := s.Keys(); len(keys) != 3 || string(keys[0]) != "a" || string(keys[2]) != "k" {
		t.Errorf("Keys = %q", keys)
	}
	if err := s.StoreEmbeddings(ctx, [][]byte{[]byte("k")}, nil); err == nil {
		t.Error("no error for mismatched keys and values")
	}
	boom := errors.New("boom")
	s.FailWith(boom)
	if _, err := s.LoadEmbeddings(ctx, nil); !errors.Is(err, boom) {
		t.Errorf("load err = %v", err)
	}
	if err := s.StoreEmbeddings(ctx, nil, nil); !errors.Is(err, boom) {
		t.Errorf("store err = %v", err)
	}
}

func TestConcurrent(t *testing.T) {
	f := embedtest.NewFake(nil)
	s := embedtest.NewCacheStore()
	c, err := embed.NewCache(f, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for range 8 {
		wg.Go(func() {
			for range 50 {
				if _, err := c.Embed(context.Background(), []string{"x", "y"}); err != nil {
					t.Error(err)
				}
				_ = f.Texts()
				_ = s.Keys()
			}
		})
	}
	wg.Wait()
}
