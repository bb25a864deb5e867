package engine

import (
	"bytes"
	"container/list"
	"context"
	"crypto/cipher"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/kv"
)

// Durability says when a write is acknowledged; see [kv.Durability].
type Durability = kv.Durability

const (
	// Sync acknowledges a write once it is on disk. The default.
	Sync = kv.Sync
	// Async acknowledges a write once the operating system has it: it
	// survives the process being killed, not a machine crash.
	Async = kv.Async
)

// maxConflictRetries bounds how often Update re-runs a function whose
// transaction conflicted with a concurrent one.
const maxConflictRetries = 8

// maxPGConflictRetries is maxConflictRetries for a store in PostgreSQL,
// whose serializable checks conflict more often than Badger's (they track
// index pages, not only keys); its runs again back off (conflictBackoff).
const maxPGConflictRetries = 24

// DB is the database: one Badger store, addressed by scope, with managed
// transactions. It is safe for concurrent use by multiple goroutines.
type DB struct {
	kv       *kv.DB
	openedAt time.Time
	logger   *slog.Logger
	gcm      cipher.AEAD // seals snapshots of an encrypted store

	exactThreshold   int
	hnswOpts         index.HNSWOptions
	snapshotInterval time.Duration
	snapshotAfter    int
	// pace is Options.Pace: the snapshotter calls it after each partition.
	pace func(context.Context, time.Duration)

	ids struct {
		sync.Mutex
		entropy *ulid.MonotonicEntropy
		last    ulid.ULID // ids never go back, even if the clock does
	}

	parts struct {
		sync.Mutex
		m   map[string]*partition
		lru list.List // of *partition, most recently used first
	}
	// cache accounts the loaded partitions against their budget.
	cache partCache

	// snapMu orders snapshot file writes against erasure.
	snapMu sync.Mutex
	// snapSalt caches the salt of snapshot names once read or made.
	snapSalt atomic.Pointer[[]byte]

	closeOnce sync.Once
	closeErr  error
	// skipFinalSnapshot makes Close leave snapshots as they are: set by a
	// read-only Open, and by tests (as a crash would).
	skipFinalSnapshot bool
	// beforeApply is a test seam run between a commit and the index
	// applying its changes, to widen that window.
	beforeApply func()
	// snapshotRead is a test seam run by a partition's load between
	// reading its snapshot and replaying the log after it.
	snapshotRead func()
	stop         chan struct{}
	bg           sync.WaitGroup

	// compactions runs the background compaction erasures need.
	compactions compactor
	// compactKV is kv's Compact when nil; a test seam.
	compactKV func(context.Context) error
	// closeWork bounds the snapshots and the compaction Close runs
	// (closeWorkTimeout, unless a test sets less).
	closeWork time.Duration

	// source is the [VectorSource] of this DB's writes (want, zero for
	// none) and the one the store recorded (nil until one is).
	source struct {
		want     VectorSource
		recorded atomic.Pointer[VectorSource]
	}

	// listeners are told of partitions whose lease changed hands.
	listeners listeners

	updates, views, conflicts, failures atomic.Uint64
}

// Open opens the database in dir, creating it if needed; an empty dir keeps
// everything in memory. A nil opts means defaults.
//
// Open returns [ErrLocked] when another process holds dir,
// [ErrEncryptionKey] for a wrong or missing key and [ErrInvalidOptions] for
// bad options.
func Open(dir string, opts *Options) (*DB, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	// The lease hooks reach the DB once it exists; a lease taken before
	// (none is: Open writes nothing) would find it nil.
	var hooks partitionHooks
	store, err := openKV(dir, &o, &hooks)
	if err != nil {
		return nil, convert(err)
	}
	gcm, err := newGCM(o.EncryptionKey)
	if err != nil {
		store.Close()
		return nil, fmt.Errorf("%w: %v", ErrInvalidOptions, err)
	}
	db := &DB{
		kv:               store,
		openedAt:         time.Now(),
		logger:           o.Logger,
		gcm:              gcm,
		exactThreshold:   o.ExactThreshold,
		snapshotInterval: o.SnapshotInterval,
		snapshotAfter:    o.SnapshotAfter,
		pace:             o.Pace,
		stop:             make(chan struct{}),
		closeWork:        closeWorkTimeout,
	}
	db.cache.budget = o.PartitionCacheBytes
	if db.cache.budget == 0 {
		db.cache.budget = DefaultPartitionCacheBytes()
	}
	hooks.db.Store(db)
	if db.logger == nil {
		db.logger = slog.New(slog.DiscardHandler)
	}
	if db.exactThreshold == 0 {
		db.exactThreshold = DefaultExactThreshold
	}
	if o.HNSW != nil {
		db.hnswOpts = *o.HNSW
	}
	if db.snapshotInterval == 0 {
		db.snapshotInterval = time.Minute
	}
	if db.snapshotAfter == 0 {
		db.snapshotAfter = 10000
	}
	db.ids.entropy = ulid.Monotonic(rand.Reader, 0)
	db.parts.m = map[string]*partition{}
	db.source.want = o.VectorSource
	if err := db.loadVectorSource(context.Background()); err != nil {
		store.Close()
		return nil, err
	}
	if o.ReadOnly && dir != "" && !store.Postgres() {
		db.skipFinalSnapshot = true // nothing is written
		return db, nil
	}
	if dir != "" || store.Postgres() {
		if dir != "" {
			db.migrateSnapshots(context.Background())
		}
		db.bg.Go(func() { db.snapshotLoop(db.stop) })
		db.cache.wake = make(chan struct{}, 1)
		db.bg.Go(func() { db.evictLoop(db.stop) })
		db.compactions.start(db, o.CompactDelay)
		db.resumeCompaction()
	}
	return db, nil
}

// Close snapshots the vector partitions that changed, stops the background
// snapshotter and closes the database. It waits for running transactions,
// and calling it again returns the first call's result. No goroutine of the
// DB outlives it.
func (db *DB) Close() error {
	db.closeOnce.Do(func() {
		close(db.stop)
		db.compactions.stop()
		db.bg.Wait()
		if (db.kv.Dir() != "" || db.kv.Postgres()) && !db.skipFinalSnapshot {
			db.closeWorkLocked()
		}
		db.closeErr = convert(db.kv.Close())
	})
	return db.closeErr
}

// closeWorkTimeout bounds each of Close's snapshots and compaction, so
// that a stalled one (issue 26) cannot keep Close from finishing: cut
// short, a snapshot is written by the next Close (the log it covers
// stays), and a compaction is run again by the next Open (the erasure's
// mark stays).
const closeWorkTimeout = 10 * time.Second

// closeWorkLocked snapshots the partitions that changed and finishes a
// pending erasure's compaction, each within db.closeWork; Close runs it
// once, with the background goroutines stopped.
func (db *DB) closeWorkLocked() {
	ctx, cancel := context.WithTimeout(context.Background(), db.closeWork)
	db.snapshotAll(ctx, 1)
	cancel()
	// An erasure still waiting for the background compaction is
	// finished now: the process may not run again soon.
	if db.compactions.wake != nil && db.compactions.pending() {
		ctx, cancel := context.WithTimeout(context.Background(), db.closeWork)
		defer cancel()
		if err := db.Compact(ctx); err != nil {
			db.logger.Warn("engram: compaction at close failed; the next open retries", "err", err)
		}
	}
}

// KV returns the underlying store, for packages of this module that keep
// their own keys (the graph, the indexes).
func (db *DB) KV() *kv.DB { return db.kv }

// Tx is a transaction handed to the function given to [DB.Update] or
// [DB.View], over the keys built by [Scope.Prefix] and [Key]. It is valid
// only until the function returns and is not safe for concurrent use.
type Tx struct {
	t   *kv.Txn
	db  *DB
	ctx context.Context

	pending   []pendingOp  // index changes to apply after the commit
	held      []*partition // partitions whose apply lock this Tx read-holds
	pinned    []*partition // partitions this Tx pinned (see acquire)
	onCommit  []func()     // run after the commit, in order
	sourceSet bool         // checkSource passed, or recorded the source
}

// OnCommit registers f to run once this transaction has committed, after
// its index changes are applied: for in-memory state that must follow the
// stored data and never run ahead of it. f does not run if the attempt
// fails or is retried (the retry registers its own). It runs on the
// goroutine that called Update, before Update returns.
func (tx *Tx) OnCommit(f func()) { tx.onCommit = append(tx.onCommit, f) }

// KV returns the transaction underneath, for packages that keep their own
// keys in it (package graph): what they write commits or rolls back with
// everything else of this Tx.
func (tx *Tx) KV() *kv.Txn { return tx.t }

// IterOptions configures an iterator; see [kv.IterOptions].
type IterOptions = kv.IterOptions

// Get returns a copy of the value under key, or [ErrNotFound].
func (tx *Tx) Get(key []byte) ([]byte, error) {
	v, err := tx.t.Get(key)
	return v, convert(err)
}

// Set stores value under key; both are copied.
func (tx *Tx) Set(key, value []byte) error { return convert(tx.t.Set(key, value)) }

// SetTTL stores value under key until ttl has passed (one-second resolution);
// zero never expires.
func (tx *Tx) SetTTL(key, value []byte, ttl time.Duration) error {
	return convert(tx.t.SetTTL(key, value, ttl))
}

// Delete removes key; a missing key is not an error.
func (tx *Tx) Delete(key []byte) error { return convert(tx.t.Delete(key)) }

// NewIterator returns an iterator over the transaction's snapshot; see
// [kv.Iterator].
func (tx *Tx) NewIterator(opts IterOptions) *kv.Iterator { return tx.t.NewIterator(opts) }

// Update runs fn in a read-write transaction and commits it when fn returns
// nil. An error or a panic from fn discards every write (the panic is
// re-raised). When the commit conflicts with a concurrent transaction, fn is
// run again, up to a few times, so fn must have no effects outside the
// transaction.
func (db *DB) Update(ctx context.Context, fn func(*Tx) error) error {
	return db.update(ctx, db.kv.Update, fn)
}

// UpdateNoSync is [DB.Update] for data derived from what the store
// already holds (a rolling summary, a cache): it returns once the commit
// is visible, without waiting for the disk (see [kv.DB.UpdateNoSync]), so
// a reader that refreshes derived data never waits for an fsync. A crash
// of the machine may lose it; the next synced commit makes it durable.
// Write only what a lost write makes the store compute again.
func (db *DB) UpdateNoSync(ctx context.Context, fn func(*Tx) error) error {
	return db.update(ctx, db.kv.UpdateNoSync, fn)
}

// update runs fn in read-write transactions of commit (kv's Update or
// UpdateNoSync), again on a conflict.
func (db *DB) update(ctx context.Context, commit kvRun, fn func(*Tx) error) error {
	db.updates.Add(1)
	var err error
	committed := false
	defer func() {
		// Counts panics too: they unwind through here with committed false.
		if !committed {
			db.failures.Add(1)
		}
	}()
	for conflicts, loads := 0, 0; ; {
		err = db.attempt(ctx, true, commit, fn)
		var lf *loadFirst
		if errors.As(err, &lf) && loads < maxLoadFirst {
			loads++
			var p *partition
			if p, err = db.acquire(ctx, lf.prefix); err != nil {
				break
			}
			p.release()
			continue
		}
		if !errors.Is(err, kv.ErrConflict) {
			break
		}
		db.conflicts.Add(1)
		if conflicts++; conflicts >= maxConflictRetries && (!db.kv.Postgres() || conflicts >= maxPGConflictRetries) {
			break
		}
		if db.kv.Postgres() {
			conflictBackoff(ctx, conflicts)
		}
	}
	committed = err == nil
	return convert(err)
}

// kvRun is the shape of kv's View, Update and UpdateNoSync.
type kvRun = func(context.Context, func(*kv.Txn) error) error

// View runs fn in a read-only transaction over a consistent snapshot.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	db.views.Add(1)
	err := db.attempt(ctx, false, db.kv.View, fn)
	if err != nil {
		db.failures.Add(1)
	}
	return convert(err)
}

// attempt runs fn in one transaction of run (kv's View, Update or
// UpdateNoSync; update says which kind), then applies its index changes
// if it committed and releases its partitions in any case, panics
// included.
func (db *DB) attempt(ctx context.Context, update bool, run kvRun, fn func(*Tx) error) error {
	tx := &Tx{db: db, ctx: ctx}
	committed := false
	var unsure []*partition
	defer func() {
		tx.finish(committed)
		db.dropPartitions(unsure)
	}()
	err := run(ctx, func(t *kv.Txn) error {
		tx.t = t
		return fn(tx)
	})
	// A commit whose sync failed is visible all the same: the indexes
	// must show it too.
	committed = update && (err == nil || errors.Is(err, kv.ErrNotDurable))
	if update && !committed && db.kv.Postgres() && outcomeUnknown(err) {
		// The connection failed with the COMMIT sent: it may have
		// committed. The partitions it wrote load again from the store.
		for _, op := range tx.pending {
			unsure = append(unsure, op.p)
		}
	}
	return err
}

// NewID returns a new ULID for time t. Ids from one DB strictly increase,
// and sort by time while the clock runs forward; they never go below an id
// the DB has seen in its vector logs, whatever the clock says.
func (db *DB) NewID(t time.Time) ulid.ULID {
	db.ids.Lock()
	defer db.ids.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), db.ids.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond (2^80
		// ids) or t is out of ULID range: fall back to fresh entropy.
		id = ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader)
	}
	if id.Compare(db.ids.last) <= 0 {
		id = NextID(db.ids.last)
	}
	db.ids.last = id
	return id
}

// NextID returns the ULID one above id, wrapping at the top.
func NextID(id ulid.ULID) ulid.ULID {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]++
		if id[i] != 0 {
			break
		}
	}
	return id
}

// PrevID returns the ULID one below id, wrapping at zero.
func PrevID(id ulid.ULID) ulid.ULID {
	for i := len(id) - 1; i >= 0; i-- {
		id[i]--
		if id[i] != 0xFF {
			break
		}
	}
	return id
}

// raiseIDFloor makes later ids sort after id.
func (db *DB) raiseIDFloor(id ulid.ULID) {
	db.ids.Lock()
	if id.Compare(db.ids.last) > 0 {
		db.ids.last = id
	}
	db.ids.Unlock()
}

// ErasePrefix deletes every key that starts with prefix, in bounded batches,
// calling visit (when not nil) with each key and value first. It is safe to
// call again after a failure: it resumes where it stopped.
//
// Vector partitions under prefix are dropped from memory and their
// snapshot files deleted.
func (db *DB) ErasePrefix(ctx context.Context, prefix []byte, visit func(key, value []byte) error) (n int, err error) {
	db.markPending()
	n, err = db.kv.DeletePrefix(ctx, prefix, visit)
	if err != nil {
		if n > 0 {
			db.ScheduleCompact() // what was deleted must still leave the files
		}
		return n, convert(err)
	}
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	db.parts.Lock()
	for key, p := range db.parts.m {
		if bytes.HasPrefix([]byte(key), prefix) {
			db.removeLocked(p)
		}
	}
	db.parts.Unlock()
	db.ScheduleCompact()
	if db.kv.Dir() != "" && isTenantKey(prefix) {
		if err := db.removeSnapshotsUnder(ctx, prefix); err != nil {
			return n, fmt.Errorf("engine: remove snapshots: %w", err)
		}
	}
	if l, ok := prefixLevel(prefix); ok && l <= LevelUser && db.kv.Postgres() {
		// A snapshot stored while the keys were being deleted (the
		// partitions are marked erased only now) goes too.
		if _, err := db.kv.DeletePrefix(ctx, prefix, nil); err != nil {
			return n, fmt.Errorf("engine: remove snapshots: %w", convert(err))
		}
	}
	return n, nil
}

// Backup writes a full copy of the database to w, sealed with a key drawn
// from the database's when it is encrypted (see [kv.DB.Backup]).
func (db *DB) Backup(ctx context.Context, w io.Writer) error { return convert(db.kv.Backup(ctx, w)) }

// Restore loads a stream written by Backup into this database, which must be
// empty; a sealed stream needs the same key ([kv.ErrBackupKey]).
//
// The restored store keeps the [VectorSource] it recorded; a DB opened
// with another one then refuses to write records into it.
func (db *DB) Restore(ctx context.Context, r io.Reader) error {
	if err := db.kv.Restore(ctx, r); err != nil {
		return convert(err)
	}
	return db.loadVectorSource(ctx)
}

// Stats is a snapshot of the database's state and counters since Open.
type Stats struct {
	Dir        string     // directory; "" when in memory or in PostgreSQL
	Backend    string     // "badger" or "postgres"
	Encrypted  bool       // files (PostgreSQL: values) are encrypted at rest
	Durability Durability // when writes are acknowledged
	OpenedAt   time.Time

	LSMBytes      int64 // on-disk size of the LSM tree's table files (PostgreSQL: of the table)
	ValueLogBytes int64 // on-disk size of the value log files

	Updates   uint64 // Update calls
	Views     uint64 // View calls
	Conflicts uint64 // transaction conflicts retried by Update
	Failures  uint64 // Update and View calls that returned an error

	Compactions    uint64 // compactions finished, background and forced
	CompactPending bool   // an erasure's bytes wait for a compaction to finish

	// Cache is the partition cache: loaded partitions against their
	// budget ([Options.PartitionCacheBytes]).
	Cache CacheStats
}

// Stats returns a snapshot of the database's state.
func (db *DB) Stats() Stats {
	lsm, vlog := db.kv.Size()
	backend := "badger"
	if db.kv.Postgres() {
		backend = "postgres"
	}
	return Stats{
		Dir:            db.kv.Dir(),
		Backend:        backend,
		Encrypted:      db.kv.Encrypted(),
		Durability:     db.kv.Durability(),
		OpenedAt:       db.openedAt,
		LSMBytes:       lsm,
		ValueLogBytes:  vlog,
		Updates:        db.updates.Load(),
		Views:          db.views.Load(),
		Conflicts:      db.conflicts.Load(),
		Failures:       db.failures.Load(),
		Compactions:    db.compactions.done.Load(),
		CompactPending: db.compactions.pending(),
		Cache:          db.cacheStats(),
	}
}

// String formats the snapshot on one line.
func (s Stats) String() string {
	where := s.Dir
	if where == "" {
		where = "(memory)"
	}
	return fmt.Sprintf("dir=%s encrypted=%v durability=%s lsm=%dB vlog=%dB updates=%d views=%d conflicts=%d failures=%d",
		where, s.Encrypted, s.Durability, s.LSMBytes, s.ValueLogBytes, s.Updates, s.Views, s.Conflicts, s.Failures)
}
