package kv

import (
	"context"
	"errors"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
)

// testPart is a partition for the lease tests; partOf puts every key
// under "p/<x>/" in partition "p/<x>".
var testPart = []byte("p/alice")

func partOf(key []byte) ([]byte, bool) {
	if len(key) < 2 || key[0] != 'p' || key[1] != '/' {
		return nil, false
	}
	for i := 2; i < len(key); i++ {
		if key[i] == '/' {
			return key[:i], true
		}
	}
	return nil, false
}

// clusterPair opens two nodes, a and b, on one schema.
func clusterPair(t *testing.T, explicit bool) (a, b *DB, sql func(string, ...any)) {
	t.Helper()
	a, ao := openTestPostgres(t, &PostgresOptions{Node: "a", Addr: "a:1", Partition: partOf, ExplicitLeases: explicit})
	b, _ = openTestPostgres(t, &PostgresOptions{Node: "b", Addr: "b:1", Schema: ao.Schema, Partition: partOf, ExplicitLeases: explicit})
	c, err := pgx.Connect(context.Background(), ao.DSN)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	sql = func(q string, args ...any) {
		t.Helper()
		if _, err := c.Exec(context.Background(), q, args...); err != nil {
			t.Fatal(err)
		}
	}
	// The lease table is under the schema; let sql's statements name it
	// as {s}.
	schema := ao.Schema
	raw := sql
	sql = func(q string, args ...any) { t.Helper(); raw(pgQueries{schema: schema}.sql(q), args...) }
	return a, b, sql
}

func put(db *DB, key string) error {
	return db.Update(context.Background(), func(tx *Txn) error { return tx.Set([]byte(key), []byte("v")) })
}

func exists(t *testing.T, db *DB, key string) bool {
	t.Helper()
	var ok bool
	if err := db.View(context.Background(), func(tx *Txn) error {
		var err error
		ok, err = tx.Has([]byte(key))
		return err
	}); err != nil {
		t.Fatal(err)
	}
	return ok
}

func TestLeaseAcquireRelease(t *testing.T) {
	a, b, _ := clusterPair(t, true)
	ctx := context.Background()
	var acquired []string
	a.pg.opts.OnAcquire = func(p []byte) { acquired = append(acquired, "a:"+string(p)) }
	b.pg.opts.OnAcquire = func(p []byte) { acquired = append(acquired, "b:"+string(p)) }

	if err := put(a, "p/alice/1"); !errors.Is(err, ErrFenced) {
		t.Fatalf("write without a lease (explicit): %v, want ErrFenced", err)
	}
	l, err := a.Cluster().Acquire(ctx, testPart)
	if err != nil || l.Epoch != 1 || l.Node != "a" {
		t.Fatalf("Acquire = %+v, %v", l, err)
	}
	if l2, err := a.Cluster().Acquire(ctx, testPart); err != nil || l2.Epoch != 1 {
		t.Fatalf("Acquire again (renewal) = %+v, %v; the epoch must stay", l2, err)
	}
	if err := put(a, "p/alice/1"); err != nil {
		t.Fatal(err)
	}
	_, err = b.Cluster().Acquire(ctx, testPart)
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Lease.Node != "a" || !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("b's Acquire of a's lease: %v", err)
	}
	if cur, ok, err := b.Cluster().Lease(ctx, testPart); err != nil || !ok || cur.Node != "a" || cur.Epoch != 1 {
		t.Fatalf("Lease = %+v, %v, %v", cur, ok, err)
	}
	if err := a.Cluster().Release(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Cluster().Lease(ctx, testPart); ok {
		t.Fatal("a released lease still valid")
	}
	if l, err := b.Cluster().Acquire(ctx, testPart); err != nil || l.Epoch != 2 {
		t.Fatalf("b's Acquire after release = %+v, %v", l, err)
	}
	if err := put(a, "p/alice/2"); !errors.Is(err, ErrFenced) {
		t.Fatalf("a's write after release: %v, want ErrFenced", err)
	}
	if err := put(b, "p/alice/3"); err != nil {
		t.Fatal(err)
	}
	if exists(t, b, "p/alice/2") || !exists(t, b, "p/alice/1") || !exists(t, a, "p/alice/3") {
		t.Fatal("writes landed wrongly")
	}
	// Keys outside any partition are not fenced.
	if err := put(a, "meta"); err != nil {
		t.Fatal(err)
	}
	if want := []string{"a:p/alice", "b:p/alice"}; len(acquired) != 2 || acquired[0] != want[0] || acquired[1] != want[1] {
		t.Fatalf("OnAcquire calls = %q, want %q", acquired, want)
	}
	if st := a.Cluster().Stats(); st.Fenced != 2 || st.Acquired != 1 {
		t.Fatalf("a's stats = %+v", st)
	}
	nodes, err := a.Cluster().Nodes(ctx)
	if err != nil || len(nodes) != 2 || nodes[0].ID != "a" || nodes[1].Addr != "b:1" {
		t.Fatalf("Nodes = %+v, %v", nodes, err)
	}
}

// TestLeaseTakeoverFences: a's lease lapses (as when a pauses longer than
// the TTL), b takes the partition over, and a, which still believes it
// holds the lease, can no longer commit; its next renewal finds the lease
// lost and says so.
func TestLeaseTakeoverFences(t *testing.T) {
	a, b, sql := clusterPair(t, true)
	ctx := context.Background()
	var mu sync.Mutex
	var lost [][]byte
	a.pg.opts.OnLose = func(p []byte) { mu.Lock(); lost = append(lost, p); mu.Unlock() }
	lostParts := func() [][]byte { mu.Lock(); defer mu.Unlock(); return lost }
	if _, err := a.Cluster().Acquire(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	sql(`UPDATE {s}.lease_expiry SET expires_at = now() - interval '1 second'`)
	l, err := b.Cluster().Acquire(ctx, testPart)
	if err != nil || l.Epoch != 2 {
		t.Fatalf("takeover = %+v, %v", l, err)
	}
	if !a.Cluster().Holds(testPart) {
		t.Fatal("a should not know yet")
	}
	if err := put(a, "p/alice/late"); !errors.Is(err, ErrFenced) {
		t.Fatalf("a's late write: %v, want ErrFenced", err)
	}
	if exists(t, b, "p/alice/late") {
		t.Fatal("a fenced write landed")
	}
	// The fenced commit makes a renew at once (the TTL's third is 3 s).
	for deadline := time.Now().Add(2 * time.Second); a.Cluster().Holds(testPart) && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
	if a.Cluster().Holds(testPart) || len(lostParts()) != 1 || string(lostParts()[0]) != string(testPart) {
		t.Fatalf("after the fenced commit: holds %v, lost %q", a.Cluster().Holds(testPart), lostParts())
	}
	if st := b.Cluster().Stats(); st.Takeovers != 1 {
		t.Fatalf("b's stats = %+v", st)
	}
}

// TestLeaseTakeoverDuringWrite: a write that began before a takeover
// commits nothing once the takeover committed first.
func TestLeaseTakeoverDuringWrite(t *testing.T) {
	a, b, sql := clusterPair(t, true)
	ctx := context.Background()
	if _, err := a.Cluster().Acquire(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	err := a.Update(ctx, func(tx *Txn) error {
		if _, err := tx.Get([]byte("p/alice/x")); !errors.Is(err, ErrNotFound) { // begins the transaction
			return err
		}
		if err := tx.Set([]byte("p/alice/during"), []byte("v")); err != nil {
			return err
		}
		sql(`UPDATE {s}.lease_expiry SET expires_at = now() - interval '1 second'`)
		if _, err := b.Cluster().Acquire(ctx, testPart); err != nil {
			t.Errorf("takeover: %v", err)
		}
		return nil
	})
	if !errors.Is(err, ErrFenced) && !errors.Is(err, ErrConflict) {
		t.Fatalf("write across a takeover: %v, want ErrFenced or ErrConflict", err)
	}
	if exists(t, b, "p/alice/during") {
		t.Fatal("the write across the takeover landed")
	}
	// Run again, as engine.Update does on a conflict: fenced.
	if err := put(a, "p/alice/during"); !errors.Is(err, ErrFenced) {
		t.Fatalf("retry: %v, want ErrFenced", err)
	}
}

// TestLeaseAutoTake: without ExplicitLeases the first writer takes the
// partition in its own commit; another process's write is refused while
// the lease lives, and takes it once it lapsed.
func TestLeaseAutoTake(t *testing.T) {
	a, b, sql := clusterPair(t, false)
	if err := put(a, "p/alice/1"); err != nil {
		t.Fatal(err)
	}
	if !a.Cluster().Holds(testPart) {
		t.Fatal("a's write did not take the lease")
	}
	err := put(b, "p/alice/2")
	var held *LeaseHeldError
	if !errors.As(err, &held) || held.Lease.Node != "a" {
		t.Fatalf("b's write: %v, want a LeaseHeldError naming a", err)
	}
	if exists(t, a, "p/alice/2") {
		t.Fatal("refused write landed")
	}
	sql(`UPDATE {s}.lease_expiry SET expires_at = now() - interval '1 second'`)
	if err := put(b, "p/alice/2"); err != nil {
		t.Fatal(err)
	}
	if err := put(a, "p/alice/3"); !errors.Is(err, ErrFenced) {
		t.Fatalf("a after b took over: %v, want ErrFenced", err)
	}
}

// TestLeaseRace: nodes racing for a free partition: exactly one wins.
func TestLeaseRace(t *testing.T) {
	a, b, _ := clusterPair(t, true)
	ctx := context.Background()
	for i := 0; i < 10; i++ {
		part := []byte{'p', '/', byte('a' + i)}
		var wg sync.WaitGroup
		errs := make([]error, 2)
		for j, db := range []*DB{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				_, errs[j] = db.Cluster().Acquire(ctx, part)
			}()
		}
		wg.Wait()
		if (errs[0] == nil) == (errs[1] == nil) {
			t.Fatalf("race %d: %v / %v; want one winner", i, errs[0], errs[1])
		}
	}
}

// TestClusterClose: Close gives the leases and the heartbeat up.
func TestClusterClose(t *testing.T) {
	a, b, _ := clusterPair(t, true)
	ctx := context.Background()
	if _, err := a.Cluster().Acquire(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	if err := a.Close(); err != nil {
		t.Fatal(err)
	}
	if _, ok, _ := b.Cluster().Lease(ctx, testPart); ok {
		t.Fatal("lease of a closed node still valid")
	}
	nodes, err := b.Cluster().Nodes(ctx)
	if err != nil || len(nodes) != 1 || nodes[0].ID != "b" {
		t.Fatalf("Nodes after a closed = %+v, %v", nodes, err)
	}
	if (&DB{}).Cluster() != nil {
		t.Fatal("a Badger store has a Cluster")
	}
}

// TestLeasesDroppedWhenDatabaseLost: a node that cannot renew for longer
// than a lease lasts forgets its leases (another node may have taken them
// over), telling OnLose.
func TestLeasesDroppedWhenDatabaseLost(t *testing.T) {
	lost := make(chan string, 1)
	a, _ := openTestPostgres(t, &PostgresOptions{Node: "a", LeaseTTL: time.Second, ExplicitLeases: true, Partition: partOf,
		OnLose: func(p []byte) { lost <- string(p) }})
	if _, err := a.Cluster().Acquire(context.Background(), testPart); err != nil {
		t.Fatal(err)
	}
	a.pg.pool.Close() // the database is out of reach from now on
	select {
	case p := <-lost:
		if p != string(testPart) {
			t.Fatalf("OnLose(%q)", p)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("leases kept while the database was out of reach")
	}
	if a.Cluster().Holds(testPart) {
		t.Fatal("Holds after the leases were dropped")
	}
	if st := a.Cluster().Stats(); st.RenewFailures == 0 || st.Lost != 1 {
		t.Fatalf("stats = %+v", st)
	}
}

// TestPostgresUnavailable: a database that cannot be reached, or that
// drops the store's connections, is ErrUnavailable, not an internal error.
func TestPostgresUnavailable(t *testing.T) {
	testPostgresDSN(t)
	_, err := OpenPostgres(context.Background(), &PostgresOptions{DSN: "host=127.0.0.1 port=1 user=nobody connect_timeout=2"})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("OpenPostgres on a closed port: %v, want ErrUnavailable", err)
	}
	dsn := testPostgresDSN(t)
	if strings.Contains(dsn, "://") {
		sep := "?"
		if strings.Contains(dsn, "?") {
			sep = "&"
		}
		dsn += sep + "application_name=kvtest_unavailable"
	} else {
		dsn += " application_name=kvtest_unavailable"
	}
	c, err := pgx.Connect(context.Background(), testPostgresDSN(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(context.Background())
	db, _ := openTestPostgres(t, &PostgresOptions{DSN: dsn})
	// The connection is cut in the middle of a transaction, as a
	// failover or a restart of the server does.
	err = db.View(context.Background(), func(tx *Txn) error {
		if _, err := tx.Get([]byte("a")); !errors.Is(err, ErrNotFound) {
			return err
		}
		if _, err := c.Exec(context.Background(), `SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'kvtest_unavailable'`); err != nil {
			t.Fatal(err)
		}
		_, err := tx.Get([]byte("b"))
		return err
	})
	if !errors.Is(err, ErrUnavailable) {
		t.Fatalf("a read on a cut connection: %v, want ErrUnavailable", err)
	}
	// The pool replaces the connection: the store works again.
	if err := put(db, "k"); err != nil {
		t.Fatalf("after the cut: %v", err)
	}
}

// TestPostgresCommitAnswerCut: a connection that fails after PostgreSQL
// answered COMMIT, while the rest of the batch's answer is read, does not
// make a committed transaction look failed (the engine would then leave
// the write out of its indexes).
func TestPostgresCommitAnswerCut(t *testing.T) {
	db, _ := openTestPostgres(t, nil)
	// The connection fails while the end of the answer is read.
	db.pg.afterCommit = func(br pgx.BatchResults) error {
		br.Close()
		return io.ErrUnexpectedEOF
	}
	if err := put(db, "k"); err != nil {
		t.Fatalf("committed write reported as %v", err)
	}
	db.pg.afterCommit = nil
	if !exists(t, db, "k") {
		t.Fatal("the write is not there")
	}
}

// TestRenewalDoesNotConflict: a renewal in the middle of a write (it comes
// every third of the TTL) does not make the write's fence conflict.
func TestRenewalDoesNotConflict(t *testing.T) {
	a, _, _ := clusterPair(t, true)
	ctx := context.Background()
	if _, err := a.Cluster().Acquire(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	err := a.Update(ctx, func(tx *Txn) error {
		if _, err := tx.Get([]byte("p/alice/x")); !errors.Is(err, ErrNotFound) { // begins the transaction
			return err
		}
		if err := a.pg.renew(ctx); err != nil {
			t.Fatal(err)
		}
		if _, err := a.Cluster().Acquire(ctx, testPart); err != nil { // an explicit renewal
			t.Fatal(err)
		}
		return tx.Set([]byte("p/alice/x"), []byte("v"))
	})
	if err != nil {
		t.Fatalf("a write across a renewal: %v", err)
	}
}

// TestHoldsWithoutPartitions: a store that fences nothing (no Partition
// function: one process) holds every partition, so the background work
// that asks never skips anything.
func TestHoldsWithoutPartitions(t *testing.T) {
	db, _ := openTestPostgres(t, nil)
	if !db.Cluster().Holds(testPart) {
		t.Fatal("a store without partitions does not hold one")
	}
}

// TestLeaseRestartedNodeSameID: a node is paused holding a lease; it is
// restarted beside the paused process under the same node id and takes
// the lease back at a new epoch. The node ids match, so only the epoch in
// the write's fence tells the stale process apart: its writes are fenced,
// the new one's land.
func TestLeaseRestartedNodeSameID(t *testing.T) {
	ctx := context.Background()
	// The old process's TTL is long, so no renewal of its runs during the
	// test (it is paused) and it still believes it holds the lease.
	old, o := openTestPostgres(t, &PostgresOptions{Node: "a", Partition: partOf, ExplicitLeases: true, LeaseTTL: time.Minute})
	if l, err := old.Cluster().Acquire(ctx, testPart); err != nil || l.Epoch != 1 {
		t.Fatalf("Acquire = %+v, %v", l, err)
	}
	if err := put(old, "p/alice/1"); err != nil {
		t.Fatal(err)
	}
	restarted, _ := openTestPostgres(t, &PostgresOptions{Node: "a", Schema: o.Schema, Partition: partOf, ExplicitLeases: true, LeaseTTL: time.Minute})
	if l, err := restarted.Cluster().Acquire(ctx, testPart); err != nil || l.Epoch != 2 || l.Node != "a" {
		t.Fatalf("the restarted node's Acquire = %+v, %v; want epoch 2", l, err)
	}
	if !old.Cluster().Holds(testPart) {
		t.Fatal("the paused process should not know yet")
	}
	if err := put(old, "p/alice/stale"); !errors.Is(err, ErrFenced) {
		t.Fatalf("the stale process's write: %v, want ErrFenced", err)
	}
	if err := put(restarted, "p/alice/2"); err != nil {
		t.Fatalf("the restarted node's write: %v", err)
	}
	if exists(t, restarted, "p/alice/stale") || !exists(t, restarted, "p/alice/2") {
		t.Fatal("writes landed wrongly")
	}
}

// TestLeasePausedHolderLapses: a holder is paused (none of its work runs,
// its renewals included) for longer than the TTL while the database stays
// reachable: Holds turns false from the lease's end, though nothing told
// the node, because another may have taken the partition over meanwhile.
func TestLeasePausedHolderLapses(t *testing.T) {
	ttl := time.Minute // no renewal comes during the test
	a, _ := openTestPostgres(t, &PostgresOptions{Node: "a", Partition: partOf, ExplicitLeases: true, LeaseTTL: ttl})
	if _, err := a.Cluster().Acquire(context.Background(), testPart); err != nil {
		t.Fatal(err)
	}
	if !a.Cluster().Holds(testPart) {
		t.Fatal("Holds after Acquire")
	}
	a.pg.skew.Store(int64(ttl - 5*time.Second))
	if !a.Cluster().Holds(testPart) {
		t.Fatal("Holds false before the TTL passed")
	}
	a.pg.skew.Store(int64(ttl + time.Millisecond))
	if a.Cluster().Holds(testPart) {
		t.Fatal("Holds true after a pause longer than the TTL")
	}
	if st := a.Cluster().Stats(); st.RenewFailures != 0 {
		t.Fatalf("the database was reachable, yet %d renewals failed", st.RenewFailures)
	}
}

// TestLeaseRenewedKeepsHolding: a lease with a short TTL, renewed several
// times, holds past its first TTL on both sides: Holds stays true on the
// node, and another node finds it live and cannot take it.
func TestLeaseRenewedKeepsHolding(t *testing.T) {
	if testing.Short() {
		t.Skip("waits three seconds")
	}
	ttl := 2 * time.Second
	a, o := openTestPostgres(t, &PostgresOptions{Node: "a", Partition: partOf, ExplicitLeases: true, LeaseTTL: ttl})
	b, _ := openTestPostgres(t, &PostgresOptions{Node: "b", Schema: o.Schema, Partition: partOf, ExplicitLeases: true, LeaseTTL: ttl})
	ctx := context.Background()
	if _, err := a.Cluster().Acquire(ctx, testPart); err != nil {
		t.Fatal(err)
	}
	// Renew explicitly too, so that a slow machine that delays the
	// background loop cannot make the lease lapse.
	for end := time.Now().Add(ttl + ttl/2); time.Now().Before(end); time.Sleep(ttl / 3) {
		if err := a.pg.renew(ctx); err != nil {
			t.Fatal(err)
		}
		if !a.Cluster().Holds(testPart) {
			t.Fatal("Holds false right after a renewal")
		}
	}
	if err := a.pg.renew(ctx); err != nil {
		t.Fatal(err)
	}
	if !a.Cluster().Holds(testPart) {
		t.Fatalf("Holds false %v after Acquire, renewed every %v", ttl+ttl/2, ttl/3)
	}
	if l, ok, err := b.Cluster().Lease(ctx, testPart); err != nil || !ok || l.Node != "a" || l.Epoch != 1 {
		t.Fatalf("Lease seen by b = %+v, %v, %v; want a's, epoch 1", l, ok, err)
	}
	if _, err := b.Cluster().Acquire(ctx, testPart); !errors.Is(err, ErrLeaseHeld) {
		t.Fatalf("b's Acquire of a renewed lease: %v, want ErrLeaseHeld", err)
	}
	if err := put(a, "p/alice/1"); err != nil {
		t.Fatalf("a's write after renewals: %v", err)
	}
}
