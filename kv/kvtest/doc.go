// Package kvtest helps tests run against both of package kv's backends.
//
// # Basics
//
// A test binary run with ENGRAM_TEST_BACKEND=postgres and
// ENGRAM_TEST_POSTGRES set to a PostgreSQL DSN gets a PostgreSQL store
// from every [github.com/engramdb/engram/kv.Open] (see kv/testbackend.go); without them, Badger.
// Tests of kv, engine, graph and memory therefore run unchanged on either.
// [Postgres] reports which; [SkipOnPostgres] skips a test that is about
// Badger itself (its files, value log, compaction, directory lock).
//
// # Caveats
//
// Skips are for tests of Badger's own mechanics only; a test of behaviour
// that fails on PostgreSQL is a bug to fix, not to skip.
package kvtest
