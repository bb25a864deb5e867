package embed

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"strings"
)

// CacheStore persists [Cache] entries. The engine provides one backed by the
// store's key-value layer; embedtest.CacheStore is an in-memory one for
// tests. Implementations must be safe for concurrent use.
type CacheStore interface {
	// LoadEmbeddings returns the stored value of each key, in order: a
	// slice of the same length as keys, with nil for a miss. The Cache does
	// not modify or retain the values.
	LoadEmbeddings(ctx context.Context, keys [][]byte) ([][]byte, error)
	// StoreEmbeddings stores values[i] under keys[i], replacing any value
	// there. The store owns the slices after the call.
	StoreEmbeddings(ctx context.Context, keys, values [][]byte) error
}

// CacheOptions configures [NewCache]. A nil *CacheOptions, and every zero
// field, means the documented default. NewCache copies it: the caller may
// change or share it afterwards.
type CacheOptions struct {
	// Identity keys the entries. The zero Identity means the inner
	// embedder's, which it must then report by implementing [Identifier].
	// Set it to share entries across embedders you know to be
	// interchangeable, such as one model moved to another server.
	Identity Identity
}

// ContentHash returns the SHA-256 of text: the first 32 bytes of every
// [CacheKey] for that text.
func ContentHash(text string) [32]byte {
	return sha256.Sum256([]byte(text))
}

// CacheKey returns the key of the cache entry of text embedded by id:
//
//	ContentHash(text) (32 bytes) || id.Provider || 0x00 || id.Model
//
// This layout is stable: entries written by one release are read by the
// next. The content hash comes first so that every entry for one text, under
// any identity, shares a 32-byte prefix: the engine erases the cached
// embeddings of forgotten text by deleting that prefix. The NUL separator
// keeps ("ab", "c") and ("a", "bc") apart, as long as Provider has no NUL
// ([NewCache] rejects one that does).
func CacheKey(id Identity, text string) []byte {
	h := ContentHash(text)
	key := make([]byte, 0, len(h)+len(id.Provider)+1+len(id.Model))
	key = append(key, h[:]...)
	key = append(key, id.Provider...)
	key = append(key, 0)
	key = append(key, id.Model...)
	return key
}

// Cache is an [Embedder] that remembers the vectors of another one in a
// [CacheStore], keyed by [CacheKey]: identity and content hash. Texts seen
// before, under the same identity, are not embedded again.
//
//	Cache.Embed ──LoadEmbeddings──▶ CacheStore
//	    │ misses only
//	    ▼
//	inner Embedder (Hashing, Provider, ...) ──▶ server, for a Provider
//	    │ new vectors
//	    ▼
//	StoreEmbeddings ──▶ CacheStore
//
// Values are encoded with [AppendVector]. A value that does not decode, or
// whose length differs from the inner embedder's dimension, is treated as a
// miss and overwritten.
//
// A Cache is safe for concurrent use if its inner embedder and store are.
// Two concurrent calls that miss the same text both embed it and both store
// the (equal) result.
type Cache struct {
	inner Embedder
	store CacheStore
	id    Identity
}

// NewCache returns a [Cache] of inner's vectors in store. A nil opts means
// defaults. It returns an error wrapping [ErrInvalidOptions] when inner or
// store is nil, or when neither opts nor inner gives an Identity with a
// non-empty Provider free of NUL bytes.
func NewCache(inner Embedder, store CacheStore, opts *CacheOptions) (*Cache, error) {
	var o CacheOptions
	if opts != nil {
		o = *opts
	}
	var errs []error
	if inner == nil {
		errs = append(errs, errors.New("inner Embedder is nil"))
	}
	if store == nil {
		errs = append(errs, errors.New("CacheStore is nil"))
	}
	id := o.Identity
	if id == (Identity{}) && inner != nil {
		if ider, ok := inner.(Identifier); ok {
			id = ider.Identity()
		}
	}
	switch {
	case id.Provider == "":
		errs = append(errs, errors.New("Identity has no Provider, and the inner Embedder reports none"))
	case strings.IndexByte(id.Provider, 0) >= 0:
		errs = append(errs, fmt.Errorf("Identity.Provider %q contains a NUL byte", id.Provider))
	}
	if err := joinInvalid(errs); err != nil {
		return nil, err
	}
	return &Cache{inner: inner, store: store, id: id}, nil
}

// Identity returns the identity that keys the entries.
func (c *Cache) Identity() Identity { return c.id }

// Inner returns the embedder the cache asks on a miss.
func (c *Cache) Inner() Embedder { return c.inner }

// Dimensions returns the inner embedder's.
func (c *Cache) Dimensions() int { return c.inner.Dimensions() }

// Embed returns one vector per text, in order. It looks every key up in one
// LoadEmbeddings call, embeds the misses (each distinct text once) in one
// call to the inner embedder, and stores the new vectors in one
// StoreEmbeddings call. An empty texts slice returns (nil, nil) without
// touching the store.
//
// Errors from the store and from the inner embedder are returned, wrapped;
// nothing is stored then. It returns an error wrapping [ErrDimensionMismatch]
// or [ErrInvalidVector] when the inner embedder returns unusable vectors.
//
// When the inner embedder does not know its dimension yet (a network
// provider before its first response), cached vectors are checked against
// the dimension of the new ones, and a mismatched hit costs a second inner
// call; with a known dimension there is at most one.
func (c *Cache) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	keys := make([][]byte, len(texts))
	for i, t := range texts {
		keys[i] = CacheKey(c.id, t)
	}
	vals, err := c.store.LoadEmbeddings(ctx, keys)
	if err != nil {
		return nil, fmt.Errorf("embed cache: load: %w", err)
	}
	if len(vals) != len(keys) {
		return nil, fmt.Errorf("embed cache: load returned %d values for %d keys", len(vals), len(keys))
	}
	out := make([][]float32, len(texts))
	for i, b := range vals {
		if b == nil {
			continue
		}
		if v, err := DecodeVector(b); err == nil {
			out[i] = v
		}
	}

	want := c.inner.Dimensions()
	if want > 0 {
		dropWrongLength(out, want)
	} else if !hasMiss(out) && !sameLength(out) {
		// All hits, no dimension to check them against, and they disagree:
		// at least one is wrong, and only a fresh embedding can tell which.
		clear(out)
	}

	var w cacheWrite
	if hasMiss(out) {
		d, err := c.fill(ctx, texts, keys, out, want, &w)
		if err != nil {
			return nil, err
		}
		if want == 0 && dropWrongLength(out, d) {
			// Hits that disagree with what the inner embedder now returns.
			if _, err := c.fill(ctx, texts, keys, out, d, &w); err != nil {
				return nil, err
			}
		}
	}
	if len(w.keys) > 0 {
		if err := c.store.StoreEmbeddings(ctx, w.keys, w.values); err != nil {
			return nil, fmt.Errorf("embed cache: store: %w", err)
		}
	}
	return out, nil
}

// cacheWrite collects the entries one Embed call stores.
type cacheWrite struct {
	keys, values [][]byte
}

// fill embeds the texts whose out entry is nil, each distinct text once, in
// one inner call; assigns the vectors to out and records them in w. want is
// the required length, or 0 for "whatever the inner embedder returns, as long
// as all agree". It returns the length of the new vectors.
func (c *Cache) fill(ctx context.Context, texts []string, keys [][]byte, out [][]float32, want int, w *cacheWrite) (int, error) {
	slot := make(map[string]int) // text -> index in uniq
	var uniq []string
	var first []int // first[j] is the index in texts of uniq[j]
	for i, v := range out {
		if v != nil {
			continue
		}
		if _, ok := slot[texts[i]]; !ok {
			slot[texts[i]] = len(uniq)
			uniq = append(uniq, texts[i])
			first = append(first, i)
		}
	}
	vecs, err := c.inner.Embed(ctx, uniq)
	if err != nil {
		return 0, fmt.Errorf("embed cache: %w", err)
	}
	if len(vecs) != len(uniq) {
		return 0, fmt.Errorf("embed cache: inner embedder returned %d vectors for %d texts: %w", len(vecs), len(uniq), ErrInvalidVector)
	}
	if want == 0 {
		want = len(vecs[0])
	}
	if want == 0 {
		return 0, fmt.Errorf("embed cache: inner embedder returned an empty vector: %w", ErrInvalidVector)
	}
	for j, v := range vecs {
		if len(v) != want {
			return 0, fmt.Errorf("embed cache: inner embedder returned %d dimensions for text %d, want %d: %w", len(v), first[j], want, ErrDimensionMismatch)
		}
	}
	for j, v := range vecs {
		w.keys = append(w.keys, keys[first[j]])
		w.values = append(w.values, AppendVector(nil, v))
	}
	for i := range out {
		if out[i] != nil {
			continue
		}
		j := slot[texts[i]]
		if i == first[j] {
			out[i] = vecs[j]
		} else {
			// A duplicate gets its own copy: the caller owns every vector
			// and may modify one without changing another.
			out[i] = slices.Clone(vecs[j])
		}
	}
	return want, nil
}

// dropWrongLength sets to nil every vector of out whose length is not want,
// and reports whether it dropped any.
func dropWrongLength(out [][]float32, want int) bool {
	dropped := false
	for i, v := range out {
		if v != nil && len(v) != want {
			out[i] = nil
			dropped = true
		}
	}
	return dropped
}

// hasMiss reports whether some vector of out is nil.
func hasMiss(out [][]float32) bool {
	for _, v := range out {
		if v == nil {
			return true
		}
	}
	return false
}

// sameLength reports whether every vector of out has the same length.
func sameLength(out [][]float32) bool {
	for _, v := range out {
		if len(v) != len(out[0]) {
			return false
		}
	}
	return true
}
