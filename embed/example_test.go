package embed_test

import (
	"context"
	"fmt"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

func ExampleNewHashing() {
	h, err := embed.NewHashing(nil) // offline: no model, no network
	if err != nil {
		fmt.Println(err)
		return
	}
	vecs, err := h.Embed(context.Background(), []string{
		"Alice prefers dark roast coffee in the morning",
		"In the morning Alice likes dark-roast coffee",
		"Bob is renewing his car insurance policy",
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	dot := func(a, b []float32) (s float32) {
		for i := range a {
			s += a[i] * b[i]
		}
		return s
	}
	fmt.Println("identity:", h.Identity())
	fmt.Println("dimensions:", len(vecs[0]))
	fmt.Println("paraphrase closer than unrelated:", dot(vecs[0], vecs[1]) > dot(vecs[0], vecs[2]))
	// Output:
	// identity: hashing/v1-384
	// dimensions: 384
	// paraphrase closer than unrelated: true
}

func ExampleNewCache() {
	h, err := embed.NewHashing(nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	// The engine passes a CacheStore backed by its key-value store.
	store := embedtest.NewCacheStore()
	c, err := embed.NewCache(h, store, nil)
	if err != nil {
		fmt.Println(err)
		return
	}
	ctx := context.Background()
	for _, texts := range [][]string{{"renewal owner is Dana"}, {"renewal owner is Dana", "account 3942"}} {
		if _, err := c.Embed(ctx, texts); err != nil {
			fmt.Println(err)
			return
		}
		fmt.Println("entries:", store.Len(), "store writes:", store.Stores())
	}
	// Output:
	// entries: 1 store writes: 1
	// entries: 2 store writes: 2
}

func ExampleNewOllama() {
	// Constructing a provider makes no request; Embed sends each text to the
	// server.
	p, err := embed.NewOllama(&embed.OllamaOptions{Model: "nomic-embed-text"})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(p.Identity())
	fmt.Println("dimensions known:", p.Dimensions() != 0)
	// Output:
	// ollama/nomic-embed-text@localhost:11434/api
	// dimensions known: false
}
