package bench

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	chromem "github.com/philippgille/chromem-go"
)

// chromemSystem is the exact-search peer: an in-memory chromem-go
// collection given precomputed embeddings, queried with QueryEmbedding.
//
// What chromem-go v0.7.0 does, read from its source:
//   - AddDocument stores the embedding as given if it has unit norm (to
//     1e-6) and a normalised copy otherwise; ids are strings, documents
//     live in a map.
//   - QueryEmbedding takes the collection's read lock, copies every
//     document pointer into a slice (filterDocs), normalises the query if
//     needed, then scans all documents with a plain Go dot-product loop (no
//     SIMD) split over runtime.NumCPU() goroutines, with a mutex-guarded
//     top-k heap. Run times it under GOMAXPROCS 1 like every system, so its
//     goroutines share one thread.
//   - A nil EmbeddingFunc silently means OpenAI (a network call), so the
//     collection gets one that always fails: nothing is ever embedded.
//   - Add and AddDocuments start one goroutine per document whatever the
//     concurrency, so Build calls AddDocument in a loop instead.
type chromemSystem struct {
	coll *chromem.Collection
}

func newChromem(config) System { return &chromemSystem{} }

// errNoEmbedding is what the collection's embedding function returns: the
// harness only ever passes precomputed vectors.
var errNoEmbedding = errors.New("bench: chromem-go asked to embed text; vectors are precomputed")

func (c *chromemSystem) Name() string { return "chromem-go" }

func (c *chromemSystem) Build(ctx context.Context, base [][]float32) error {
	db := chromem.NewDB()
	coll, err := db.CreateCollection("bench", nil, func(context.Context, string) ([]float32, error) {
		return nil, errNoEmbedding
	})
	if err != nil {
		return fmt.Errorf("chromem-go: %w", err)
	}
	for i, v := range ownedCopy(base) {
		if err := coll.AddDocument(ctx, chromem.Document{ID: strconv.Itoa(i), Embedding: v}); err != nil {
			return fmt.Errorf("chromem-go: add %d: %w", i, err)
		}
	}
	c.coll = coll
	return nil
}

func (c *chromemSystem) Sweep() []int { return nil }

func (c *chromemSystem) Search(dst []int, q []float32, k, _ int) ([]int, error) {
	if c.coll == nil {
		return dst, errors.New("chromem-go: search before build")
	}
	res, err := c.coll.QueryEmbedding(context.Background(), q, min(k, c.coll.Count()), nil, nil)
	if err != nil {
		return dst, fmt.Errorf("chromem-go: %w", err)
	}
	for _, r := range res {
		id, err := strconv.Atoi(r.ID)
		if err != nil {
			return dst, fmt.Errorf("chromem-go: result id %q: %w", r.ID, err)
		}
		dst = append(dst, id)
	}
	return dst, nil
}

func (c *chromemSystem) Params(int) string { return "exact" }

func (c *chromemSystem) slowExact() {}
