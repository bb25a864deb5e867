package kv

import (
	"bytes"
	"context"
	"errors"
	"runtime"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestCompactDoesNotStallReaders: a Compact waiting for running
// transactions must not make new ones wait behind it. A View opened inside
// an Update (as the engine does when it loads a partition) used to wait
// for Compact while Compact waited for the Update: both hung for good.
func TestCompactDoesNotStallReaders(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	inside := make(chan struct{})
	compacted := make(chan error, 1)
	go func() { <-inside; compacted <- db.Compact(ctx) }()
	done := make(chan error, 1)
	go func() {
		done <- db.Update(ctx, func(tx *Txn) error {
			close(inside)
			time.Sleep(200 * time.Millisecond) // Compact is waiting now
			return db.View(ctx, func(*Txn) error { return nil })
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("a View inside an Update waited for Compact, which waited for the Update")
	}
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
}

// gatedWriter blocks every Write until its gate is closed.
type gatedWriter struct{ gate chan struct{} }

func (w gatedWriter) Write(p []byte) (int, error) { <-w.gate; return len(p), nil }

// TestCompactBehindBackupDoesNotStallReads: a Backup streaming to a slow
// writer holds the store for reading; a Compact waiting for it must not
// stop other reads.
func TestCompactBehindBackupDoesNotStallReads(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("\x01k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	w := gatedWriter{make(chan struct{})}
	backedUp, compacted := make(chan error, 1), make(chan error, 1)
	go func() { backedUp <- db.Backup(ctx, w) }()
	time.Sleep(100 * time.Millisecond)
	go func() { compacted <- db.Compact(ctx) }()
	time.Sleep(100 * time.Millisecond)
	read := make(chan error, 1)
	go func() { read <- db.View(ctx, func(*Txn) error { return nil }) }()
	select {
	case err := <-read:
		if err != nil {
			t.Error(err)
		}
	case <-time.After(10 * time.Second):
		t.Error("a View waited behind a Compact that waited behind a Backup")
	}
	close(w.gate)
	if err := <-backedUp; err != nil {
		t.Error(err)
	}
	if err := <-compacted; err != nil {
		t.Error(err)
	}
}

// TestCompactRacingCloseLeavesNoMarker: Compact's flush marker must never
// outlive it, whether Close comes first or not: a marker left behind made
// the store non-empty for Restore and travelled in backups.
func TestCompactRacingCloseLeavesNoMarker(t *testing.T) {
	ctx := context.Background()
	for i := range 40 {
		dir := t.TempDir()
		db := openTest(t, dir, nil)
		go db.Compact(ctx)
		for range i % 20 {
			runtime.Gosched()
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		db2 := openTest(t, dir, nil)
		if err := db2.Restore(ctx, bytes.NewReader(nil)); errors.Is(err, ErrNotEmpty) {
			t.Fatalf("round %d: the store is not empty after Compact and Close", i)
		}
		db2.Close()
	}
}

// TestRestoreRefusedForDiskFullLeavesStoreUsable: a Restore refused for a
// full disk loaded nothing, so the store must take a Restore once space
// returns (it used to be marked failed for good).
func TestRestoreRefusedForDiskFullLeavesStoreUsable(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's free-space reserve (the free seam)")
	ctx := context.Background()
	src := openTest(t, t.TempDir(), nil)
	if err := src.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("\x01k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	dst := openTest(t, t.TempDir(), nil)
	full := true
	dst.free = func(string) (int64, bool) {
		if full {
			return 0, true
		}
		return 1 << 40, true
	}
	if err := dst.Restore(ctx, bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Restore on a full disk = %v, want ErrDiskFull", err)
	}
	full = false
	if err := dst.Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatalf("Restore once space returned = %v", err)
	}
}
