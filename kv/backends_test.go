package kv

import (
	"os"
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
