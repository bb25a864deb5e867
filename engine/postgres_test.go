package engine

import (
	"context"
	"errors"
	"fmt"
	"math"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// pgOptions returns options for a store in a fresh PostgreSQL schema
// (dropped at cleanup), or skips.
func pgOptions(t *testing.T) *kv.PostgresOptions {
	t.Helper()
	dsn, schema := kvtest.PostgresSchema(t, "e_")
	return &kv.PostgresOptions{DSN: dsn, Schema: schema}
}

func unitVector(i, dim int) []float32 {
	v := make([]float32, dim)
	var n float64
	for j := range v {
		v[j] = float32(math.Sin(float64(i*dim+j) * 0.7))
		n += float64(v[j]) * float64(v[j])
	}
	for j := range v {
		v[j] /= float32(math.Sqrt(n))
	}
	return v
}

// TestPostgresSnapshotTakeover: a node's snapshot of a partition's HNSW
// graph is stored in the database, under the partition, and the node that
// takes the partition over loads it and replays the log after its mark:
// the same search answers. A former owner cannot put its stale snapshot
// over the new owner's.
func TestPostgresSnapshotTakeover(t *testing.T) {
	po := pgOptions(t)
	ctx := context.Background()
	open := func(node string) *DB {
		o := *po
		o.Node = node
		db, err := Open("", &Options{Postgres: &o, ExactThreshold: 8})
		if err != nil {
			t.Fatal(err)
		}
		return db
	}
	scope := Scope{Tenant: "acme", User: "alice"}
	put := func(db *DB, from, to int) error {
		return db.Update(ctx, func(tx *Tx) error {
			for i := from; i < to; i++ {
				if _, err := tx.PutRecord(scope, "", Record{Text: fmt.Sprintf("record %d", i), Vector: unitVector(i, 16)}); err != nil {
					return err
				}
			}
			return nil
		})
	}
	a := open("a")
	if err := put(a, 0, 40); err != nil {
		t.Fatal(err)
	}
	want, err := a.Search(ctx, scope, unitVector(7, 16), 5, nil)
	if err != nil || len(want) == 0 || want[0].Text != "record 7" {
		t.Fatalf("a's search = %+v, %v", want, err)
	}
	a.snapshotAll(ctx, 1)
	snapKey := Key(PartitionOf(scope), NSSnapshot)
	var first []byte
	_ = a.kv.View(ctx, func(tx *kv.Txn) error { first, err = tx.Get(snapKey); return err })
	if err != nil {
		t.Fatalf("no snapshot stored: %v", err)
	}
	// More writes after the snapshot: they are in the log only.
	if err := put(a, 40, 50); err != nil {
		t.Fatal(err)
	}

	// a pauses past its lease; b takes the partition over.
	b := open("b")
	defer b.Close()
	c, err := pgx.Connect(ctx, po.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "UPDATE "+po.Schema+".lease_expiry SET expires_at = now() - interval '1 second'"); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Cluster().Acquire(ctx, PartitionOf(scope)); err != nil {
		t.Fatal(err)
	}
	got, err := b.Search(ctx, scope, unitVector(45, 16), 3, nil)
	if err != nil || len(got) == 0 || got[0].Text != "record 45" {
		t.Fatalf("b's search for a record after the snapshot = %+v, %v", got, err)
	}
	got, err = b.Search(ctx, scope, unitVector(7, 16), 5, nil)
	if err != nil || len(got) != len(want) || got[0].ID != want[0].ID {
		t.Fatalf("b's search = %+v, %v; want %+v", got, err, want)
	}
	if err := put(b, 50, 60); err != nil {
		t.Fatal(err)
	}
	b.snapshotAll(ctx, 1)
	var second []byte
	_ = b.kv.View(ctx, func(tx *kv.Txn) error { second, err = tx.Get(snapKey); return err })
	if err != nil || string(second) == string(first) {
		t.Fatalf("b's snapshot not stored: %v", err)
	}
	// a still believes it owns the partition: its writes and its snapshot
	// are refused, and b's snapshot stands.
	if err := put(a, 60, 61); !errors.Is(err, ErrFenced) {
		t.Fatalf("a's write after the takeover: %v, want ErrFenced", err)
	}
	a.snapshotAll(ctx, 1)
	var third []byte
	_ = b.kv.View(ctx, func(tx *kv.Txn) error { third, err = tx.Get(snapKey); return err })
	if string(third) != string(second) {
		t.Fatal("a's stale snapshot replaced b's")
	}
	a.skipFinalSnapshot = true
	_ = a.Close()
}

// TestPostgresForeignPartitionRefreshed: a process reading a partition
// another process writes (as a user's owner reads the tenant's shared
// memories) sees the other's writes once its copy is older than
// foreignFresh.
func TestPostgresForeignPartitionRefreshed(t *testing.T) {
	po := pgOptions(t)
	ctx := context.Background()
	open := func(node string) *DB {
		o := *po
		o.Node = node
		db, err := Open("", &Options{Postgres: &o})
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	writer, reader := open("writer"), open("reader")
	shared := Scope{Tenant: "acme"}
	put := func(i int) {
		t.Helper()
		if err := writer.Update(ctx, func(tx *Tx) error {
			_, err := tx.PutRecord(shared, "", Record{Text: fmt.Sprintf("record %d", i), Vector: unitVector(i, 8)})
			return err
		}); err != nil {
			t.Fatal(err)
		}
	}
	put(1)
	if hits, err := reader.Search(ctx, shared, unitVector(1, 8), 1, nil); err != nil || len(hits) != 1 {
		t.Fatalf("reader's first search = %+v, %v", hits, err)
	}
	put(2)
	deadline := time.Now().Add(5 * foreignFresh)
	for {
		hits, err := reader.Search(ctx, shared, unitVector(2, 8), 1, nil)
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) == 1 && hits[0].Text == "record 2" {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the reader never saw the writer's record: %+v", hits)
		}
		time.Sleep(foreignFresh / 4)
	}
}
