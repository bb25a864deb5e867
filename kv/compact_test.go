package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestFaultErasureKV: a deleted value is in no file after Compact, even
// when every table sits on level 0 (where Badger's Flatten does nothing)
// and the tombstone is still in the memtable.
func TestFaultErasureKV(t *testing.T) {
	kvtest.SkipOnPostgres(t, "looks for erased bytes in Badger's files after Compact")
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	secret := []byte("kv-secret-zqxwvkjq")
	set := func(prefix string) {
		if err := db.Update(ctx, func(tx *Txn) error {
			for i := range 100 {
				if err := tx.Set(fmt.Appendf(nil, "%s%03d", prefix, i), secret); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	set("gone/")
	set("kept/")
	if _, err := db.DeletePrefix(ctx, []byte("gone/"), nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Compact(ctx); err != nil {
		t.Fatal(err)
	}
	// The kept keys still hold the secret: count the files holding it
	// through the deleted keys' names instead.
	if hits := holdingKV(t, dir, []byte("gone/0")); len(hits) > 0 {
		t.Errorf("deleted keys still in %v after Compact", hits)
	}
	if hits := holdingKV(t, dir, []byte("kept/0")); len(hits) == 0 {
		t.Error("the kept keys are in no file")
	}
}

// TestCompactWithWriters: transactions running alongside Compact wait for
// its flush instead of failing (Badger refuses writes during DropPrefix).
func TestCompactWithWriters(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	errs := make(chan error, 4)
	for w := range 4 {
		wg.Go(func() {
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				err := db.Update(ctx, func(tx *Txn) error {
					return tx.Set(fmt.Appendf(nil, "w%d/%06d", w, i), bytes.Repeat([]byte{byte(i)}, 100))
				})
				if err != nil {
					errs <- err
					return
				}
			}
		})
	}
	for range 5 {
		if err := db.Compact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	close(stop)
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("a write during Compact: %v", err)
	}
}

func holdingKV(t *testing.T, dir string, needle []byte) []string {
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

// TestCompactConcurrent: overlapping Compact calls (the background one and
// a forced one) both succeed.
func TestCompactConcurrent(t *testing.T) {
	ctx := context.Background()
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			wg.Go(func() {
				if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
					errs <- err
					return
				}
				errs <- db.Compact(ctx)
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}
