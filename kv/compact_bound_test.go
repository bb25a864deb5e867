package kv

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/engramdb/engram/kv/kvtest"
)

// stuckGC stands in for Badger's value-log GC: it signals that it runs,
// then waits for release, then runs the real GC on the handle it was
// given (which must still be open) and reports that GC's error.
type stuckGC struct {
	running, release chan struct{}
	result           chan error
}

func newStuckGC() *stuckGC {
	return &stuckGC{running: make(chan struct{}, 1), release: make(chan struct{}), result: make(chan error, 1)}
}

func (g *stuckGC) run(bdb *badger.DB) error {
	select {
	case g.running <- struct{}{}:
	default:
	}
	<-g.release
	err := bdb.RunValueLogGC(0.01)
	select {
	case g.result <- err:
	default:
	}
	return err
}

// within runs f and fails the test if it has not returned within d.
func within[T any](t *testing.T, d time.Duration, what string, f func() T) T {
	t.Helper()
	done := make(chan T, 1)
	go func() { done <- f() }()
	select {
	case v := <-done:
		return v
	case <-time.After(d):
		t.Fatalf("%s did not return within %v", what, d)
		panic("unreachable")
	}
}

// TestCompactStalledGCBounded is issue 26's wedge with the spin stood in
// for: a value-log GC call that does not return. Compact returns at its
// context's deadline, transactions go on meanwhile, a second Compact
// gives up at its own deadline, Close returns ErrStalled after closeWait
// and refuses new calls, and once the call returns a second Close closes
// Badger and frees the directory.
func TestCompactStalledGCBounded(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's value-log GC")
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	gc := newStuckGC()
	db.valueLogGC = gc.run
	db.closeWait = 300 * time.Millisecond
	released := false
	t.Cleanup(func() {
		if !released {
			close(gc.release)
		}
		db.Close()
	})
	put := func(k string) error {
		return db.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte(k), []byte("v")) })
	}
	if err := put("before"); err != nil {
		t.Fatal(err)
	}

	ctx, cancel := context.WithTimeout(context.Background(), 300*time.Millisecond)
	defer cancel()
	err = within(t, 10*time.Second, "Compact with a stalled GC", func() error { return db.Compact(ctx) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Compact = %v; want its context's deadline", err)
	}
	<-gc.running
	// The store's locks are free: reads and writes go on.
	if err := within(t, 10*time.Second, "Update during the stalled GC", func() error { return put("during") }); err != nil {
		t.Fatalf("Update during the stalled GC = %v", err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel2()
	err = within(t, 10*time.Second, "a second Compact", func() error { return db.Compact(ctx2) })
	if !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("second Compact = %v; want its context's deadline", err)
	}

	err = within(t, 10*time.Second, "Close with a stalled GC", db.Close)
	if !errors.Is(err, ErrStalled) {
		t.Fatalf("Close = %v; want ErrStalled", err)
	}
	if err := put("after"); !errors.Is(err, ErrClosed) {
		t.Fatalf("Update after a stalled Close = %v; want ErrClosed", err)
	}
	if err := db.Compact(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("Compact after a stalled Close = %v; want ErrClosed", err)
	}

	close(gc.release)
	released = true
	if err := <-gc.result; !errors.Is(err, badger.ErrNoRewrite) {
		t.Errorf("the GC ran on a closed Badger: %v", err)
	}
	if err := within(t, 10*time.Second, "Close once the GC returned", db.Close); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	db2, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("reopen after the second Close: %v", err)
	}
	if n := countKeys(t, db2, nil); n != 2 {
		t.Errorf("%d keys after reopening; want 2 (before, during)", n)
	}
	db2.Close()
}

// TestCloseWaitsForCompactionCall: Close never closes Badger under a
// compaction's call: it waits for it (here less than closeWait) and the
// call finishes on an open Badger.
func TestCloseWaitsForCompactionCall(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's value-log GC")
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	gc := newStuckGC()
	db.valueLogGC = gc.run
	compacted := make(chan error, 1)
	go func() { compacted <- db.Compact(context.Background()) }()
	<-gc.running
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	// Compact returns as Close starts, without waiting for Badger.
	if err := within(t, 10*time.Second, "Compact once Close started", func() error { return <-compacted }); !errors.Is(err, ErrClosed) {
		t.Errorf("Compact = %v; want ErrClosed", err)
	}
	select {
	case err := <-closed:
		t.Fatalf("Close returned (%v) while the GC call ran", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(gc.release)
	if err := <-gc.result; !errors.Is(err, badger.ErrNoRewrite) {
		t.Errorf("the GC ran on a closed Badger: %v", err)
	}
	if err := within(t, 10*time.Second, "Close", func() error { return <-closed }); err != nil {
		t.Fatalf("Close = %v", err)
	}
}
