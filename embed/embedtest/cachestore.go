package embedtest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/engramdb/engram/embed"
)

// CacheStore is an in-memory [embed.CacheStore] for tests: a map under a
// mutex. It copies keys and values in both directions, so neither the cache
// nor the test can change an entry behind the other's back. It counts calls
// and fails on demand ([CacheStore.FailWith]).
//
// The zero value is an empty store ready to use. A CacheStore is safe for
// concurrent use.
type CacheStore struct {
	mu struct {
		sync.Mutex
		m      map[string][]byte
		loads  int
		stores int
		err    error
	}
}

// NewCacheStore returns an empty [CacheStore].
func NewCacheStore() *CacheStore { return &CacheStore{} }

// LoadEmbeddings returns a copy of the value of each key, nil for a miss, or
// the error set by [CacheStore.FailWith]. Every call is counted.
func (s *CacheStore) LoadEmbeddings(ctx context.Context, keys [][]byte) ([][]byte, error) {
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embedtest load: %w", err)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.loads++
	if s.mu.err != nil {
		return nil, s.mu.err
	}
	out := make([][]byte, len(keys))
	for i, k := range keys {
		if v, ok := s.mu.m[string(k)]; ok {
			out[i] = bytes.Clone(v)
		}
	}
	return out, nil
}

// StoreEmbeddings stores a copy of each value under its key, or returns the
// error set by [CacheStore.FailWith] and stores nothing. Every call is
// counted.
func (s *CacheStore) StoreEmbeddings(ctx context.Context, keys, values [][]byte) error {
	if err := ctx.Err(); err != nil {
		return fmt.Errorf("embedtest store: %w", err)
	}
	if len(keys) != len(values) {
		return fmt.Errorf("embedtest store: %d keys but %d values", len(keys), len(values))
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	s.mu.stores++
	if s.mu.err != nil {
		return s.mu.err
	}
	for i, k := range keys {
		s.putLocked(k, values[i])
	}
	return nil
}

// Get returns a copy of the value stored under key.
func (s *CacheStore) Get(key []byte) ([]byte, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	v, ok := s.mu.m[string(key)]
	return bytes.Clone(v), ok
}

// Put stores a copy of value under key, as a test would plant an entry
// (a corrupt one, say). It is not counted as a StoreEmbeddings call.
func (s *CacheStore) Put(key, value []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.putLocked(key, value)
}

func (s *CacheStore) putLocked(key, value []byte) {
	if s.mu.m == nil {
		s.mu.m = make(map[string][]byte)
	}
	v := bytes.Clone(value)
	if v == nil {
		v = []byte{} // an empty value is stored, and is not a miss
	}
	s.mu.m[string(key)] = v
}

// Keys returns the stored keys in sorted order. The caller owns them.
func (s *CacheStore) Keys() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([][]byte, 0, len(s.mu.m))
	for k := range s.mu.m {
		keys = append(keys, []byte(k))
	}
	slices.SortFunc(keys, bytes.Compare)
	return keys
}

// Len returns the number of entries.
func (s *CacheStore) Len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.mu.m)
}

// Loads returns the number of LoadEmbeddings calls, failed ones included.
func (s *CacheStore) Loads() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.loads
}

// Stores returns the number of StoreEmbeddings calls, failed ones included.
func (s *CacheStore) Stores() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.mu.stores
}

// FailWith makes every later LoadEmbeddings and StoreEmbeddings call return
// err, until FailWith(nil).
func (s *CacheStore) FailWith(err error) {
	s.mu.Lock()
	s.mu.err = err
	s.mu.Unlock()
}

var _ embed.CacheStore = (*CacheStore)(nil)
