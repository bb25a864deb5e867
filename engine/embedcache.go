package engine

import (
	"context"
	"errors"
)

// EmbeddingCache returns the database's embedding cache store.
func (db *DB) EmbeddingCache() EmbeddingCache { return EmbeddingCache{db} }

// EmbeddingCache keeps cached embeddings in a [DB], for
// [github.com/engramdb/engram/embed.NewCache]: its methods are those of
// [github.com/engramdb/engram/embed.CacheStore], which it satisfies
// without this package importing embed. Cached vectors survive restarts,
// are encrypted with the store, and are erased by
// [DB.EraseCachedEmbeddings]. Get one from [DB.EmbeddingCache]; the zero
// value has no DB. It is safe for concurrent use, as the DB is.
type EmbeddingCache struct{ db *DB }

// LoadEmbeddings returns the cached value of each key, nil for a miss.
func (c EmbeddingCache) LoadEmbeddings(ctx context.Context, keys [][]byte) ([][]byte, error) {
	out := make([][]byte, len(keys))
	err := c.db.View(ctx, func(tx *Tx) error {
		for i, k := range keys {
			v, err := tx.Get(SystemKey(NSEmbeddingCache, k))
			switch {
			case err == nil:
				out[i] = v
			case !errors.Is(err, ErrNotFound):
				return err
			}
		}
		return nil
	})
	return out, err
}

// cacheBatchBytes bounds one transaction of cache writes, well inside the
// storage layer's per-transaction limit (about 1.2 MB with the defaults).
const cacheBatchBytes = 512 << 10

// StoreEmbeddings writes the entries in transactions of bounded size.
func (c EmbeddingCache) StoreEmbeddings(ctx context.Context, keys, values [][]byte) error {
	if len(keys) != len(values) {
		return errors.New("engine: StoreEmbeddings: keys and values differ in length")
	}
	for start := 0; start < len(keys); {
		end, size := start, 0
		for end < len(keys) && (end == start || size+len(keys[end])+len(values[end]) <= cacheBatchBytes) {
			size += len(keys[end]) + len(values[end])
			end++
		}
		// A cache: a lost write is computed again, so no reader (a
		// Recall embedding its query) waits for an fsync.
		err := c.db.UpdateNoSync(ctx, func(tx *Tx) error {
			for i := start; i < end; i++ {
				if err := tx.Set(SystemKey(NSEmbeddingCache, keys[i]), values[i]); err != nil {
					return err
				}
			}
			return nil
		})
		if err != nil {
			return err
		}
		start = end
	}
	return nil
}

// EraseCachedEmbeddings deletes the cached vectors of texts, under every
// provider and model: an [github.com/engramdb/engram/embed.CacheKey] starts with the text's content
// hash, so one prefix covers them all.
func (db *DB) EraseCachedEmbeddings(ctx context.Context, hashes ...[32]byte) error {
	for _, h := range hashes {
		if _, err := db.ErasePrefix(ctx, SystemKey(NSEmbeddingCache, h[:]), nil); err != nil {
			return err
		}
	}
	return nil
}
