package engine

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/kv"
)

// Options configures a [DB]. A nil *Options, and every zero field, means the
// documented default; Open refuses a bad field with [ErrInvalidOptions]
// naming it.
type Options struct {
	// Durability of writes: [Sync] (zero) or [Async].
	Durability Durability
	// EncryptionKey encrypts the files at rest with AES when set (16, 24 or
	// 32 bytes; another length is refused). The same key must be given on every later Open.
	EncryptionKey []byte
	// Logger receives the storage layer's log lines and the engine's
	// warnings (an unusable snapshot, a failed background snapshot). Nil
	// discards them.
	Logger *slog.Logger

	// ReadOnly opens an existing store on disk for reading only (see
	// [kv.Options.ReadOnly]): no file of the store is written, no
	// snapshot is taken or migrated and no compaction runs, at Close
	// either; writes fail. A store that was not closed cleanly fails with
	// [kv.ErrNeedsRecovery]: open it read-write once. Ignored for a store
	// in PostgreSQL, whose files a read does not rewrite.
	ReadOnly bool

	// ExactThreshold is the partition size up to which vector search is an
	// exact scan; larger partitions use HNSW. Zero means
	// [DefaultExactThreshold]; negative is refused.
	ExactThreshold int

	// HNSW configures the graphs of large partitions; nil, and each zero
	// field, means the index package's default. Open checks it as
	// [index.NewHNSW] does, so that a bad value fails here rather than
	// when the first partition outgrows ExactThreshold.
	HNSW *index.HNSWOptions

	// SnapshotInterval is how often the background snapshotter looks for
	// partitions to snapshot. Zero means one minute; negative is refused.
	SnapshotInterval time.Duration

	// SnapshotAfter is how many changes a partition takes before the
	// snapshotter writes it again. Zero means 10,000; negative is refused.
	// Close snapshots every changed partition regardless.
	SnapshotAfter int

	// CompactDelay bounds how long erased bytes stay in the files: an
	// erasure ([DB.ErasePrefix], [DB.ScheduleCompact]) makes a background
	// compaction run this long after it, which takes the bytes of every
	// erasure made meanwhile out of the files; Close runs one still
	// waiting, and an erasure left by a process that died is compacted
	// after the next Open. Zero means one minute; negative turns the
	// background compaction off ([DB.Compact] still works, and the next
	// Open with it on does the work).
	CompactDelay time.Duration

	// Pace, when set, is called by the background snapshotter after each
	// partition it snapshots, with how long that took; it may block for a
	// while to leave the CPU to requests (package memory's pacer does).
	// It must return soon after ctx is done.
	Pace func(ctx context.Context, worked time.Duration)

	// VectorSource names what makes the vectors this DB writes (the
	// embedder). Zero checks nothing. Otherwise the store's first record
	// records it (in the same transaction), and [Tx.PutRecord] refuses a
	// record, with [ErrVectorSourceMismatch], when the store recorded a
	// source that is not [VectorSource.Compatible] with this one: vectors
	// of two models never share a store. [DB.VectorSource] reports the
	// recorded one, which a caller can check at Open. A store written
	// before sources were recorded takes the source of its next record.
	VectorSource VectorSource

	// PartitionCacheBytes bounds the memory of the loaded partitions
	// (their vector and text indexes, estimated as changes are applied):
	// past it the least recently used are evicted, a changed HNSW graph
	// snapshotted first, and loaded again from the store on their next
	// use. Zero means [DefaultPartitionCacheBytes]; negative is refused.
	// A partition in use is never evicted, so one larger than the budget
	// still loads, and the cache may exceed the budget while its
	// partitions are in use or being snapshotted.
	PartitionCacheBytes int64

	// BlockCacheBytes is the size of Badger's cache of decompressed table
	// blocks ([kv.Options.BlockCacheSize]). Zero means its default, 8 MiB;
	// negative is refused. A Recall reads records and facts through it:
	// measured at 300 users (bench/results/recall.md), 256 MiB cut
	// Recall's p50 by a third against the default, at up to that much more memory.
	// Not used with Postgres.
	BlockCacheBytes int64

	// Postgres, when set, puts the store in a PostgreSQL database instead
	// of a Badger directory (Open's dir must then be ""): see
	// [kv.OpenPostgres]. EncryptionKey and Logger apply to it; the
	// engine sets its Partition, OnAcquire and OnLose, so that writes are
	// fenced by (tenant, user) partition and whatever a process cached of
	// a partition it takes over is dropped. Durability does not apply:
	// a commit is as durable as the server's settings make it.
	Postgres *PostgresOptions
}

// PostgresOptions configures a store in PostgreSQL; see
// [kv.PostgresOptions].
type PostgresOptions = kv.PostgresOptions

// validate reports every bad field of the engine's own at once, each
// named, wrapped in [ErrInvalidOptions]. Zero fields are defaults and pass.
// Durability and EncryptionKey are the storage layer's: kv.Open checks
// them, and Open reports its refusal as ErrInvalidOptions too.
func (o *Options) validate() error {
	var errs []error
	if o.ExactThreshold < 0 {
		errs = append(errs, fmt.Errorf("ExactThreshold %d is negative", o.ExactThreshold))
	}
	if o.HNSW != nil {
		// The index's own check: a partition builds its graph long after
		// Open, when it outgrows ExactThreshold.
		if err := o.HNSW.Validate(); err != nil {
			errs = append(errs, fmt.Errorf("HNSW: %w", err))
		}
	}
	if !o.VectorSource.IsZero() {
		if err := o.VectorSource.validate(); err != nil {
			errs = append(errs, err)
		}
	}
	if o.SnapshotInterval < 0 {
		errs = append(errs, fmt.Errorf("SnapshotInterval %v is negative", o.SnapshotInterval))
	}
	if o.SnapshotAfter < 0 {
		errs = append(errs, fmt.Errorf("SnapshotAfter %d is negative", o.SnapshotAfter))
	}
	if o.PartitionCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("PartitionCacheBytes %d is negative", o.PartitionCacheBytes))
	}
	if o.BlockCacheBytes < 0 {
		errs = append(errs, fmt.Errorf("BlockCacheBytes %d is negative", o.BlockCacheBytes))
	}
	// CompactDelay: negative is documented (background compaction off).
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}
