package memory

import (
	"context"
	"errors"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
)

// pgTestSchema returns ENGRAM_TEST_POSTGRES and a fresh schema dropped at
// cleanup, or skips.
func pgTestSchema(t *testing.T) (dsn, schema string) {
	t.Helper()
	return kvtest.PostgresSchema(t, "m_")
}

// TestPostgresTwoProcesses: two stores on one PostgreSQL schema. The first
// to write a user's partition holds it; the other is refused until the
// first closes, then takes it over and finds everything, searchable.
func TestPostgresTwoProcesses(t *testing.T) {
	dsn, schema := pgTestSchema(t)
	ctx := context.Background()
	open := func(node string) *Store {
		st, err := Open("", &Options{Postgres: &PostgresOptions{DSN: dsn, Schema: schema, Node: node}})
		if err != nil {
			t.Fatal(err)
		}
		return st
	}
	a, b := open("a"), open("b")
	defer b.Close()
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, a.Session(scope), Message{Role: RoleUser, Content: "My renewal owner is Dana, account 3942."})
	if _, err := a.Remember(ctx, scope, Memory{Text: "Alice prefers invoices by email"}); err != nil {
		t.Fatal(err)
	}
	_, err := b.Remember(ctx, scope, Memory{Text: "written by the wrong process"})
	var held *kv.LeaseHeldError
	if !errors.As(err, &held) || held.Lease.Node != "a" {
		t.Fatalf("b's write to a's partition: %v, want a LeaseHeldError naming a", err)
	}
	if !a.Cluster().Holds(Partition(scope)) || b.Cluster().Holds(Partition(scope)) {
		t.Fatal("Holds disagrees with the lease")
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := b.Remember(ctx, scope, Memory{Text: "Alice's manager is Bob"}); err != nil {
		t.Fatalf("b after a closed: %v", err)
	}
	rec, err := b.Recall(ctx, Query{Scope: scope, Text: "invoices email"})
	if err != nil {
		t.Fatal(err)
	}
	found := false
	for _, m := range rec.Items {
		if m.Text == "Alice prefers invoices by email" {
			found = true
		}
	}
	if !found {
		t.Fatalf("b's recall misses a's memory: %+v", rec.Items)
	}
	msgs, err := b.Session(scope).Messages(ctx, MessagesOptions{})
	if err != nil || len(msgs) != 1 {
		t.Fatalf("b reads %d messages (%v), want 1", len(msgs), err)
	}
}

// TestPostgresFenced: once another node takes a partition over (here by
// moving its lease row, as a takeover after a lapse does), the former
// holder's writes are refused with kv.ErrFenced and nothing of them lands.
func TestPostgresFenced(t *testing.T) {
	dsn, schema := pgTestSchema(t)
	ctx := context.Background()
	st, err := Open("", &Options{Postgres: &PostgresOptions{DSN: dsn, Schema: schema, Node: "a"}})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	scope := Scope{Tenant: "acme", User: "alice"}
	if _, err := st.Remember(ctx, scope, Memory{Text: "first"}); err != nil {
		t.Fatal(err)
	}
	c, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	if _, err := c.Exec(ctx, "UPDATE "+schema+".leases SET node = 'b', epoch = epoch + 1"); err != nil {
		t.Fatal(err)
	}
	_, err = st.Remember(ctx, scope, Memory{Text: "late write"})
	if !errors.Is(err, kv.ErrFenced) {
		t.Fatalf("write after takeover: %v, want ErrFenced", err)
	}
	var n int
	if err := c.QueryRow(ctx, "SELECT count(*) FROM "+schema+".kv WHERE position('late write'::bytea in v) > 0").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("%d rows of the fenced write landed", n)
	}
	if st.Cluster().Stats().Fenced == 0 {
		t.Error("Stats().Fenced not counted")
	}
}
