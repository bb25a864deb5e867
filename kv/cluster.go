package kv

import (
	"context"
	"errors"
	"fmt"
	"time"
)

// Partition ownership (PostgreSQL only)
//
// Several processes may open one PostgreSQL store. Each partition (a
// (tenant, user) pair, or a tenant's shared partition: engine decides, by
// [PostgresOptions.Partition]) has at most one owner at a time, named by a
// row of the lease table with an epoch. Every read-write transaction that
// writes a key of a partition checks, before it commits and inside the
// same transaction, that this process holds the partition's lease at the
// epoch it took it with; a process whose lease was taken over (it paused,
// or lost the database for longer than the lease) cannot commit:
// [ErrFenced]. The check locks the lease row (FOR SHARE), so a takeover
// waits for a running write to finish, and a write that started before a
// takeover committed ends in a serialization failure, which the retry of
// engine.Update turns into ErrFenced.
//
// Each process renews its leases and its heartbeat row every third of
// [PostgresOptions.LeaseTTL]; a renewal that finds a lease gone (taken
// over) drops it and calls [PostgresOptions.OnLose].

// ErrFenced is returned by a commit that writes to a partition whose lease
// this process no longer holds (another took it over, or it was never
// taken with [PostgresOptions.ExplicitLeases]). Nothing of the
// transaction was written.
var ErrFenced = errors.New("kv: partition lease lost to another node (fenced)")

// ErrUnavailable is returned when a store in PostgreSQL cannot reach its
// database (the connection failed, was cut or timed out): nothing of an
// update that returns it was committed unless the cut came during the
// COMMIT itself, which PostgreSQL cannot report back.
var ErrUnavailable = errors.New("kv: the database is unreachable")

// ErrLeaseHeld is returned by [Cluster.Acquire], and by a write in a store
// without [PostgresOptions.ExplicitLeases], when another live node holds
// the partition's lease. The error is a *[LeaseHeldError] naming it.
var ErrLeaseHeld = errors.New("kv: partition is owned by another node")

// LeaseHeldError names the node that holds a partition's lease.
type LeaseHeldError struct {
	Lease Lease
}

// Error implements error.
func (e *LeaseHeldError) Error() string {
	return fmt.Sprintf("%v: %s holds it at epoch %d until %s", ErrLeaseHeld, e.Lease.Node, e.Lease.Epoch, e.Lease.Expires.Format(time.RFC3339Nano))
}

// Unwrap returns ErrLeaseHeld.
func (e *LeaseHeldError) Unwrap() error { return ErrLeaseHeld }

// Lease is one partition's lease.
type Lease struct {
	// Partition is the partition's key prefix.
	Partition []byte
	// Node holds the lease.
	Node string
	// Epoch grows by one at every change of owner.
	Epoch uint64
	// Expires is when the lease lapses unless renewed.
	Expires time.Time
}

// Node is a process of the cluster, as its heartbeat row describes it.
type Node struct {
	// ID names the node ([PostgresOptions.Node]).
	ID string
	// Addr is where other nodes forward requests ([PostgresOptions.Addr]);
	// empty for a process that serves none.
	Addr string
	// Seen is the node's last heartbeat, by the database's clock.
	Seen time.Time
}

// ClusterStats counts lease events since Open.
type ClusterStats struct {
	// Held is how many leases this node holds now.
	Held int
	// Acquired counts leases taken; Takeovers those taken from another
	// node whose lease had lapsed.
	Acquired, Takeovers uint64
	// Renewals counts renewal rounds; Lost the leases found taken over.
	Renewals, Lost uint64
	// Fenced counts commits refused with ErrFenced.
	Fenced uint64
	// RenewFailures counts renewal rounds that could not reach the
	// database.
	RenewFailures uint64
}

// Cluster is a PostgreSQL store's view of partition ownership; see
// [DB.Cluster]. It is safe for concurrent use.
type Cluster struct {
	pg *pgStore
}

// Node returns this process's node id.
func (c *Cluster) Node() string { return c.pg.opts.Node }

// Addr returns the address this node advertises.
func (c *Cluster) Addr() string { return c.pg.opts.Addr }

// LeaseTTL returns how long a lease and a heartbeat last unless renewed
// ([PostgresOptions.LeaseTTL], its default applied): a node silent for
// longer is not live, and its leases may be taken over.
func (c *Cluster) LeaseTTL() time.Duration { return c.pg.opts.LeaseTTL }

// Nodes returns the live nodes (a heartbeat within the lease TTL),
// this one included, ordered by id.
func (c *Cluster) Nodes(ctx context.Context) ([]Node, error) { return c.pg.nodes(ctx) }

// Lease returns the partition's current lease; ok is false when no node
// holds a lease that has not lapsed.
func (c *Cluster) Lease(ctx context.Context, part []byte) (l Lease, ok bool, err error) {
	return c.pg.lease(ctx, part)
}

// Acquire takes the partition's lease for this node, or renews it when
// this node holds it already. A lapsed lease of another node is taken over
// (a new epoch); a live one is refused with a *[LeaseHeldError]. Taking a
// lease this node did not hold at its current epoch calls
// [PostgresOptions.OnAcquire] before Acquire returns, so cached state of
// the partition is dropped before anything is served from it.
func (c *Cluster) Acquire(ctx context.Context, part []byte) (Lease, error) {
	return c.pg.acquire(ctx, part)
}

// Release gives the partition's lease up (it lapses at once), if this
// node holds it.
func (c *Cluster) Release(ctx context.Context, part []byte) error { return c.pg.release(ctx, part) }

// Holds reports whether this node believes it holds the partition's lease
// (as of its last acquisition or renewal, and renewed within the TTL; no
// round trip). A write still checks the lease in the database. A store
// opened without [PostgresOptions.Partition] fences nothing, and Holds is
// always true there.
func (c *Cluster) Holds(part []byte) bool { return c.pg.holds(part) }

// Stats returns the lease counters.
func (c *Cluster) Stats() ClusterStats { return c.pg.clusterStats() }
