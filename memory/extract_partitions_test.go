package memory

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// gateExtractor says when it is first called, then holds every call until
// its gate opens (or its context ends), and counts the calls it finished.
type gateExtractor struct {
	started chan struct{}
	gate    chan struct{}
	once    sync.Once
	done    atomic.Int32
}

func newGateExtractor() *gateExtractor {
	return &gateExtractor{started: make(chan struct{}), gate: make(chan struct{})}
}

func (x *gateExtractor) Extract(ctx context.Context, _ *ExtractInput) (*Extraction, error) {
	x.once.Do(func() { close(x.started) })
	select {
	case <-x.gate:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	x.done.Add(1)
	return &Extraction{}, nil
}

// openPG opens a store of node on the test schema with extractor x, as a
// serve node does (with an address).
func openPG(t *testing.T, dsn, schema, node string, x Extractor) *Store {
	t.Helper()
	// An address: a process that serves no requests takes no free
	// partition (claimFree).
	st, err := Open("", &Options{Extractor: x, SweepInterval: -1, Postgres: &PostgresOptions{DSN: dsn, Schema: schema, Node: node, Addr: node + ":7437"}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

// TestPostgresWorkerTakesFreePartition (issue 26, hang 3b): jobs left
// queued by a process that closed (its leases released) are run by the
// next process's worker, which takes the free partition, without any
// request for the user; before, they waited for one and Flush hung. A
// process that serves no requests leaves them.
func TestPostgresWorkerTakesFreePartition(t *testing.T) {
	dsn, schema := pgTestSchema(t)
	held := newGateExtractor()
	a := openPG(t, dsn, schema, "a", held)
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, a.Session(scope), Message{Role: RoleUser, Content: "first"}, Message{Role: RoleUser, Content: "second"})
	<-held.started
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}

	// A process without an address (a command-line tool) leaves the
	// partition free: serve nodes could not forward to it.
	tool, err := Open("", &Options{Extractor: newGateExtractor(), SweepInterval: -1, Postgres: &PostgresOptions{DSN: dsn, Schema: schema, Node: "tool"}})
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(bg, 300*time.Millisecond)
	err = tool.Flush(short)
	cancel()
	var fe *FlushError
	if !errors.As(err, &fe) || fe.Pending != 2 {
		t.Errorf("Flush on a process without an address = %v, want a FlushError of 2 pending", err)
	}
	if tool.Cluster().Holds(Partition(scope)) {
		t.Error("a process without an address took the free partition")
	}
	if err := tool.Close(); err != nil {
		t.Fatal(err)
	}

	x := newGateExtractor()
	close(x.gate)
	b := openPG(t, dsn, schema, "b", x)
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush on the next process: %v (%d jobs run)", err, x.done.Load())
	}
	if n := x.done.Load(); n != 2 {
		t.Errorf("%d of the 2 queued jobs were run", n)
	}
	if !b.Cluster().Holds(Partition(scope)) {
		t.Error("the worker ran the jobs without holding the partition")
	}
	if q, err := b.ExtractionQueue(bg); err != nil || q.Pending != 0 {
		t.Errorf("queue after the flush: %+v, %v", q, err)
	}
}

// TestPostgresFlushWaitsForHolder (issue 26, hang 3a): Flush on a process
// that does not hold a partition returns once the holder has run the
// partition's jobs; before, it waited for its own worker, which never
// runs them, and hung. A flush whose context ends first reports how many
// messages still wait.
func TestPostgresFlushWaitsForHolder(t *testing.T) {
	dsn, schema := pgTestSchema(t)
	x := newGateExtractor()
	a := openPG(t, dsn, schema, "a", x)
	b := openPG(t, dsn, schema, "b", newGateExtractor())
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, a.Session(scope), Message{Role: RoleUser, Content: "first"}, Message{Role: RoleUser, Content: "second"})
	<-x.started // a's worker holds both jobs

	short, cancel := context.WithTimeout(bg, 100*time.Millisecond)
	err := b.Flush(short)
	cancel()
	var fe *FlushError
	if !errors.As(err, &fe) || fe.Pending != 2 || !errors.Is(err, ErrFlushPending) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Flush past its deadline = %v, want a FlushError of 2 pending matching ErrFlushPending and the deadline", err)
	}

	// The gate opens once b's flush has read the queue.
	testHookFlushRead = func() { close(x.gate) }
	defer func() { testHookFlushRead = nil }()
	ctx, cancel := context.WithTimeout(bg, 20*time.Second)
	defer cancel()
	if err := b.Flush(ctx); err != nil {
		t.Fatalf("Flush on the process that does not hold the partition: %v", err)
	}
	if n := x.done.Load(); n != 2 {
		t.Errorf("after the flush the holder has run %d of 2 jobs", n)
	}
	if b.Cluster().Holds(Partition(scope)) {
		t.Error("b took a partition a holds")
	}
}
