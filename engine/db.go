package engine

import (
	"context"
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

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

// Options configures a [DB]. A nil *Options, and every zero field, means the
// documented default.
type Options struct {
	// Durability of writes. Zero is [Sync].
	Durability Durability
	// EncryptionKey encrypts the files at rest with AES when set (16, 24 or
	// 32 bytes). The same key must be given on every later Open.
	EncryptionKey []byte
	// Logger receives the storage layer's log lines. Nil discards them.
	Logger *slog.Logger
}

// maxConflictRetries bounds how often Update re-runs a function whose
// transaction conflicted with a concurrent one.
const maxConflictRetries = 8

// DB is the database: one Badger store, addressed by scope, with managed
// transactions. It is safe for concurrent use by multiple goroutines.
type DB struct {
	kv       *kv.DB
	openedAt time.Time

	ids struct {
		sync.Mutex
		entropy *ulid.MonotonicEntropy
	}

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
	store, err := kv.Open(dir, &kv.Options{
		Durability:    o.Durability,
		EncryptionKey: o.EncryptionKey,
		Logger:        o.Logger,
	})
	if err != nil {
		return nil, convert(err)
	}
	db := &DB{kv: store, openedAt: time.Now()}
	db.ids.entropy = ulid.Monotonic(rand.Reader, 0)
	return db, nil
}

// Close closes the database. It waits for running transactions, and calling
// it again returns nil. No goroutine of the DB outlives it.
func (db *DB) Close() error { return convert(db.kv.Close()) }

// KV returns the underlying store, for packages of this module that keep
// their own keys (the graph, the indexes).
func (db *DB) KV() *kv.DB { return db.kv }

// Tx is a transaction handed to the function given to [DB.Update] or
// [DB.View], over the keys built by [Scope.Prefix] and [Key]. It is valid
// only until the function returns and is not safe for concurrent use.
type Tx struct {
	t *kv.Txn
}

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
	db.updates.Add(1)
	var err error
	committed := false
	defer func() {
		// Counts panics too: they unwind through here with committed false.
		if !committed {
			db.failures.Add(1)
		}
	}()
	for range maxConflictRetries {
		err = db.kv.Update(ctx, func(t *kv.Txn) error { return fn(&Tx{t: t}) })
		if !errors.Is(err, kv.ErrConflict) {
			break
		}
		db.conflicts.Add(1)
	}
	committed = err == nil
	return convert(err)
}

// View runs fn in a read-only transaction over a consistent snapshot.
func (db *DB) View(ctx context.Context, fn func(*Tx) error) error {
	db.views.Add(1)
	err := db.kv.View(ctx, func(t *kv.Txn) error { return fn(&Tx{t: t}) })
	if err != nil {
		db.failures.Add(1)
	}
	return convert(err)
}

// NewID returns a new ULID for time t: ids from one DB are strictly
// increasing within a millisecond and sort by time across milliseconds.
func (db *DB) NewID(t time.Time) ulid.ULID {
	db.ids.Lock()
	defer db.ids.Unlock()
	id, err := ulid.New(ulid.Timestamp(t), db.ids.entropy)
	if err != nil {
		// The monotonic entropy overflowed within one millisecond (2^80
		// ids) or t is out of ULID range: fall back to fresh entropy.
		id = ulid.MustNew(ulid.Timestamp(time.Now()), rand.Reader)
	}
	return id
}

// ErasePrefix deletes every key that starts with prefix, in bounded batches,
// calling visit (when not nil) with each key and value first. It is safe to
// call again after a failure: it resumes where it stopped.
func (db *DB) ErasePrefix(ctx context.Context, prefix []byte, visit func(key, value []byte) error) (int, error) {
	n, err := db.kv.DeletePrefix(ctx, prefix, visit)
	return n, convert(err)
}

// Backup writes a full copy of the database to w. The stream is not
// encrypted, even when the database is.
func (db *DB) Backup(ctx context.Context, w io.Writer) error { return convert(db.kv.Backup(ctx, w)) }

// Restore loads a stream written by Backup into this database, which must be
// empty.
func (db *DB) Restore(ctx context.Context, r io.Reader) error {
	return convert(db.kv.Restore(ctx, r))
}

// Compact rewrites the files so that deleted and expired bytes leave the
// disk. Run it after erasing data.
func (db *DB) Compact(ctx context.Context) error { return convert(db.kv.Compact(ctx)) }

// Stats is a snapshot of the database's state and counters since Open.
type Stats struct {
	Dir        string     // directory; "" when in memory
	Encrypted  bool       // files are encrypted at rest
	Durability Durability // when writes are acknowledged
	OpenedAt   time.Time

	LSMBytes      int64 // on-disk size of the LSM tree (refreshed about once a minute)
	ValueLogBytes int64 // on-disk size of the value log (likewise)

	Updates   uint64 // Update calls
	Views     uint64 // View calls
	Conflicts uint64 // transaction conflicts retried by Update
	Failures  uint64 // Update and View calls that returned an error
}

// Stats returns a snapshot of the database's state.
func (db *DB) Stats() Stats {
	lsm, vlog := db.kv.Size()
	return Stats{
		Dir:           db.kv.Dir(),
		Encrypted:     db.kv.Encrypted(),
		Durability:    db.kv.Durability(),
		OpenedAt:      db.openedAt,
		LSMBytes:      lsm,
		ValueLogBytes: vlog,
		Updates:       db.updates.Load(),
		Views:         db.views.Load(),
		Conflicts:     db.conflicts.Load(),
		Failures:      db.failures.Load(),
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
