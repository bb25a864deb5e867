package engine

import (
	"context"
	"fmt"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// The engine names no embed type; its cache store satisfies the interface
// by its method set.
var _ embed.CacheStore = EmbeddingCache{}

// TestEmbeddingCachePersists embeds through the cache, reopens the store and
// embeds again: the second time the provider is not called.
func TestEmbeddingCachePersists(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	texts := []string{"My renewal owner is Dana.", "account 3942", "My renewal owner is Dana."}
	var first [][]float32
	for round := range 2 {
		db, err := Open(dir, nil)
		if err != nil {
			t.Fatal(err)
		}
		fake := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 16})
		cache, err := embed.NewCache(fake, db.EmbeddingCache(), nil)
		if err != nil {
			t.Fatal(err)
		}
		got, err := cache.Embed(ctx, texts)
		if err != nil {
			t.Fatal(err)
		}
		switch round {
		case 0:
			first = got
			if fake.Calls() != 1 {
				t.Fatalf("first round: %d provider calls, want 1", fake.Calls())
			}
		case 1:
			if fake.Calls() != 0 {
				t.Fatalf("after reopen: %d provider calls, want 0 (cache hit)", fake.Calls())
			}
			if fmt.Sprint(got) != fmt.Sprint(first) {
				t.Fatal("cached vectors differ from the computed ones")
			}
			// Erasing one text's hash removes it under every model.
			if err := db.EraseCachedEmbeddings(ctx, embed.ContentHash(texts[0])); err != nil {
				t.Fatal(err)
			}
			vals, err := db.EmbeddingCache().LoadEmbeddings(ctx, [][]byte{
				embed.CacheKey(fake.Identity(), texts[0]),
				embed.CacheKey(fake.Identity(), texts[1]),
			})
			if err != nil || vals[0] != nil || vals[1] == nil {
				t.Fatalf("after erase: %v, %v; want only the first gone", vals, err)
			}
		}
		db.Close()
	}
}

func TestEmbeddingCacheLargeBatch(t *testing.T) {
	ctx := context.Background()
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	// 3,000 vectors of 384 dimensions: about 4.6 MB, more than one
	// transaction takes.
	fake := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 384})
	cache, err := embed.NewCache(fake, db.EmbeddingCache(), nil)
	if err != nil {
		t.Fatal(err)
	}
	texts := make([]string, 3000)
	for i := range texts {
		texts[i] = fmt.Sprint("text ", i)
	}
	if _, err := cache.Embed(ctx, texts); err != nil {
		t.Fatal(err)
	}
	if _, err := cache.Embed(ctx, texts); err != nil || fake.Calls() != 1 {
		t.Fatalf("second embed: %v, %d calls; want all hits", err, fake.Calls())
	}
}

func TestParseKeyLevel(t *testing.T) {
	s := Scope{Tenant: "t", User: "u", Session: "s"}
	for _, tc := range []struct {
		key   []byte
		level Level
		ns    Namespace
		ok    bool
	}{
		{Key(s.Prefix(LevelSession), NSMessage, []byte("id\x00\x01")), LevelSession, NSMessage, true},
		{Key(s.Prefix(LevelUser), NSSessionInfo), LevelUser, NSSessionInfo, true},
		{Key(s.Prefix(LevelTenant), NSSystemMessage), LevelTenant, NSSystemMessage, true},
		{SystemKey(NSEmbeddingCache, []byte("x")), 0, 0, false},
		{[]byte{tagTenant, 't', 0}, 0, 0, false},
		{nil, 0, 0, false},
	} {
		k, ok := ParseKey(tc.key)
		if l, ns := k.Level, k.Namespace; l != tc.level || ns != tc.ns || ok != tc.ok {
			t.Errorf("ParseKey(%q) = %v, %v, %v; want %v, %v, %v", tc.key, l, ns, ok, tc.level, tc.ns, tc.ok)
		}
	}
}
