package engine

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// filesWith returns the files under dir holding needle; errors fail the
// test.
func filesWith(t *testing.T, dir string, needle []byte) []string {
	t.Helper()
	var hits []string
	if err := filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
		if err != nil {
			return err
		}
		if bytes.Contains(b, needle) {
			hits = append(hits, filepath.Base(p))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return hits
}

func writeAndErase(t *testing.T, db *DB, secret []byte) {
	t.Helper()
	scope := Scope{Tenant: "acme", User: "gone"}
	if err := db.Update(ctxb, func(tx *Tx) error {
		for i := range 50 {
			if err := tx.Set(Key(scope.Prefix(LevelUser), NSGraph, []byte{byte(i)}), secret); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.kv.Sync(); err != nil {
		t.Fatal(err)
	}
	if len(filesWith(t, db.kv.Dir(), secret)) == 0 {
		t.Fatal("the secret is in no file before the erasure")
	}
	if _, err := db.ErasePrefix(ctxb, scope.Prefix(LevelUser), nil); err != nil {
		t.Fatal(err)
	}
}

// TestFaultErasureBackgroundCompaction: an erasure is out of the files
// after the background compaction it schedules, with no call to Compact.
func TestFaultErasureBackgroundCompaction(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's files after compaction")
	dir := t.TempDir()
	db := openDisk(t, dir, &Options{CompactDelay: 10 * time.Millisecond})
	defer db.Close()
	secret := []byte("engine-secret-zqxwvkjq")
	writeAndErase(t, db, secret)
	waitCompacted(t, db, "no background compaction")
	if hits := filesWith(t, dir, secret); len(hits) > 0 {
		t.Errorf("after the background compaction the secret is in %v", hits)
	}
}

// TestCompactDelayOff: with the background compaction off, an erasure
// stays pending until Compact.
func TestCompactDelayOff(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's files after Compact")
	dir := t.TempDir()
	db := openDisk(t, dir, &Options{CompactDelay: -1})
	defer db.Close()
	secret := []byte("engine-secret-pending")
	writeAndErase(t, db, secret)
	if s := db.Stats(); !s.CompactPending || s.Compactions != 0 {
		t.Fatalf("stats after an erasure: %+v", s)
	}
	if err := db.Compact(ctxb); err != nil {
		t.Fatal(err)
	}
	if s := db.Stats(); s.CompactPending || s.Compactions != 1 {
		t.Fatalf("stats after Compact: %+v", s)
	}
	if hits := filesWith(t, dir, secret); len(hits) > 0 {
		t.Errorf("after Compact the secret is in %v", hits)
	}
}

// TestFaultErasureAcrossClose: an erasure whose background compaction has
// not run yet is finished by Close; one left by a process without the
// background compactor is finished by the next Open's.
func TestFaultErasureAcrossClose(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's files after compaction")
	t.Run("close", func(t *testing.T) {
		dir := t.TempDir()
		db := openDisk(t, dir, &Options{CompactDelay: time.Hour})
		secret := []byte("engine-secret-at-close")
		writeAndErase(t, db, secret)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if hits := filesWith(t, dir, secret); len(hits) > 0 {
			t.Errorf("after Close the secret is in %v", hits)
		}
	})
	t.Run("next open", func(t *testing.T) {
		dir := t.TempDir()
		db := openDisk(t, dir, &Options{CompactDelay: -1})
		secret := []byte("engine-secret-next-open")
		writeAndErase(t, db, secret)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if len(filesWith(t, dir, secret)) == 0 {
			t.Fatal("the secret is in no file: the check proves nothing")
		}
		db = openDisk(t, dir, &Options{CompactDelay: 10 * time.Millisecond})
		defer db.Close()
		waitCompacted(t, db, "no compaction after reopening")
		if hits := filesWith(t, dir, secret); len(hits) > 0 {
			t.Errorf("after the next open's compaction the secret is in %v", hits)
		}
	})
}

// TestCompactWhileUpdateLoadsPartition: an Update that loads a partition
// (which reads its snapshot names in a transaction of its own) while a
// Compact waits for it must finish, and so must the Compact. They used to
// wait for each other for good.
func TestCompactWhileUpdateLoadsPartition(t *testing.T) {
	db := openDisk(t, t.TempDir(), &Options{CompactDelay: -1})
	defer db.Close()
	inside := make(chan struct{})
	compacted := make(chan error, 1)
	go func() { <-inside; compacted <- db.Compact(ctxb) }()
	done := make(chan error, 1)
	var once sync.Once
	go func() {
		done <- db.Update(ctxb, func(tx *Tx) error {
			// Update may run fn again (on PostgreSQL it loads the
			// partition outside the transaction first).
			once.Do(func() { close(inside) })
			time.Sleep(300 * time.Millisecond) // Compact is waiting now
			_, err := tx.PutRecord(Scope{Tenant: "acme", User: "new"}, "", Record{Text: "hello", Vector: []float32{1, 2, 3}})
			return err
		})
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("an Update loading a partition and a Compact waited for each other")
	}
	if err := <-compacted; err != nil {
		t.Fatal(err)
	}
}

// TestFaultErasureCrashDuringCompact: a process that dies while its
// compaction runs must leave the pending mark, so the next Open compacts
// again. The mark used to be deleted before the compaction began.
func TestFaultErasureCrashDuringCompact(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's files after a crash during compaction")
	dir := t.TempDir()
	db := openDisk(t, dir, &Options{CompactDelay: -1})
	writeAndErase(t, db, []byte("engine-secret-crash-mid-compact"))
	// A read held open pauses Compact before its flush.
	release, held := make(chan struct{}), make(chan struct{})
	go db.kv.View(ctxb, func(*kv.Txn) error { close(held); <-release; return nil })
	<-held
	done := make(chan error, 1)
	go func() { done <- db.Compact(ctxb) }()
	time.Sleep(300 * time.Millisecond)
	crashed := t.TempDir() // the files as a crash now would leave them
	if err := os.CopyFS(crashed, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	close(release)
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	os.Remove(filepath.Join(crashed, "LOCK"))
	db2 := openDisk(t, crashed, &Options{CompactDelay: -1})
	defer db2.Close()
	if !db2.Stats().CompactPending {
		t.Fatal("after a crash during the compaction, nothing is pending: the erased bytes would stay")
	}
}

// TestErasePrefixFailingPartWaySchedules: an erasure that fails after
// deleting some keys must still schedule the compaction that takes them
// out of the files.
func TestErasePrefixFailingPartWaySchedules(t *testing.T) {
	db := openDisk(t, t.TempDir(), &Options{CompactDelay: -1})
	defer db.Close()
	scope := Scope{Tenant: "acme", User: "gone"}
	if err := db.Update(ctxb, func(tx *Tx) error {
		for i := range 1000 {
			if err := tx.Set(Key(scope.Prefix(LevelUser), NSGraph, []byte{byte(i >> 8), byte(i)}), []byte("secret")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	seen := 0
	n, err := db.ErasePrefix(ctxb, scope.Prefix(LevelUser), func(k, v []byte) error {
		if seen++; seen > 600 {
			return io.ErrUnexpectedEOF
		}
		return nil
	})
	if err == nil || n == 0 {
		t.Fatalf("ErasePrefix = %d, %v; want a failure after some keys", n, err)
	}
	if !db.Stats().CompactPending {
		t.Fatalf("%d keys erased and no compaction pending", n)
	}
}

// waitCompacted waits until a compaction has finished and none is
// pending, failing with what after a minute (a hang, not a speed limit).
func waitCompacted(t *testing.T, db *DB, what string) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	for s := db.Stats(); s.Compactions == 0 || s.CompactPending; s = db.Stats() {
		if time.Now().After(deadline) {
			t.Fatalf("%s: %+v", what, s)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
