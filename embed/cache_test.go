package embed_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

var errBoom = errors.New("boom")

func newCache(t *testing.T, inner embed.Embedder, store embed.CacheStore) *embed.Cache {
	t.Helper()
	c, err := embed.NewCache(inner, store, nil)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// checkVectors fails unless vecs are fake's vectors of texts.
func checkVectors(t *testing.T, fake *embedtest.Fake, texts []string, vecs [][]float32) {
	t.Helper()
	if len(vecs) != len(texts) {
		t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
	}
	for i, text := range texts {
		if !slices.Equal(vecs[i], fake.Vector(text)) {
			t.Errorf("vector %d (%q) is not the inner embedder's", i, text)
		}
	}
}

func TestCacheKey(t *testing.T) {
	id := embed.Identity{Provider: "ollama", Model: "nomic-embed-text@localhost:11434/api"}
	key := embed.CacheKey(id, "hello")
	h := sha256.Sum256([]byte("hello"))
	if h != embed.ContentHash("hello") {
		t.Fatal("ContentHash is not SHA-256")
	}
	want := append(append(append(h[:], "ollama"...), 0), "nomic-embed-text@localhost:11434/api"...)
	if !bytes.Equal(key, want) {
		t.Errorf("CacheKey = %x, want %x", key, want)
	}
	// The layout is stable: pin one key byte for byte.
	const pinned = "2cf24dba5fb0a30e26e83b2ac5b9e29e1b161e5c1fa7425e73043362938b9824" + "6861736869" + "6e67" + "00" + "76312d333834"
	if got := hex.EncodeToString(embed.CacheKey(embed.Identity{Provider: "hashing", Model: "v1-384"}, "hello")); got != pinned {
		t.Errorf("CacheKey layout changed:\n got %s\nwant %s", got, pinned)
	}
	// Every entry of one text shares the 32-byte content-hash prefix; the
	// separator keeps provider and model apart.
	a := embed.CacheKey(embed.Identity{Provider: "ab", Model: "c"}, "t")
	b := embed.CacheKey(embed.Identity{Provider: "a", Model: "bc"}, "t")
	if !bytes.Equal(a[:32], b[:32]) || bytes.Equal(a, b) {
		t.Errorf("keys %x and %x: want a shared prefix and different keys", a, b)
	}
}

func TestCacheHits(t *testing.T) {
	fake := embedtest.NewFake(nil)
	store := embedtest.NewCacheStore()
	c := newCache(t, fake, store)
	ctx := context.Background()
	texts := []string{"alpha", "bravo", "charlie"}

	vecs, err := c.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, fake, texts, vecs)
	if fake.Calls() != 1 || store.Loads() != 1 || store.Stores() != 1 || store.Len() != 3 {
		t.Errorf("first call: %d inner calls, %d loads, %d stores, %d entries; want 1, 1, 1, 3",
			fake.Calls(), store.Loads(), store.Stores(), store.Len())
	}

	// All hits: no inner call, no store call.
	vecs, err = c.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, fake, texts, vecs)
	if fake.Calls() != 1 || store.Loads() != 2 || store.Stores() != 1 {
		t.Errorf("second call: %d inner calls, %d loads, %d stores; want 1, 2, 1", fake.Calls(), store.Loads(), store.Stores())
	}

	// A new Cache over the same store (a restart) still hits.
	c2 := newCache(t, fake, store)
	if _, err := c2.Embed(ctx, texts); err != nil {
		t.Fatal(err)
	}
	if fake.Calls() != 1 {
		t.Errorf("after restart: %d inner calls, want 1", fake.Calls())
	}
}

func TestCachePartialHits(t *testing.T) {
	fake := embedtest.NewFake(nil)
	store := embedtest.NewCacheStore()
	c := newCache(t, fake, store)
	ctx := context.Background()
	if _, err := c.Embed(ctx, []string{"alpha", "charlie"}); err != nil {
		t.Fatal(err)
	}
	fake.Reset()
	texts := []string{"alpha", "bravo", "charlie", "delta"}
	vecs, err := c.Embed(ctx, texts)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, fake, texts, vecs)
	if got := fake.Texts(); !slices.Equal(got, []string{"bravo", "delta"}) || fake.Calls() != 1 {
		t.Errorf("inner embedded %q in %d calls, want [bravo delta] in 1", got, fake.Calls())
	}
	if store.Len() != 4 {
		t.Errorf("%d entries, want 4", store.Len())
	}
}

func TestCacheDuplicates(t *testing.T) {
	fake := embedtest.NewFake(nil)
	store := embedtest.NewCacheStore()
	c := newCache(t, fake, store)
	texts := []string{"same", "other", "same", "same", "other"}
	vecs, err := c.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	checkVectors(t, fake, texts, vecs)
	if got := fake.Texts(); !slices.Equal(got, []string{"same", "other"}) {
		t.Errorf("inner embedded %q, want each distinct text once", got)
	}
	if store.Len() != 2 {
		t.Errorf("%d entries, want 2", store.Len())
	}
	// The caller owns every vector: changing one changes no other.
	vecs[0][0] = 42
	if vecs[2][0] == 42 || vecs[3][0] == 42 {
		t.Error("duplicate texts share one vector")
	}
}

func TestCacheCorruptEntries(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		value []byte
	}{
		{"garbage", []byte("not a vector")},
		{"empty", []byte{}},
		{"truncated", embed.AppendVector(nil, make([]float32, 8))[:20]},
		{"wrong dimension", embed.AppendVector(nil, []float32{0.6, 0.8})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fake := embedtest.NewFake(nil)
			store := embedtest.NewCacheStore()
			c := newCache(t, fake, store)
			key := embed.CacheKey(fake.Identity(), "alpha")
			store.Put(key, tc.value)

			texts := []string{"alpha", "bravo"}
			vecs, err := c.Embed(ctx, texts)
			if err != nil {
				t.Fatalf("a corrupt entry is a miss, not an error: %v", err)
			}
			checkVectors(t, fake, texts, vecs)
			if got := fake.Texts(); !slices.Equal(got, texts) || fake.Calls() != 1 {
				t.Errorf("inner embedded %q in %d calls, want both texts in 1", got, fake.Calls())
			}
			// Overwritten with a good entry: the next call hits.
			stored, _ := store.Get(key)
			if v, err := embed.DecodeVector(stored); err != nil || !slices.Equal(v, fake.Vector("alpha")) {
				t.Errorf("entry not repaired: (%v, %v)", v, err)
			}
			if _, err := c.Embed(ctx, texts); err != nil || fake.Calls() != 1 {
				t.Errorf("after repair: err %v, %d inner calls, want 1", err, fake.Calls())
			}
		})
	}
}

func TestCacheIdentitySeparation(t *testing.T) {
	ctx := context.Background()
	store := embedtest.NewCacheStore()
	small := embedtest.NewFake(&embedtest.FakeOptions{Model: "small"})
	large := embedtest.NewFake(&embedtest.FakeOptions{Model: "large", Dimensions: 16})
	cs, cl := newCache(t, small, store), newCache(t, large, store)

	for range 2 {
		vs, err := cs.Embed(ctx, []string{"text"})
		if err != nil {
			t.Fatal(err)
		}
		vl, err := cl.Embed(ctx, []string{"text"})
		if err != nil {
			t.Fatal(err)
		}
		if len(vs[0]) != 8 || len(vl[0]) != 16 {
			t.Fatalf("lengths %d and %d: entries mixed between models", len(vs[0]), len(vl[0]))
		}
	}
	if small.Calls() != 1 || large.Calls() != 1 {
		t.Errorf("inner calls %d and %d, want 1 each", small.Calls(), large.Calls())
	}
	keys := store.Keys()
	if len(keys) != 2 {
		t.Fatalf("%d entries, want one per model", len(keys))
	}
	// Both entries of the text share its content-hash prefix, which is how
	// the engine erases a forgotten text's embeddings.
	prefix := embed.ContentHash("text")
	for _, k := range keys {
		if !bytes.HasPrefix(k, prefix[:]) {
			t.Errorf("key %x lacks the content-hash prefix", k)
		}
	}

	// An explicit identity overrides the inner one.
	shared, err := embed.NewCache(large, store, &embed.CacheOptions{Identity: small.Identity()})
	if err != nil {
		t.Fatal(err)
	}
	if shared.Identity() != small.Identity() {
		t.Errorf("Identity() = %v, want %v", shared.Identity(), small.Identity())
	}
}

// failingStore wraps a store and fails only StoreEmbeddings.
type failingStore struct {
	embed.CacheStore
	err error
}

func (s failingStore) StoreEmbeddings(context.Context, [][]byte, [][]byte) error { return s.err }

// shortStore returns too few values.
type shortStore struct{ embed.CacheStore }

func (shortStore) LoadEmbeddings(context.Context, [][]byte) ([][]byte, error) {
	return [][]byte{nil}, nil
}

func TestCacheErrors(t *testing.T) {
	ctx := context.Background()
	texts := []string{"a", "b"}

	t.Run("load", func(t *testing.T) {
		fake, store := embedtest.NewFake(nil), embedtest.NewCacheStore()
		store.FailWith(errBoom)
		_, err := newCache(t, fake, store).Embed(ctx, texts)
		if !errors.Is(err, errBoom) {
			t.Errorf("err = %v, want the store's", err)
		}
		if fake.Calls() != 0 {
			t.Error("inner called after a failed load")
		}
	})
	t.Run("store", func(t *testing.T) {
		fake := embedtest.NewFake(nil)
		_, err := newCache(t, fake, failingStore{embedtest.NewCacheStore(), errBoom}).Embed(ctx, texts)
		if !errors.Is(err, errBoom) {
			t.Errorf("err = %v, want the store's", err)
		}
	})
	t.Run("short load", func(t *testing.T) {
		_, err := newCache(t, embedtest.NewFake(nil), shortStore{embedtest.NewCacheStore()}).Embed(ctx, texts)
		if err == nil {
			t.Error("no error for a load that returned too few values")
		}
	})
	t.Run("inner", func(t *testing.T) {
		fake, store := embedtest.NewFake(nil), embedtest.NewCacheStore()
		fake.FailWith(errBoom)
		_, err := newCache(t, fake, store).Embed(ctx, texts)
		if !errors.Is(err, errBoom) {
			t.Errorf("err = %v, want the inner embedder's", err)
		}
		if store.Stores() != 0 || store.Len() != 0 {
			t.Error("stored something after the inner embedder failed")
		}
	})
	t.Run("cancelled", func(t *testing.T) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := newCache(t, embedtest.NewFake(nil), embedtest.NewCacheStore()).Embed(cctx, texts)
		if !errors.Is(err, context.Canceled) {
			t.Errorf("err = %v, want context.Canceled", err)
		}
	})
	t.Run("empty input", func(t *testing.T) {
		fake, store := embedtest.NewFake(nil), embedtest.NewCacheStore()
		vecs, err := newCache(t, fake, store).Embed(ctx, nil)
		if err != nil || vecs != nil || store.Loads() != 0 || fake.Calls() != 0 {
			t.Errorf("Embed(nil) = (%v, %v) with %d loads, %d inner calls", vecs, err, store.Loads(), fake.Calls())
		}
	})
}

// stubEmbedder returns whatever embed says, and reports dims.
type stubEmbedder struct {
	mu    sync.Mutex
	dims  int
	calls [][]string
	embed func(texts []string) [][]float32
}

func (s *stubEmbedder) Embed(_ context.Context, texts []string) ([][]float32, error) {
	s.mu.Lock()
	s.calls = append(s.calls, slices.Clone(texts))
	s.mu.Unlock()
	return s.embed(texts), nil
}

func (s *stubEmbedder) Dimensions() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.dims
}

func (s *stubEmbedder) Identity() embed.Identity { return embed.Identity{Provider: "stub", Model: "m"} }

func constantVectors(dims int) func([]string) [][]float32 {
	return func(texts []string) [][]float32 {
		out := make([][]float32, len(texts))
		for i := range out {
			out[i] = make([]float32, dims)
			out[i][0] = 1
		}
		return out
	}
}

func TestCacheBadInner(t *testing.T) {
	ctx := context.Background()
	for _, tc := range []struct {
		name  string
		inner *stubEmbedder
		want  error
	}{
		{"too few vectors", &stubEmbedder{dims: 4, embed: func(texts []string) [][]float32 { return constantVectors(4)(texts[1:]) }}, embed.ErrInvalidVector},
		{"empty vectors", &stubEmbedder{embed: constantVectorsOrEmpty}, embed.ErrInvalidVector},
		{"wrong dimension", &stubEmbedder{dims: 4, embed: constantVectors(5)}, embed.ErrDimensionMismatch},
		{"mixed dimensions", &stubEmbedder{embed: func(texts []string) [][]float32 {
			out := constantVectors(4)(texts)
			out[1] = out[1][:3]
			return out
		}}, embed.ErrDimensionMismatch},
	} {
		t.Run(tc.name, func(t *testing.T) {
			store := embedtest.NewCacheStore()
			_, err := newCache(t, tc.inner, store).Embed(ctx, []string{"a", "b"})
			if !errors.Is(err, tc.want) {
				t.Errorf("err = %v, want %v", err, tc.want)
			}
			if store.Len() != 0 {
				t.Error("stored vectors from a misbehaving embedder")
			}
		})
	}
}

func constantVectorsOrEmpty(texts []string) [][]float32 { return make([][]float32, len(texts)) }

// TestCacheUnknownDimension covers an inner embedder that does not know its
// dimension yet (a network provider before its first response).
func TestCacheUnknownDimension(t *testing.T) {
	ctx := context.Background()
	t.Run("stale hit re-embedded", func(t *testing.T) {
		inner := &stubEmbedder{embed: constantVectors(8)}
		store := embedtest.NewCacheStore()
		store.Put(embed.CacheKey(inner.Identity(), "old"), embed.AppendVector(nil, []float32{1, 0, 0}))
		vecs, err := newCache(t, inner, store).Embed(ctx, []string{"old", "new"})
		if err != nil {
			t.Fatal(err)
		}
		if len(vecs[0]) != 8 || len(vecs[1]) != 8 {
			t.Errorf("lengths %d, %d; want 8, 8", len(vecs[0]), len(vecs[1]))
		}
		if want := [][]string{{"new"}, {"old"}}; !slices.EqualFunc(inner.calls, want, slices.Equal) {
			t.Errorf("inner calls %q, want %q", inner.calls, want)
		}
		if store.Stores() != 1 {
			t.Errorf("%d store calls, want 1", store.Stores())
		}
	})
	t.Run("all hits that disagree", func(t *testing.T) {
		inner := &stubEmbedder{embed: constantVectors(8)}
		store := embedtest.NewCacheStore()
		store.Put(embed.CacheKey(inner.Identity(), "a"), embed.AppendVector(nil, []float32{1, 0, 0}))
		store.Put(embed.CacheKey(inner.Identity(), "b"), embed.AppendVector(nil, []float32{1, 0, 0, 0}))
		vecs, err := newCache(t, inner, store).Embed(ctx, []string{"a", "b"})
		if err != nil {
			t.Fatal(err)
		}
		if len(vecs[0]) != 8 || len(vecs[1]) != 8 {
			t.Errorf("lengths %d, %d; want 8, 8", len(vecs[0]), len(vecs[1]))
		}
	})
	t.Run("all hits that agree", func(t *testing.T) {
		inner := &stubEmbedder{embed: constantVectors(8)}
		store := embedtest.NewCacheStore()
		store.Put(embed.CacheKey(inner.Identity(), "a"), embed.AppendVector(nil, []float32{1, 0, 0}))
		vecs, err := newCache(t, inner, store).Embed(ctx, []string{"a", "a"})
		if err != nil {
			t.Fatal(err)
		}
		if len(inner.calls) != 0 || len(vecs[0]) != 3 {
			t.Errorf("%d inner calls and length %d; want 0 and the cached 3", len(inner.calls), len(vecs[0]))
		}
	})
}

// anonymous hides the Identifier of the embedder it wraps.
type anonymous struct{ embed.Embedder }

func TestNewCacheOptions(t *testing.T) {
	fake, store := embedtest.NewFake(nil), embedtest.NewCacheStore()
	for _, tc := range []struct {
		name    string
		inner   embed.Embedder
		store   embed.CacheStore
		opts    *embed.CacheOptions
		wantErr []string
		wantID  embed.Identity
	}{
		{"from inner", fake, store, nil, nil, fake.Identity()},
		{"explicit", anonymous{fake}, store, &embed.CacheOptions{Identity: embed.Identity{Provider: "p", Model: "m"}}, nil, embed.Identity{Provider: "p", Model: "m"}},
		{"no identity", anonymous{fake}, store, nil, []string{"Provider"}, embed.Identity{}},
		{"model without provider", fake, store, &embed.CacheOptions{Identity: embed.Identity{Model: "m"}}, []string{"Provider"}, embed.Identity{}},
		{"NUL in provider", fake, store, &embed.CacheOptions{Identity: embed.Identity{Provider: "a\x00b"}}, []string{"NUL"}, embed.Identity{}},
		{"nil everything", nil, nil, nil, []string{"inner", "CacheStore", "Provider"}, embed.Identity{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c, err := embed.NewCache(tc.inner, tc.store, tc.opts)
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if c.Identity() != tc.wantID {
					t.Errorf("Identity() = %v, want %v", c.Identity(), tc.wantID)
				}
				if c.Dimensions() != fake.Dimensions() {
					t.Errorf("Dimensions() = %d, want the inner %d", c.Dimensions(), fake.Dimensions())
				}
				return
			}
			if !errors.Is(err, embed.ErrInvalidOptions) || c != nil {
				t.Fatalf("got (%v, %v), want ErrInvalidOptions", c, err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
		})
	}
}

func TestCacheConcurrent(t *testing.T) {
	fake := embedtest.NewFake(nil)
	c := newCache(t, fake, embedtest.NewCacheStore())
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Go(func() {
			for i := range 20 {
				texts := []string{"shared", "text " + string(rune('a'+g)), "round " + string(rune('a'+i))}
				vecs, err := c.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				for j, text := range texts {
					if !slices.Equal(vecs[j], fake.Vector(text)) {
						t.Errorf("goroutine %d: wrong vector for %q", g, text)
					}
				}
			}
		})
	}
	wg.Wait()
}

// TestCacheOverHashing runs the real offline embedder behind the cache.
func TestCacheOverHashing(t *testing.T) {
	h := newHashing(t, 0)
	store := embedtest.NewCacheStore()
	c := newCache(t, h, store)
	texts := []string{"Alice prefers dark roast", "Bob drives a blue car"}
	direct, err := h.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		cached, err := c.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		assertBitIdentical(t, cached, direct)
	}
	if c.Identity() != h.Identity() || store.Len() != 2 {
		t.Errorf("identity %v, %d entries", c.Identity(), store.Len())
	}
}
