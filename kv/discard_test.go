package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4"
	"github.com/engramdb/engram/kv/kvtest"
)

// issue26Discard is the damage of issue 26: 16 bytes at the start of
// DISCARD that make a slot with a file id above 2^32 (Badger truncates it
// to 32 bits when it picks a value log, and then cannot find the entry it
// means to clear).
var issue26Discard = []byte{1, 0, 0, 0, 1, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0}

// fillStore writes n keys into the store in dir and closes it.
func fillStore(t *testing.T, dir string, n int) {
	t.Helper()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Txn) error {
		for i := range n {
			if err := tx.Set(fmt.Appendf(nil, "k%04d", i), []byte("value")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// writeAt writes b at off in the file at path.
func writeAt(t *testing.T, path string, b []byte, off int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(b, off); err != nil {
		t.Fatal(err)
	}
}

// TestFaultDamagedDiscardCompact is issue 26's hang: with 16 garbage bytes
// at the start of DISCARD, Compact spun for ever in Badger's value-log GC
// (discardStats.MaxDiscard ← valueLog.pickLog), ignoring its context. The
// store must open (the file holds only GC hints), Compact must finish,
// and every key must still read back. The test fails after a deadline
// instead of hanging.
func TestFaultDamagedDiscardCompact(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's DISCARD file")
	dir := t.TempDir()
	fillStore(t, dir, 100)
	writeAt(t, filepath.Join(dir, "DISCARD"), issue26Discard, 0)

	db, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open with a damaged DISCARD = %v; want it opened (the file holds only GC hints)", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- db.Compact(ctx) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Compact = %v", err)
		}
	case <-time.After(20 * time.Second):
		// Closing would wait for the spinning GC: leave the store.
		t.Fatal("Compact did not return within 20 s (5 s after its context's deadline)")
	}
	n := countKeys(t, db, nil)
	if n != 100 {
		t.Errorf("%d keys after Compact; want 100", n)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
}

// discardSlots builds DISCARD contents of size bytes from (file id,
// garbage) pairs.
func discardSlots(size int, pairs ...uint64) []byte {
	b := make([]byte, size)
	for i := 0; i+1 < len(pairs); i += 2 {
		binary.BigEndian.PutUint64(b[8*i:], pairs[i])
		binary.BigEndian.PutUint64(b[8*i+8:], pairs[i+1])
	}
	return b
}

// TestFaultDamagedDiscard: each damage of DISCARD that hangs or misleads
// Badger's value-log GC is removed at Open, Compact finishes within a
// deadline, and every key reads back. The first two cases hung Compact
// for ever before Open checked the file.
func TestFaultDamagedDiscard(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's DISCARD file")
	cases := []struct {
		name string
		data []byte
	}{
		{"issue 26 bytes", append(append([]byte(nil), issue26Discard...), make([]byte, 1<<20-16)...)},
		// Two slots for one missing file: pickLog clears the first and
		// picks the second again, for ever.
		{"duplicate file id", discardSlots(1<<20, 7, 100, 7, 200)},
		// A count Badger reads as negative for a file that exists: the
		// GC skips it, and every file after it, for good.
		{"count of 2^63 bytes", discardSlots(1<<20, 1, 1<<63)},
		{"not whole slots", discardSlots(1<<20 - 5)},
		{"no free slot", discardSlots(32, 3, 1, 4, 1)},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			fillStore(t, dir, 100)
			path := filepath.Join(dir, discardFile)
			if err := os.WriteFile(path, c.data, 0o600); err != nil {
				t.Fatal(err)
			}
			db, err := Open(dir, nil)
			if err != nil {
				t.Fatalf("Open = %v; want the damaged hints dropped", err)
			}
			compactWithin(t, db, 20*time.Second)
			if got := countKeys(t, db, nil); got != 100 {
				t.Errorf("%d keys after Compact; want 100", got)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			b, err := os.ReadFile(path)
			if err != nil {
				t.Fatal(err)
			}
			if bytes.Equal(b, c.data) {
				t.Error("DISCARD left as it was")
			}
			if p := discardProblem(b); p != "" {
				t.Errorf("DISCARD after Open and Compact: %s", p)
			}
		})
	}
}

// compactWithin runs Compact and fails the test if it has not returned
// within d; the store is then left open (Close would wait for it).
func compactWithin(t *testing.T, db *DB, d time.Duration) {
	t.Helper()
	done := make(chan error, 1)
	go func() { done <- db.Compact(context.Background()) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("Compact = %v", err)
		}
	case <-time.After(d):
		t.Fatalf("Compact did not return within %v", d)
	}
}

// TestDiscardKeptWhenSound: a DISCARD that Badger itself wrote, with hints
// for several files, passes the check and is left byte for byte.
func TestDiscardKeptWhenSound(t *testing.T) {
	kvtest.SkipOnPostgres(t, "reads Badger's DISCARD file")
	dir := t.TempDir()
	fillStore(t, dir, 10)
	bo := badger.DefaultOptions(dir).WithLogger(nil)
	ds, err := badger.InitDiscardStats(bo)
	if err != nil {
		t.Fatal(err)
	}
	for _, fid := range []uint32{9, 2, 5, math.MaxUint32} {
		ds.Update(fid, int64(fid%1000)+1)
	}
	ds.Update(5, -1) // a cleared slot stays, with a zero count
	if err := ds.Close(-1); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, discardFile)
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if p := discardProblem(want); p != "" {
		t.Fatalf("Badger's own DISCARD: %s", p)
	}
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got[:64], want[:64]) {
		t.Errorf("DISCARD changed by Open: % x, was % x", got[:64], want[:64])
	}
}

// TestDiscardNotARegularFile: a directory named DISCARD is refused with
// ErrCorrupt naming it (Badger's open would log.Fatal on it).
func TestDiscardNotARegularFile(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's DISCARD file")
	dir := t.TempDir()
	fillStore(t, dir, 1)
	path := filepath.Join(dir, discardFile)
	if err := os.Remove(path); err != nil {
		t.Fatal(err)
	}
	if err := os.Mkdir(path, 0o700); err != nil {
		t.Fatal(err)
	}
	_, err := Open(dir, nil)
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), discardFile) {
		t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, discardFile)
	}
}
