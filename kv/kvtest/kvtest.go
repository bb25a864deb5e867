package kvtest

import (
	"os"
	"testing"
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
