package kv

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// The test backend redirect. Every existing test of kv, engine, graph and
// memory opens its stores with [Open]; to run those tests against
// PostgreSQL as well as Badger, a test binary (and only a test binary:
// testing.Testing() is false in every other program) started with
//
//	ENGRAM_TEST_BACKEND=postgres ENGRAM_TEST_POSTGRES=<DSN>
//
// gets a PostgreSQL store from [Open] instead of Badger:
//
//   - Open("") opens a fresh schema, dropped when the store is closed;
//   - Open(dir) opens the schema named in dir's marker file
//     (testSchemaFile), creating the directory, the schema and the marker
//     when there is none, so a test that closes and reopens a directory
//     sees its data, and a new directory starts empty. Those schemas are
//     not dropped: the directory may be opened again. .ci/run runs the
//     tests on a throwaway cluster.
//
// Options.EncryptionKey and Options.Logger carry over; the rest of Options
// describes Badger and is ignored. The store reports Dir() "" as any
// PostgreSQL store does. Package kvtest tells tests whether the redirect
// is on, for the few that are about Badger's files themselves.

// Environment variables of the redirect.
const (
	testBackendEnv  = "ENGRAM_TEST_BACKEND"
	testPostgresEnv = "ENGRAM_TEST_POSTGRES"
)

// testSchemaFile names the schema of a redirected directory.
const testSchemaFile = "POSTGRES_TEST_SCHEMA"

// redirectDSN returns the DSN of the redirect when it is on. (Package
// kvtest makes the same check: keep the two in step.)
func redirectDSN() (string, bool) {
	if !testing.Testing() || os.Getenv(testBackendEnv) != "postgres" {
		return "", false
	}
	dsn := os.Getenv(testPostgresEnv)
	return dsn, dsn != ""
}

// openTestBackend opens the PostgreSQL store that stands in for the Badger
// store in dir (see the comment at the top of this file).
func openTestBackend(dir string, o Options, dsn string) (*DB, error) {
	schema, created, err := testSchema(dir)
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	db, err := OpenPostgres(ctx, &PostgresOptions{
		DSN: dsn, Schema: schema, EncryptionKey: o.EncryptionKey, Logger: o.Logger,
	})
	if err != nil {
		if created {
			dropTestSchema(dsn, schema)
		}
		return nil, err
	}
	if dir == "" {
		db.closeHook = func() { dropTestSchema(dsn, schema) }
	}
	return db, nil
}

// testSchema returns the schema for dir: a fresh one for "", else the one
// its marker names, recording a fresh one when there is none.
func testSchema(dir string) (schema string, created bool, err error) {
	fresh := func(kind string) string {
		var r [8]byte
		_, _ = rand.Read(r[:])
		return "kvtest_" + kind + "_" + hex.EncodeToString(r[:])
	}
	if dir == "" {
		return fresh("mem"), true, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", false, fmt.Errorf("kv: create directory: %w", err)
	}
	marker := filepath.Join(dir, testSchemaFile)
	b, err := os.ReadFile(marker)
	switch {
	case err == nil:
		s := strings.TrimSpace(string(b))
		if !schemaName.MatchString(s) {
			return "", false, fmt.Errorf("%w: %s names schema %q", ErrCorrupt, marker, s)
		}
		return s, false, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", false, fmt.Errorf("kv: read %s: %w", marker, err)
	}
	s := fresh("dir")
	if err := os.WriteFile(marker, []byte(s+"\n"), 0o600); err != nil {
		return "", false, fmt.Errorf("kv: write %s: %w", marker, err)
	}
	return s, true, nil
}

// dropTestSchema drops a schema of the redirect; failures are ignored (a
// throwaway cluster goes with its schemas).
func dropTestSchema(dsn, schema string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		return
	}
	defer c.Close(context.Background())
	_, _ = c.Exec(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE")
}
