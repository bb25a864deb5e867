package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	mrand "math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/kv"
)

// Cluster is a PostgreSQL store's partition ownership; see [kv.Cluster].
type Cluster = kv.Cluster

// openKV opens the key-value store the options name: Badger in dir, or
// PostgreSQL with the engine's partition hooks.
func openKV(dir string, o *Options, hooks *partitionHooks) (*kv.DB, error) {
	if o.Postgres == nil {
		return kv.Open(dir, &kv.Options{
			Durability:     o.Durability,
			EncryptionKey:  o.EncryptionKey,
			Logger:         o.Logger,
			ReadOnly:       o.ReadOnly,
			BlockCacheSize: o.BlockCacheBytes,
		})
	}
	if dir != "" {
		return nil, fmt.Errorf("%w: a directory (%q) and Postgres are both set", ErrInvalidOptions, dir)
	}
	po := *o.Postgres
	if len(o.EncryptionKey) > 0 {
		if len(po.EncryptionKey) > 0 && !bytes.Equal(po.EncryptionKey, o.EncryptionKey) {
			return nil, fmt.Errorf("%w: EncryptionKey and Postgres.EncryptionKey differ", ErrInvalidOptions)
		}
		po.EncryptionKey = o.EncryptionKey
	}
	if po.Logger == nil {
		po.Logger = o.Logger
	}
	po.Partition = LeasePartition
	po.OnAcquire = hooks.changed
	po.OnLose = hooks.changed
	return kv.OpenPostgres(context.Background(), &po)
}

// LeasePartition returns the partition whose lease fences a write of key:
// the user prefix of a key under a user (a session's keys included), the
// tenant prefix of a tenant's shared partition, and the partition of the
// scope a system key of a partition names (extraction queue, parked jobs,
// expiring list). Keys of the store itself (metadata, the embedding cache)
// belong to no partition.
func LeasePartition(key []byte) ([]byte, bool) {
	if isTenantKey(key) {
		return partitionOf(key)
	}
	ns, suffix, ok := ParseSystemKey(key)
	if !ok {
		return nil, false
	}
	switch ns {
	case NSExtractQueue, NSExtractParked, NSExpiring:
		if isTenantKey(suffix) {
			return partitionOf(suffix)
		}
	}
	return nil, false
}

// PartitionOf returns the prefix of the partition a scope's data lives in,
// which [Cluster] leases are taken on: the user's, or the tenant's shared
// partition when the scope has no user.
func PartitionOf(s Scope) []byte {
	if s.User == "" {
		return s.Prefix(LevelTenant)
	}
	return s.Prefix(LevelUser)
}

// partitionHooks carries the lease callbacks to the DB once it is open.
type partitionHooks struct {
	db atomic.Pointer[DB]
}

func (h *partitionHooks) changed(part []byte) {
	if db := h.db.Load(); db != nil {
		db.partitionChanged(part)
	}
}

// partitionChanged drops what this process cached of a partition whose
// lease it took or lost: its vector and text indexes (the next use loads
// them from the store: snapshot and log), then whatever the listeners
// keep (package memory's name sets).
func (db *DB) partitionChanged(part []byte) {
	var stale []*partition
	db.parts.Lock()
	for key, p := range db.parts.m {
		if inPartition([]byte(key), part) {
			stale = append(stale, p)
		}
	}
	db.parts.Unlock()
	// Their snapshots must not overwrite the one the other owner wrote.
	db.dropPartitions(stale)
	db.listeners.Lock()
	fns := append([]func([]byte){}, db.listeners.fns...)
	db.listeners.Unlock()
	for _, fn := range fns {
		fn(part)
	}
}

// inPartition reports whether a record prefix (a partition's, or a named
// space's under it) is of the partition part.
func inPartition(prefix, part []byte) bool {
	if !bytes.HasPrefix(prefix, part) {
		return false
	}
	return len(prefix) == len(part) || Namespace(prefix[len(part)]) == NSSpace
}

// OnPartitionChange registers fn to be called with a partition's prefix
// whenever this process takes or loses its lease (PostgreSQL only):
// whatever fn's owner cached of the partition may be stale.
func (db *DB) OnPartitionChange(fn func(part []byte)) {
	db.listeners.Lock()
	db.listeners.fns = append(db.listeners.fns, fn)
	db.listeners.Unlock()
}

// Cluster returns the partition ownership of a store in PostgreSQL, or nil.
func (db *DB) Cluster() *Cluster { return db.kv.Cluster() }

// Owns reports whether this process holds the partition of key (a key or
// a scope prefix; see [LeasePartition]), so that background work may write
// there: always with Badger, and for a key of no partition.
func (db *DB) Owns(key []byte) bool {
	c := db.kv.Cluster()
	if c == nil {
		return true
	}
	part, ok := LeasePartition(key)
	return !ok || c.Holds(part)
}

// foreignFresh is how long a process keeps the indexes of a partition of
// a PostgreSQL store that another process may be writing (one it holds no
// lease on: a tenant's shared memories recalled by a user's owner) before
// it loads them again from the store's snapshot and log.
const foreignFresh = time.Second

// foreignStale reports whether p is such a partition, loaded longer than
// foreignFresh ago; db.parts is held.
func (db *DB) foreignStale(p *partition) bool {
	if !db.kv.Postgres() || !p.loaded.Load() || time.Since(time.Unix(0, p.loadedAt.Load())) < foreignFresh {
		return false
	}
	return !db.Owns(p.prefix)
}

// loadFirst is the error a transaction of a PostgreSQL store stops with
// when it needs a partition that is not loaded: loading reads on another
// connection, and transactions that each hold one while waiting for
// another would exhaust the pool. update loads the partition outside the
// transaction and runs the function again.
type loadFirst struct{ prefix []byte }

func (e *loadFirst) Error() string {
	return fmt.Sprintf("engine: partition %q must be loaded before the transaction", e.prefix)
}

// maxLoadFirst bounds how often update loads a partition and runs its
// function again (each run may name another partition, or find one
// dropped again by a lease change).
const maxLoadFirst = 16

// partition returns the partition of prefix for this transaction, pinned
// until the transaction ends (see acquire): loaded on first use with
// Badger, and with PostgreSQL only if already loaded and fresh (else
// *loadFirst).
func (tx *Tx) partition(prefix []byte) (*partition, error) {
	var p *partition
	if !tx.db.kv.Postgres() {
		var err error
		if p, err = tx.db.acquire(tx.ctx, prefix); err != nil {
			return nil, err
		}
	} else {
		db := tx.db
		db.parts.Lock()
		var ok bool
		p, ok = db.parts.m[string(prefix)]
		ok = ok && p.loaded.Load() && !db.foreignStale(p)
		if ok {
			p.pins.Add(1)
			db.parts.lru.MoveToFront(p.elem)
			db.cache.hits.Add(1)
		}
		db.parts.Unlock()
		if !ok {
			return nil, &loadFirst{prefix: bytes.Clone(prefix)}
		}
	}
	if slices.Contains(tx.pinned, p) {
		p.release() // pinned once a transaction
	} else {
		tx.pinned = append(tx.pinned, p)
	}
	return p, nil
}

// outcomeUnknown reports whether a failed update of a PostgreSQL store may
// have committed all the same: the database was lost, or the context
// ended, while the commit was on its way.
func outcomeUnknown(err error) bool {
	return errors.Is(err, kv.ErrUnavailable) || errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)
}

// dropPartitions drops partitions from the cache (the next use loads
// them from the store), and keeps their snapshots from being written.
func (db *DB) dropPartitions(ps []*partition) {
	if len(ps) == 0 {
		return
	}
	db.parts.Lock()
	defer db.parts.Unlock()
	for _, p := range ps {
		db.removeLocked(p)
	}
}

// listeners of partition changes.
type listeners struct {
	sync.Mutex
	fns []func([]byte)
}

// conflictBackoff waits before the n-th run again of a transaction that
// conflicted, in a PostgreSQL store: writers of one partition that
// conflicted at once would otherwise collide again. Up to about 2^n
// milliseconds, jittered, at most 100 ms.
func conflictBackoff(ctx context.Context, n int) {
	d := time.Duration(1<<min(n, 7)) * time.Millisecond
	d = min(d/2+time.Duration(mrand.Int64N(int64(d))), 100*time.Millisecond)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
	case <-t.C:
	}
}
