package memory

import (
	"errors"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
	"github.com/engramdb/engram/engine"
)

// TestEmbedderRecorded: a store records its embedder with its first
// vector and refuses to open with another one, even of the same dimension
// (before, two models' vectors mixed silently); opened without an
// Embedder, it can be read and searched by BM25, but nothing that needs a
// vector runs.
func TestEmbedderRecorded(t *testing.T) {
	dir := t.TempDir()
	scope := Scope{Tenant: "acme", User: "alice"}
	a := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 384, Model: "a"})
	b := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 384, Model: "b"})
	open := func(e embed.Embedder) (*Store, error) {
		return Open(dir, &Options{Durability: Async, SweepInterval: -1, Embedder: e})
	}

	s, err := open(a)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(bg, scope, Memory{Text: "Alice drives a red car"}); err != nil {
		t.Fatal(err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// Another model of the same dimension, and the default: refused.
	for _, e := range []embed.Embedder{b, mustHashing(t)} {
		if s, err := open(e); !errors.Is(err, ErrEmbedderMismatch) {
			if err == nil {
				s.Close()
			}
			t.Fatalf("open with %v: %v, want ErrEmbedderMismatch", e.(embed.Identifier).Identity(), err)
		}
	}

	// Without an Embedder: readable, BM25 recall works, vectors refused.
	s, err = open(nil)
	if err != nil {
		t.Fatalf("open without an embedder: %v", err)
	}
	ms, err := s.Memories(bg, scope, MemoriesOptions{})
	if err != nil || len(ms) != 1 {
		t.Fatalf("memories: %d, %v", len(ms), err)
	}
	rec, err := s.Recall(bg, Query{Scope: scope, Text: "red car", Retrieval: RetrievalLexical})
	if err != nil || len(rec.Items) == 0 {
		t.Fatalf("lexical recall: %v, %+v", err, rec)
	}
	if _, err := s.Remember(bg, scope, Memory{Text: "Alice likes tea"}); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("remember without the store's embedder: %v, want ErrEmbedderMismatch", err)
	}
	if _, err := s.Recall(bg, Query{Scope: scope, Text: "car", Retrieval: RetrievalVector}); !errors.Is(err, ErrEmbedderMismatch) {
		t.Fatalf("vector recall without the store's embedder: %v, want ErrEmbedderMismatch", err)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}

	// The right one: everything works, and one more memory is there.
	s, err = open(a)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := s.Remember(bg, scope, Memory{Text: "Alice likes tea"}); err != nil {
		t.Fatal(err)
	}
	if ms, err := s.Memories(bg, scope, MemoriesOptions{}); err != nil || len(ms) != 2 {
		t.Fatalf("memories: %d, %v", len(ms), err)
	}
}

// TestEmbedderRecordedDefault: a store of the default embedder records it
// too, so a provider cannot be added to it later by mistake.
func TestEmbedderRecordedDefault(t *testing.T) {
	dir := t.TempDir()
	s, err := Open(dir, &Options{Durability: Async, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := s.Remember(bg, Scope{Tenant: "acme", User: "alice"}, Memory{Text: "x"}); err != nil {
		t.Fatal(err)
	}
	got, ok := s.db.VectorSource()
	if want := (engine.VectorSource{Provider: "hashing", Model: "v1-384", Dimensions: 384}); !ok || got != want {
		t.Fatalf("recorded %v %v, want %v", got, ok, want)
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	f := embedtest.NewFake(&embedtest.FakeOptions{Dimensions: 384})
	if s, err := Open(dir, &Options{Durability: Async, SweepInterval: -1, Embedder: f}); !errors.Is(err, ErrEmbedderMismatch) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("open with a provider: %v, want ErrEmbedderMismatch", err)
	}
}

// TestVectorSourceOfProvider: a network model is recorded by its name, not
// its server's address: the same model served elsewhere is the same source.
func TestVectorSourceOfProvider(t *testing.T) {
	p1, err := embed.NewOllama(&embed.OllamaOptions{BaseURL: "http://localhost:11434/api", Model: "nomic-embed-text", Dimensions: 768})
	if err != nil {
		t.Fatal(err)
	}
	p2, err := embed.NewOllama(&embed.OllamaOptions{BaseURL: "http://gpu-box:11434/api", Model: "nomic-embed-text"})
	if err != nil {
		t.Fatal(err)
	}
	s1, s2 := vectorSource(p1), vectorSource(p2)
	if want := (engine.VectorSource{Provider: "ollama", Model: "nomic-embed-text", Dimensions: 768}); s1 != want {
		t.Fatalf("source %v, want %v", s1, want)
	}
	if !s1.Compatible(s2) {
		t.Fatalf("%v and %v should be compatible", s1, s2)
	}
	// Wrapped in a cache by the caller, it is still the same model (found
	// in review: the cache reported the server too).
	c, err := embed.NewCache(p2, embedtest.NewCacheStore(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if s3 := vectorSource(c); !s1.Compatible(s3) {
		t.Fatalf("cached provider: %v, not compatible with %v", s3, s1)
	}
}

func mustHashing(t *testing.T) *embed.Hashing {
	t.Helper()
	h, err := embed.NewHashing(nil)
	if err != nil {
		t.Fatal(err)
	}
	return h
}
