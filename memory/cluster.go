package memory

import (
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
)

// PostgresOptions configures a store in PostgreSQL; see
// [kv.PostgresOptions]. The engine sets its Partition, OnAcquire and
// OnLose.
type PostgresOptions = kv.PostgresOptions

// LeaseHeldError names the process that holds a partition's lease.
type LeaseHeldError = kv.LeaseHeldError

// Cluster is the partition ownership of a store in PostgreSQL; see
// [kv.Cluster].
type Cluster = kv.Cluster

// Cluster returns the partition ownership of a store in PostgreSQL (which
// process holds which (tenant, user) partition), or nil for a Badger
// store.
func (s *Store) Cluster() *Cluster { return s.db.Cluster() }

// Partition returns the prefix of the partition scope's data lives in (the
// user's, or the tenant's shared partition for a scope without a user):
// what a [Cluster] lease is taken on.
func Partition(scope Scope) []byte { return engine.PartitionOf(scope) }

// owns reports whether this process may do background work on the data
// under key (a key or a scope prefix); see [engine.DB.Owns].
func (s *Store) owns(key []byte) bool { return s.db.Owns(key) }
