package kv

import (
	"bytes"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// dirState returns a digest of every file of dir but kv's lock file, by
// name.
func dirState(t *testing.T, dir string) map[string]string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, e := range entries {
		if e.Name() == lockFile {
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		fi, _ := e.Info()
		out[e.Name()] = fmt.Sprintf("%x %v", sha256.Sum256(b), fi.Mode())
	}
	return out
}

func sameState(t *testing.T, before, after map[string]string) {
	t.Helper()
	for name, h := range before {
		if after[name] != h {
			t.Errorf("%s changed or went (%q, then %q)", name, h, after[name])
		}
	}
	for name := range after {
		if _, ok := before[name]; !ok {
			t.Errorf("%s was created", name)
		}
	}
}

// TestOpenReadOnly: a read-only open of a closed store reads everything,
// refuses writes, and leaves every file as it was (a read-write open
// starts a write-ahead log, replays, flushes and rewrites files at
// Close: issue 26 item 14, inspect, export and backup rewrote the store).
// A store that was not closed is ErrNeedsRecovery, untouched.
func TestOpenReadOnly(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's read-only mode and files")
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{3}, 32)} {
		t.Run(fmt.Sprintf("key %d bytes", len(key)), func(t *testing.T) {
			dir := t.TempDir()
			opts := &Options{MemTableSize: 1 << 20, EncryptionKey: key}
			db, err := Open(dir, opts)
			if err != nil {
				t.Fatal(err)
			}
			big := bytes.Repeat([]byte("v"), 200<<10) // the value log
			if err := db.Update(t.Context(), func(tx *Txn) error {
				if err := tx.Set([]byte("big"), big); err != nil {
					return err
				}
				return tx.Set([]byte("small"), []byte("s"))
			}); err != nil {
				t.Fatal(err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			before := dirState(t, dir)
			ro := *opts
			ro.ReadOnly = true
			db, err = Open(dir, &ro)
			if err != nil {
				t.Fatalf("read-only Open: %v", err)
			}
			err = db.View(t.Context(), func(tx *Txn) error {
				if v, err := tx.Get([]byte("big")); err != nil || !bytes.Equal(v, big) {
					return fmt.Errorf("Get(big) = %d bytes, %v", len(v), err)
				}
				if v, err := tx.Get([]byte("small")); err != nil || string(v) != "s" {
					return fmt.Errorf("Get(small) = %q, %v", v, err)
				}
				return nil
			})
			if err != nil {
				t.Error(err)
			}
			if err := db.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("new"), []byte("x")) }); !errors.Is(err, ErrReadOnly) {
				t.Errorf("write to a read-only store = %v; want ErrReadOnly", err)
			}
			if err := db.Close(); err != nil {
				t.Fatal(err)
			}
			sameState(t, before, dirState(t, dir))
		})
	}
	t.Run("not closed", func(t *testing.T) {
		base, _, _, _ := killedStore(t)
		before := dirState(t, base)
		db, err := Open(base, &Options{MemTableSize: 1 << 20, ReadOnly: true})
		if err == nil {
			db.Close()
			t.Fatal("read-only Open of a store that was not closed succeeded")
		}
		if !errors.Is(err, ErrNeedsRecovery) {
			t.Fatalf("Open = %v; want ErrNeedsRecovery", err)
		}
		sameState(t, before, dirState(t, base))
	})
}
