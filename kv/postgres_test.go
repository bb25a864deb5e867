package kv

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"os"
	"testing"

	"github.com/jackc/pgx/v5"
)

// testPostgresDSN returns ENGRAM_TEST_POSTGRES, or skips.
func testPostgresDSN(t testing.TB) string {
	t.Helper()
	dsn := os.Getenv("ENGRAM_TEST_POSTGRES")
	if dsn == "" {
		t.Skip("ENGRAM_TEST_POSTGRES is not set: no PostgreSQL to test against (.ci/run starts one)")
	}
	return dsn
}

// openTestPostgres opens a store in a fresh schema, dropped at cleanup.
func openTestPostgres(t testing.TB, o *PostgresOptions) (*DB, *PostgresOptions) {
	t.Helper()
	dsn := testPostgresDSN(t)
	var opts PostgresOptions
	if o != nil {
		opts = *o
	}
	if opts.DSN == "" {
		opts.DSN = dsn
	}
	if opts.Schema == "" {
		var r [6]byte
		_, _ = rand.Read(r[:])
		opts.Schema = "t_" + hex.EncodeToString(r[:])
		t.Cleanup(func() {
			c, err := pgx.Connect(context.Background(), dsn)
			if err != nil {
				return
			}
			defer c.Close(context.Background())
			_, _ = c.Exec(context.Background(), "DROP SCHEMA "+opts.Schema+" CASCADE")
		})
	}
	db, err := OpenPostgres(context.Background(), &opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db, &opts
}

func TestPostgresBasics(t *testing.T) {
	db, _ := openTestPostgres(t, nil)
	ctx := context.Background()
	err := db.Update(ctx, func(tx *Txn) error {
		for _, k := range []string{"a/1", "a/2", "a/3", "b/1"} {
			if err := tx.Set([]byte(k), []byte("v"+k)); err != nil {
				return err
			}
		}
		// Read-your-writes before anything was sent.
		v, err := tx.Get([]byte("a/2"))
		if err != nil || string(v) != "va/2" {
			t.Errorf("get in txn = %q, %v", v, err)
		}
		return tx.Delete([]byte("a/3"))
	})
	if err != nil {
		t.Fatal(err)
	}
	err = db.View(ctx, func(tx *Txn) error {
		var got []string
		it := tx.NewIterator(IterOptions{Prefix: []byte("a/")})
		for it.Seek(nil); it.Valid(); it.Next() {
			got = append(got, string(it.Key()))
		}
		if len(got) != 2 || got[0] != "a/1" || got[1] != "a/2" {
			t.Errorf("forward = %q", got)
		}
		got = nil
		it = tx.NewIterator(IterOptions{Prefix: []byte("a/"), Reverse: true})
		for it.Seek(nil); it.Valid(); it.Next() {
			got = append(got, string(it.Key()))
		}
		if len(got) != 2 || got[0] != "a/2" {
			t.Errorf("reverse = %q", got)
		}
		if _, err := tx.Get([]byte("a/3")); !errors.Is(err, ErrNotFound) {
			t.Errorf("deleted key: %v", err)
		}
		if err := tx.Set([]byte("x"), nil); !errors.Is(err, ErrReadOnly) {
			t.Errorf("set in view: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := db.Backup(ctx, &buf); err != nil {
		t.Fatal(err)
	}
	db2, _ := openTestPostgres(t, nil)
	if err := db2.Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
		t.Fatal(err)
	}
	_ = db2.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("b/1"))
		if err != nil || string(v) != "vb/1" {
			t.Errorf("restored = %q, %v", v, err)
		}
		return nil
	})
}
