package kvtest

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// Postgres reports whether [github.com/engramdb/engram/kv.Open] opens PostgreSQL stores in this test
// binary: ENGRAM_TEST_BACKEND is "postgres" and ENGRAM_TEST_POSTGRES is
// set. It is false outside test binaries.
func Postgres() bool {
	return testing.Testing() && os.Getenv("ENGRAM_TEST_BACKEND") == "postgres" && os.Getenv("ENGRAM_TEST_POSTGRES") != ""
}

// SkipOnPostgres skips t when [Postgres] is true, saying why: the test is
// about Badger itself and has no PostgreSQL counterpart.
func SkipOnPostgres(t testing.TB, why string) {
	t.Helper()
	if Postgres() {
		t.Skip("Badger only (ENGRAM_TEST_BACKEND=postgres): " + why)
	}
}

// PostgresSchema returns ENGRAM_TEST_POSTGRES and the name of a fresh
// schema (prefix and random hex) that is dropped when t ends, or skips t
// when ENGRAM_TEST_POSTGRES is unset. The schema itself is created by the
// store opened in it.
func PostgresSchema(t testing.TB, prefix string) (dsn, schema string) {
	t.Helper()
	dsn = os.Getenv("ENGRAM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("ENGRAM_TEST_POSTGRES is not set: no PostgreSQL to test against (.ci/run starts one)")
	}
	var r [6]byte
	_, _ = rand.Read(r[:])
	schema = prefix + hex.EncodeToString(r[:])
	t.Cleanup(func() {
		c, err := pgx.Connect(context.Background(), dsn)
		if err == nil {
			_, _ = c.Exec(context.Background(), "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
			c.Close(context.Background())
		}
	})
	return dsn, schema
}
