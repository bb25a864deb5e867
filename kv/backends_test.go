package kv

import (
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
