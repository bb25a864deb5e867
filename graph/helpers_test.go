package graph

import (
	"context"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/kv"
)

var testRoot = []byte("\x01acme\x00alice\x00\x07")

// fakeClock is a settable clock for Store.now.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *fakeClock) now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

// newTestGraph opens an in-memory kv store and a graph Store on it whose
// clock the test controls.
func newTestGraph(t testing.TB, opts *Options) (*Store, *kv.DB, *fakeClock) {
	t.Helper()
	db, err := kv.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
	s.now = clock.now
	return s, db, clock
}

func update(t testing.TB, s *Store, db *kv.DB, fn func(*Tx) error) {
	t.Helper()
	if err := s.Update(context.Background(), db, testRoot, fn); err != nil {
		t.Fatal(err)
	}
}

func view(t testing.TB, s *Store, db *kv.DB, fn func(*Tx) error) {
	t.Helper()
	if err := s.View(context.Background(), db, testRoot, fn); err != nil {
		t.Fatal(err)
	}
}
