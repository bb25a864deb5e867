package kv

import (
	"errors"
	"os"
	"slices"
	"testing"
)

// testBackend opens a fresh, empty store of one backend for a test.
type testBackend struct {
	name string
	open func(t testing.TB, o *Options) *DB
}

// testBackends returns the backends a backend-neutral test runs on:
// Badger in memory and on disk, and PostgreSQL when ENGRAM_TEST_POSTGRES
// names a database (a fresh schema per store). Options the PostgreSQL
// store has no counterpart for (durability, Badger's sizes) are dropped;
// the encryption key and the logger carry over. (Under
// ENGRAM_TEST_BACKEND=postgres the Badger entries open PostgreSQL stores
// too: see testbackend.go.)
func testBackends(t testing.TB) []testBackend {
	bs := []testBackend{
		{"badger-memory", func(t testing.TB, o *Options) *DB { return openTest(t, "", o) }},
		{"badger-disk", func(t testing.TB, o *Options) *DB { return openTest(t, t.TempDir(), o) }},
	}
	if os.Getenv("ENGRAM_TEST_POSTGRES") != "" {
		bs = append(bs, testBackend{"postgres", func(t testing.TB, o *Options) *DB {
			var po PostgresOptions
			if o != nil {
				po.EncryptionKey, po.Logger = o.EncryptionKey, o.Logger
			}
			db, _ := openTestPostgres(t, &po)
			return db
		}})
	}
	return bs
}

// forEachBackend runs fn as a subtest on each of testBackends.
func forEachBackend(t *testing.T, fn func(t *testing.T, b testBackend)) {
	for _, b := range testBackends(t) {
		t.Run(b.name, func(t *testing.T) { fn(t, b) })
	}
}

// TestReversePrefixOfFFBytes: a reverse scan of a prefix of 0xFF bytes
// alone (which has no successor key) finds its keys, longer ones
// included. Badger's reverse Rewind seeks to the prefix itself and found
// none of the longer keys.
func TestReversePrefixOfFFBytes(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := t.Context()
		keys := []string{"\xfe\xff", "\xff", "\xff\x00", "\xff\xff", "\xff\xff\x01", "\xff\xff\xff\xff"}
		if err := db.Update(ctx, func(tx *Txn) error {
			for _, k := range keys {
				if err := tx.Set([]byte(k), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		for prefix, want := range map[string][]string{
			"\xff":     {"\xff\xff\xff\xff", "\xff\xff\x01", "\xff\xff", "\xff\x00", "\xff"},
			"\xff\xff": {"\xff\xff\xff\xff", "\xff\xff\x01", "\xff\xff"},
			"":         {"\xff\xff\xff\xff", "\xff\xff\x01", "\xff\xff", "\xff\x00", "\xff", "\xfe\xff"},
		} {
			var got []string
			if err := db.View(ctx, func(tx *Txn) error {
				it := tx.NewIterator(IterOptions{Prefix: []byte(prefix), Reverse: true})
				defer it.Close()
				for it.Seek(nil); it.Valid(); it.Next() {
					got = append(got, string(it.Key()))
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
			if !slices.Equal(got, want) {
				t.Errorf("reverse under %q: %q, want %q", prefix, got, want)
			}
		}
	})
}

// TestReverseScanWithSuccessorKey: a reverse scan of a prefix finds its
// keys when the key right after the prefix (its PrefixEnd) exists, in a
// read-only and in a read-write transaction. Badger stopped on that key
// and returned nothing.
func TestReverseScanWithSuccessorKey(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := t.Context()
		if err := db.Update(ctx, func(tx *Txn) error {
			for _, k := range []string{"a", "a/1", "a/2", "a0", "b"} {
				if err := tx.Set([]byte(k), []byte("v")); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		scan := func(tx *Txn) []string {
			var got []string
			it := tx.NewIterator(IterOptions{Prefix: []byte("a/"), Reverse: true})
			defer it.Close()
			for it.Seek(nil); it.Valid(); it.Next() {
				got = append(got, string(it.Key()))
			}
			return got
		}
		want := []string{"a/2", "a/1"}
		_ = db.View(ctx, func(tx *Txn) error {
			if got := scan(tx); !slices.Equal(got, want) {
				t.Errorf("in a View: %q, want %q", got, want)
			}
			return nil
		})
		_ = db.Update(ctx, func(tx *Txn) error {
			if err := tx.Set([]byte("a/3"), []byte("v")); err != nil {
				return err
			}
			if got, want := scan(tx), []string{"a/3", "a/2", "a/1"}; !slices.Equal(got, want) {
				t.Errorf("in an Update with a pending write: %q, want %q", got, want)
			}
			return errors.New("roll back")
		})
	})
}
