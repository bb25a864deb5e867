package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// DB is a key-value store: Badger in one directory or in memory ([Open]),
// or tables in a PostgreSQL database ([OpenPostgres]).
//
// A DB is safe for concurrent use by multiple goroutines. [DB.Close] waits
// for running transactions to finish.
type DB struct {
	dir  string
	opts Options
	// pg is set for a store in PostgreSQL; the Badger fields are then
	// unused.
	pg *pgStore
	// closeHook runs after Close closed the store: the test backend
	// drops its schema (testbackend.go).
	closeHook func()

	// mu guards closed and the Badger handle against Close; every operation
	// holds it for reading.
	mu struct {
		sync.RWMutex
		closed bool
		// restoreFailed is set by a failed Restore: Badger's loader leaves
		// its transaction watermark behind, so a new transaction would wait
		// forever. Only Close is left.
		restoreFailed bool
		// bulkFailed is set by a BulkLoad that failed and could not drop
		// what it wrote: its marker stays, so the next Open deletes the
		// tables, and nothing may be written (or read) until then.
		bulkFailed bool
		// released is set once Close closed Badger (or the PostgreSQL
		// pool) and released the directory: Close has nothing left to do.
		released bool
	}
	// dropAll is Badger's DropAll; a test seam.
	dropAll func() error
	bdb     *badger.DB
	lock    *dirLock
	log     *badgerLogger
	// wal keeps the record of the write-ahead logs (walmark.go); nil for
	// a store in memory.
	wal *walMarker

	// free reports the free space of the store's disk (freeSpace, unless a
	// test stands in another); writes are refused while it is below
	// reserve. See reserve.
	free    func(dir string) (int64, bool)
	reserve int64

	// compactSem is the compaction slot (compact.go): held by the
	// goroutine that runs a compaction's calls into Badger until they
	// return, by a BulkLoad, and by Close from when it closes Badger.
	// Nil for PostgreSQL.
	compactSem chan struct{}
	// closeMu serializes Close's wait for the compaction slot; slotTaken
	// says it has it.
	closeMu   sync.Mutex
	slotTaken bool
	// closing is closed when Close starts, so that a Compact waiting for
	// Badger returns; closeOnce closes it.
	closing   chan struct{}
	closeOnce sync.Once
	// closeWait bounds how long Close waits for a compaction's call into
	// Badger (see ErrStalled); stalledAfter unless a test sets less.
	closeWait time.Duration
	// valueLogGC is Badger's RunValueLogGC(0.01) when nil; a test seam.
	valueLogGC func(*badger.DB) error
	// gate is non-nil while Compact waits for running transactions: new
	// ones wait on it, for at most gateWait (see lockAll).
	gate atomic.Pointer[chan struct{}]

	// syncer makes commits durable in groups; nil unless the store is on
	// disk with Sync durability (groupsync.go).
	syncer *syncer
	// bigValue is the value length from which a write may reach Badger's
	// value log: half its threshold, which follows from the options, so
	// it holds across Compact's reopen (see Txn.vlog).
	bigValue int
}

// Open opens the store in dir, creating the directory when it does not exist.
// An empty dir opens a store that lives in memory only. A nil opts means
// defaults.
//
// Open returns [ErrLocked] when another process has the directory open,
// [ErrEncryptionKey] for a wrong or missing key, [ErrInvalidOptions] for
// bad options, [ErrCorrupt] naming the file when a file of the store is
// damaged (Open verifies every table's checksums and replays the logs
// first; see the package's Caveats), and [ErrDiskFull] when the disk has
// less free space than the store keeps in reserve. A damaged DISCARD, the
// file where Badger keeps value-log GC hints and no data, is removed and
// started anew rather than refused (see repairDiscard). With
// [Options.ReadOnly] it returns [ErrNeedsRecovery] for a store that must
// first be opened read-write.
func Open(dir string, opts *Options) (*DB, error) {
	o := opts.withDefaults()
	o.dirless = dir == ""
	if err := o.validate(); err != nil {
		return nil, err
	}
	if dsn, ok := redirectDSN(); ok {
		return openTestBackend(dir, o, dsn) // testbackend.go: test binaries only
	}
	need := reserve(o.MemTableSize, maxBatchSize(o.MemTableSize))
	var lock *dirLock
	if dir != "" {
		var err error
		if lock, err = prepareDir(dir, o, need); err != nil {
			return nil, err
		}
	}
	db, err := openLocked(dir, o, lock, need)
	if err != nil {
		_ = lock.release()
		return nil, err
	}
	return db, nil
}

// prepareDir creates and locks dir and checks its files before Badger
// opens them: modes, an unfinished bulk load, checksums, DISCARD, free
// space. On error the lock is released.
func prepareDir(dir string, o Options, need int64) (*dirLock, error) {
	if !o.ReadOnly {
		if err := os.MkdirAll(dir, 0o700); err != nil {
			return nil, fmt.Errorf("kv: create directory: %w", err)
		}
	}
	lock, err := lockDir(dir)
	if err != nil {
		return nil, err
	}
	if err := checkDir(dir, o, need); err != nil {
		_ = lock.release()
		return nil, err
	}
	return lock, nil
}

// checkDir runs prepareDir's checks on the locked dir.
func checkDir(dir string, o Options, need int64) error {
	secureDir(dir, o.Logger, o.ReadOnly)                 // filemode.go
	if err := prepareOpen(dir, o.ReadOnly); err != nil { // readonly.go
		return err
	}
	if err := checkFiles(dir, o.EncryptionKey); err != nil {
		return err
	}
	// A read-only open changes no file, and a read-only Badger never
	// opens DISCARD.
	if o.ReadOnly {
		return nil
	}
	if err := repairDiscard(dir, o.Logger); err != nil { // discard.go
		return err
	}
	if err := removeUnsizedLogs(dir, o.Logger); err != nil { // walmark.go
		return err
	}
	// Badger writes at open (it replays and flushes the write-ahead log,
	// starts a new one) through memory maps: on a full disk that is SIGBUS,
	// so a store on a full disk is not opened at all. A read-only open is
	// no way out: Badger refuses it while a write-ahead log needs replay.
	if n, ok := freeSpace(dir); ok && n < need {
		return fmt.Errorf("%w: %s has %s free; opening the store needs %s", ErrDiskFull, dir, mib(n), mib(need))
	}
	return nil
}

// openLocked opens Badger in dir, which prepareDir has locked and checked
// ("" for an in-memory store), with the record of its write-ahead logs.
// The caller releases the lock on error.
func openLocked(dir string, o Options, lock *dirLock, need int64) (*DB, error) {
	writable := dir != "" && !o.ReadOnly
	var wal *walMarker
	if writable {
		var err error
		if wal, err = beforeOpen(dir); err != nil { // walmark.go
			return nil, err
		}
	}
	log := &badgerLogger{l: o.Logger}
	bdb, err := openBadger(dir, o.badger(dir, log))
	if err != nil {
		return nil, err
	}
	if err := afterOpen(dir, bdb, wal, o, writable); err != nil {
		_ = bdb.Close()
		return nil, err
	}
	db := &DB{dir: dir, opts: o, bdb: bdb, lock: lock, log: log, wal: wal, free: freeSpace, reserve: need,
		bigValue:   int(bdb.Opts().ValueThreshold / 2),
		compactSem: make(chan struct{}, 1), closing: make(chan struct{}), closeWait: stalledAfter}
	if writable && o.Durability == Sync && !o.perCommitSync {
		db.syncer = newSyncer(dir, liveSync(func() error { return db.bdb.Sync() }))
		db.syncer.onRotate = wal.rotated
	}
	return db, nil
}

// afterOpen records the write-ahead logs Badger replayed and drops a
// compaction's leftover marker.
func afterOpen(dir string, bdb *badger.DB, wal *walMarker, o Options, writable bool) error {
	if wal != nil {
		if err := wal.afterOpen(o.MemTableSize, bdb); err != nil {
			return err
		}
	}
	if !writable {
		return nil
	}
	if err := dropFlushMarker(bdb); err != nil {
		return fmt.Errorf("kv: open %q: drop compaction marker: %w", dir, convertError(err))
	}
	return nil
}

// openBadger opens Badger, turning a panic in the calling goroutine into
// ErrCorrupt. (checkFiles runs first: a panic in Badger's own goroutines
// cannot be recovered here. A failed badger.Open also leaks its
// cache-monitor and allocator goroutines (badger v4.9.6), which is why the
// common failures, a wrong key and a damaged file, are caught before it.)
func openBadger(dir string, bo badger.Options) (bdb *badger.DB, err error) {
	defer func() {
		if p := recover(); p != nil {
			bdb, err = nil, recovered(ErrCorrupt, dir, p) // panic.go
		}
	}()
	bdb, err = badger.Open(bo)
	if err != nil {
		return nil, openError(dir, err)
	}
	return bdb, nil
}

func openError(dir string, err error) error {
	msg := err.Error()
	switch {
	case errors.Is(err, badger.ErrEncryptionKeyMismatch) || strings.Contains(msg, badger.ErrEncryptionKeyMismatch.Error()):
		return fmt.Errorf("%w: %s", ErrEncryptionKey, dir)
	case isBadgerLockError(err):
		return fmt.Errorf("%w: %s", ErrLocked, dir)
	case isCorruption(msg):
		return fmt.Errorf("%w: %s: %v", ErrCorrupt, dir, err)
	default:
		return fmt.Errorf("kv: open %q: %w", dir, err)
	}
}

// Close flushes and closes the store and releases the directory lock. It
// waits for running transactions, and for a compaction's call into Badger
// for at most 20 s: past that it returns [ErrStalled], with the store
// closed to new calls and synced but Badger left open. Calling it again
// closes what is left, and returns nil once everything is closed.
func (db *DB) Close() error {
	if db.closing != nil {
		db.closeOnce.Do(func() { close(db.closing) })
		if err := db.stopCompaction(); err != nil {
			return err
		}
	}
	db.mu.Lock()
	defer db.mu.Unlock()
	if db.mu.released {
		return nil
	}
	db.mu.closed, db.mu.released = true, true
	if db.pg != nil {
		err := db.pg.close()
		if db.closeHook != nil {
			db.closeHook()
		}
		if err != nil {
			return fmt.Errorf("kv: close: %w", err)
		}
		return nil
	}
	if db.syncer != nil {
		db.syncer.close()
	}
	err := db.closeBadgerLocked()
	if lerr := db.lock.release(); err == nil {
		err = lerr
	}
	if err != nil {
		return fmt.Errorf("kv: close: %w", err)
	}
	return nil
}

// stalledAfter is how long Close waits for a compaction's call into
// Badger: long enough for a Flatten or a value-log rewrite of a store of
// some GiB to end cleanly, and short enough that serve's shutdown (30 s
// for requests, 10 s for Close's compaction, then this) stays within the
// 90 s a service manager gives a stopping process before SIGKILL.
const stalledAfter = 20 * time.Second

// stopCompaction takes the compaction slot for good, so that Badger is not
// closed under a compaction's call, waiting for a running one for at most
// db.closeWait. Past that it closes the store to new calls, syncs it, and
// returns ErrStalled.
func (db *DB) stopCompaction() error {
	db.closeMu.Lock()
	defer db.closeMu.Unlock()
	if db.slotTaken {
		return nil
	}
	t := time.NewTimer(db.closeWait)
	defer t.Stop()
	select {
	case db.compactSem <- struct{}{}:
		db.slotTaken = true
		return nil
	case <-t.C:
	}
	// Transactions are refused from now on, unless the stalled call is
	// the flush, which holds them off itself.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	var bdb *badger.DB
	if db.lockAll(ctx) == nil {
		db.mu.closed = true
		bdb = db.bdb
		db.mu.Unlock()
	}
	synced := "not synced (calls still running hold the store)"
	if bdb != nil {
		done := make(chan error, 1)
		go func() { done <- bdb.Sync() }()
		select {
		case err := <-done:
			synced = "synced"
			if err != nil {
				synced = fmt.Sprintf("not synced (%v)", err)
			}
		case <-time.After(time.Second):
			synced = "not synced (the sync did not return)"
		}
	}
	return fmt.Errorf("%w: a compaction's call into Badger has not returned after %v; the store is closed to new calls and %s, Badger stays open and %s stays locked until the process exits or Close is called again", ErrStalled, db.closeWait, synced, db.dir)
}

// Dir returns the directory the store was opened in; "" for in-memory and
// for PostgreSQL.
func (db *DB) Dir() string { return db.dir }

// Encrypted reports whether the store encrypts its files (PostgreSQL: its
// values).
func (db *DB) Encrypted() bool { return len(db.opts.EncryptionKey) > 0 }

// TxnLimits returns the most entries, and the most bytes (keys, values and
// per-entry overhead), that one transaction may write; more is
// [ErrTooLarge]. Both follow from the memtable size.
func (db *DB) TxnLimits() (entries, bytes int64) {
	if db.pg != nil {
		return db.pg.txnEntries, db.pg.txnBytes
	}
	db.mu.RLock() // Compact may replace bdb
	defer db.mu.RUnlock()
	return db.bdb.MaxBatchCount(), db.bdb.MaxBatchSize()
}

// BlockCacheSize returns the size of the block cache in bytes, the
// default filled in; 0 for a store in PostgreSQL.
func (db *DB) BlockCacheSize() int64 { return db.opts.BlockCacheSize }

// Durability reports the durability the store was opened with.
func (db *DB) Durability() Durability { return db.opts.Durability }

// Update runs fn in a read-write transaction and commits it when fn returns
// nil. When fn returns an error, or panics, every write is discarded; the
// error is returned and the panic re-raised. The [Txn] must not be used after
// fn returns.
//
// Update returns [ErrConflict] when a concurrent transaction wrote a key fn
// read (retry the whole call), [ErrTooLarge] when the writes do not fit in
// one commit, and [ErrDiskFull], before fn runs, while the disk has less
// free space than the store keeps in reserve (see [ErrDiskFull]).
//
// With [Sync] durability Update returns once the commit is on disk;
// concurrent Updates share one fsync (see groupsync.go). The commit is
// visible to other transactions as soon as it is in the log, up to one
// fsync before Update returns.
func (db *DB) Update(ctx context.Context, fn func(*Txn) error) error {
	return db.run(ctx, txnSynced, fn)
}

// UpdateNoSync is [DB.Update] without waiting for the disk: it returns
// once the commit is visible, whatever the store's durability, and the
// next synced commit (or [DB.Sync], or Close) makes it durable with
// everything before it. A crash of the machine before then loses it; a
// crash of the process alone does not. It is meant for data derived from
// what is already stored, which a lost write only makes the store compute
// again (a rolling summary, a cache), so that reads that refresh such data
// never wait for an fsync.
func (db *DB) UpdateNoSync(ctx context.Context, fn func(*Txn) error) error {
	return db.run(ctx, txnNoSync, fn)
}

// View runs fn in a read-only transaction over a consistent snapshot.
func (db *DB) View(ctx context.Context, fn func(*Txn) error) error {
	return db.run(ctx, txnRead, fn)
}

// txnMode is the kind of transaction run runs.
type txnMode uint8

const (
	txnRead   txnMode = iota
	txnSynced         // read-write, durable as the store's Durability says
	txnNoSync         // read-write, acknowledged once visible
)

func (db *DB) run(ctx context.Context, mode txnMode, fn func(*Txn) error) error {
	update := mode != txnRead
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.pg != nil {
		db.mu.RLock()
		defer db.mu.RUnlock()
		if db.mu.closed {
			return ErrClosed
		}
		return db.pg.run(ctx, update, func(t *Txn) error {
			t.db = db
			return fn(t)
		})
	}
	db.waitGate(ctx)
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.mu.closed {
		return ErrClosed
	}
	if err := db.failedLocked(); err != nil {
		return err
	}
	if update {
		if err := db.checkSpace(); err != nil {
			return err
		}
		if db.syncer != nil {
			if err := db.syncer.err(); err != nil {
				return fmt.Errorf("kv: an earlier sync failed: %w", err)
			}
		}
	}
	btx := &badgerTxn{btx: db.bdb.NewTransaction(update), log: db.log, bigValue: db.bigValue}
	tx := &Txn{impl: btx, update: update, db: db}
	ended := false
	defer func() {
		// Close any iterator the caller left open (Badger panics on
		// Discard otherwise, which would hide the caller's own panic),
		// then discard; after Commit too.
		tx.closeIterators()
		btx.btx.Discard()
		if !ended {
			tx.end(Aborted)
		}
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if !update {
		return nil
	}
	// A cancelled context aborts before anything becomes visible.
	if err := ctx.Err(); err != nil {
		return err
	}
	tx.closeIterators()
	err := btx.btx.Commit()
	ended = true
	switch {
	case err == nil:
		tx.end(Committed)
	case errors.Is(err, badger.ErrConflict):
		tx.end(Aborted)
	default:
		tx.end(Unknown)
	}
	if err != nil {
		return convertError(err)
	}
	if mode == txnSynced && db.syncer != nil {
		return db.syncer.wait(btx.vlog)
	}
	return nil
}

// DeletePrefix deletes every key that starts with prefix, in batches of
// bounded size so that any number of keys can be removed. When visit is not
// nil it is called with each key and value before the key is deleted; an
// error from visit stops the deletion and is returned.
//
// Each batch commits on its own: if DeletePrefix fails part way, the keys
// already deleted stay deleted and calling it again finishes the job. A
// batch that conflicts with a concurrent writer is run again, halved, so
// that a writer busy under the prefix cannot starve it (and visit may see
// a key more than once).
func (db *DB) DeletePrefix(ctx context.Context, prefix []byte, visit func(key, value []byte) error) (deleted int, err error) {
	const maxBatch = 512
	batch := maxBatch
	conflicts := 0
	for {
		var n int
		err := db.Update(ctx, func(tx *Txn) error {
			var keys [][]byte
			it := tx.NewIterator(IterOptions{Prefix: prefix, KeysOnly: visit == nil})
			var val []byte
			for it.Seek(nil); it.Valid() && len(keys) < batch; it.Next() {
				k := append([]byte(nil), it.Key()...)
				if visit != nil {
					var err error
					if val, err = it.Value(val[:0]); err != nil {
						return err
					}
					if err := visit(k, val); err != nil {
						return err
					}
				}
				keys = append(keys, k)
			}
			it.Close()
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if errors.Is(err, ErrConflict) && conflicts < maxDeleteConflicts {
			// A concurrent writer touched a key of the batch: the batch
			// wrote nothing, and running it again is safe. A smaller batch
			// reads fewer keys a writer can touch before it commits.
			conflicts++
			batch = max(batch/2, 1)
			continue
		}
		deleted += n
		if err != nil {
			return deleted, err
		}
		if n < batch {
			return deleted, nil
		}
		batch = min(batch*2, maxBatch)
	}
}

// maxDeleteConflicts bounds how often DeletePrefix runs a batch again
// after a conflict with a concurrent writer.
const maxDeleteConflicts = 64

// Size returns the bytes the LSM tree's tables and the value log take on
// disk, read from the directory at the call (see [DiskUsage]); an
// in-memory store has none. (Badger's own figures need its expvar
// metrics, which are off.)
func (db *DB) Size() (lsm, vlog int64) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.pg != nil && !db.mu.closed {
		return db.pg.size(), 0
	}
	if db.mu.closed || db.dir == "" {
		return 0, 0
	}
	u := DiskUsage(db.dir)
	return u.LSM, u.VLog
}

// Sync flushes writes to disk. It is needed only with [Async] durability,
// or after [DB.UpdateNoSync].
func (db *DB) Sync() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.mu.closed {
		return ErrClosed
	}
	if db.pg != nil {
		return nil // every commit is durable as the server's settings make it
	}
	if db.syncer != nil {
		db.syncer.reset() // every log file, not only the current ones
		return db.syncer.wait(true)
	}
	return convertError(db.bdb.Sync())
}

// SyncStats reports how many calls waited for an fsync (synced commits and
// [DB.Sync]) and how many fsyncs of the logs served them since Open: with
// concurrent writers the second is smaller (group commit). Both are zero unless the store is on
// disk with [Sync] durability.
func (db *DB) SyncStats() (commits, syncs uint64) {
	if db.syncer == nil {
		return 0, 0
	}
	return db.syncer.stats()
}

// Backup writes a full copy of the store to w: Badger's protobuf backup
// stream, sealed with AES-GCM under a key drawn from the store's when the
// store is encrypted (see backup_seal.go). TTLs are kept. A store in
// PostgreSQL writes the same format from one snapshot of its table, so a
// backup of either backend restores into the other.
func (db *DB) Backup(ctx context.Context, w io.Writer) error {
	db.waitGate(ctx)
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.mu.closed {
		return ErrClosed
	}
	backup := db.backup
	if db.pg != nil {
		backup = func(ctx context.Context, w io.Writer) error { return db.pg.backup(ctx, w, db.opts.EncryptionKey) }
	}
	if err := backup(ctx, w); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		return fmt.Errorf("kv: backup: %w", err)
	}
	return nil
}

// Restore loads a stream written by [DB.Backup] into this store, which must
// be empty ([ErrNotEmpty] otherwise). A sealed stream (from an encrypted
// store) needs this store to have the same key, else [ErrBackupKey]. A
// stream that is not a backup, or is damaged, ends in [ErrBadBackup]. If
// Restore fails, discard the store: part of the stream may have been
// loaded, and every later transaction
// returns ErrBadBackup (Badger's loader leaves it unable to start one);
// only Close works. A store in PostgreSQL restores in one transaction: a
// failed restore leaves it empty and usable.
func (db *DB) Restore(ctx context.Context, r io.Reader) (err error) {
	if db.pg != nil {
		db.mu.RLock()
		defer db.mu.RUnlock()
		if db.mu.closed {
			return ErrClosed
		}
		return db.pg.restore(ctx, r, db.opts.EncryptionKey)
	}
	empty := true
	err = db.View(ctx, func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{KeysOnly: true})
		defer it.Close()
		it.Seek(nil)
		empty = !it.Valid()
		return nil
	})
	if err != nil {
		return err
	}
	if !empty {
		return ErrNotEmpty
	}
	if r, err = openBackup(r, db.opts.EncryptionKey); err != nil {
		return err // nothing loaded yet
	}
	// Refused before the loader starts, a full disk leaves the store
	// usable: only a load that began marks it failed.
	if err := db.checkSpace(); err != nil {
		return err
	}
	if err := db.load(ctx, r); err != nil {
		if !errors.Is(err, ErrClosed) {
			db.mu.Lock()
			db.mu.restoreFailed = true
			db.mu.Unlock()
		}
		return err
	}
	// Badger's loader writes through the logs like any commit; with Sync
	// durability a restore that returned is on disk.
	if db.syncer != nil {
		return db.Sync()
	}
	return nil
}

// load feeds a backup stream to Badger's loader.
func (db *DB) load(ctx context.Context, r io.Reader) (err error) {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.mu.closed {
		return ErrClosed
	}
	defer func() {
		// Badger's loader trusts its input: a damaged frame that passes
		// the length check can still make it panic.
		if p := recover(); p != nil {
			err = recovered(ErrBadBackup, "backup stream", p)
		}
	}()
	if err := db.bdb.Load(&frameChecker{r: ctxReader{ctx, r}}, 256); err != nil {
		if ctx.Err() != nil {
			return ctx.Err()
		}
		if errors.Is(err, ErrBadBackup) {
			return err
		}
		return fmt.Errorf("kv: restore: %w", err)
	}
	return nil
}

type ctxWriter struct {
	ctx context.Context
	w   io.Writer
}

func (c ctxWriter) Write(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.w.Write(p)
}

type ctxReader struct {
	ctx context.Context
	r   io.Reader
}

func (c ctxReader) Read(p []byte) (int, error) {
	if err := c.ctx.Err(); err != nil {
		return 0, err
	}
	return c.r.Read(p)
}

// convertError maps Badger's errors onto this package's sentinels at the
// boundary, so that no caller needs to import Badger.
func convertError(err error) error {
	switch {
	case err == nil:
		return nil
	case errors.Is(err, badger.ErrKeyNotFound):
		return ErrNotFound
	case errors.Is(err, badger.ErrTxnTooBig):
		return ErrTooLarge
	case errors.Is(err, badger.ErrConflict):
		return ErrConflict
	case errors.Is(err, badger.ErrEmptyKey):
		return ErrEmptyKey
	case errors.Is(err, badger.ErrReadOnlyTxn):
		return ErrReadOnly
	case errors.Is(err, badger.ErrDBClosed):
		return ErrClosed
	case isCorruption(err.Error()):
		return corruptRead(err)
	case strings.Contains(err.Error(), "exceeded"):
		// Badger's exceedsSize: an oversized key or value.
		return fmt.Errorf("%w: %v", ErrTooLarge, err)
	default:
		return fmt.Errorf("kv: %w", err)
	}
}

// isCorruption reports whether a Badger error message says that data on
// disk is damaged. Badger flattens its errors to strings (y.Wrap), so
// errors.Is cannot see y.ErrChecksumMismatch through them.
func isCorruption(msg string) bool {
	for _, s := range []string{
		"checksum mismatch", "corrupted", "Invalid read", "Invalid value pointer",
		"failed to decompress", "Level validation", "manifest has",
		"Invalid datakey", "file with ID", "unexpected EOF", "End of mapped region",
	} {
		if strings.Contains(msg, s) {
			return true
		}
	}
	return false
}

// vlogFid finds the value-log file id in Badger's "vp: {Len:.. Offset:..
// Fid:N}" detail.
var vlogFid = regexp.MustCompile(`Fid:(\d+)`)

// corruptRead turns a failed read of damaged data into ErrCorrupt naming
// the value-log file when Badger's message says which.
func corruptRead(err error) error {
	if m := vlogFid.FindStringSubmatch(err.Error()); m != nil {
		if fid, perr := strconv.ParseUint(m[1], 10, 32); perr == nil {
			return fmt.Errorf("%w: %06d.vlog: %v", ErrCorrupt, fid, err)
		}
	}
	return fmt.Errorf("%w: %v", ErrCorrupt, err)
}

// maxBackupFrame bounds one frame of a backup stream: an 8-byte
// little-endian length and a protobuf list of entries. Badger cuts its
// stream into batches of about 16 MiB, 100 MiB at most (a soft limit: one
// entry more); a larger length means the stream is not a backup, and must
// not reach Badger, which would allocate it.
const maxBackupFrame = 256 << 20

// frameChecker passes a backup stream through, checking each frame's
// length before Badger reads it.
type frameChecker struct {
	r    io.Reader
	left uint64 // bytes of the current frame's body still to pass
	head [8]byte
	got  int // bytes of the next length read so far
}

func (fc *frameChecker) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if fc.left == 0 {
		// Between frames: pass the 8 length bytes, checking the length
		// once it is whole.
		n, err := fc.r.Read(fc.head[fc.got:8][:min(8-fc.got, len(p))])
		copy(p, fc.head[fc.got:fc.got+n])
		fc.got += n
		if fc.got == 8 {
			fc.got = 0
			fc.left = binary.LittleEndian.Uint64(fc.head[:])
			if fc.left > maxBackupFrame {
				return 0, fmt.Errorf("%w: a frame of %d bytes (the limit is %d)", ErrBadBackup, fc.left, maxBackupFrame)
			}
		}
		return n, err
	}
	if uint64(len(p)) > fc.left {
		p = p[:fc.left]
	}
	n, err := fc.r.Read(p)
	fc.left -= uint64(n)
	return n, err
}

// failedLocked returns the error every call gets after a failed Restore or
// an unfinished BulkLoad; db.mu is held.
func (db *DB) failedLocked() error {
	switch {
	case db.mu.restoreFailed:
		return fmt.Errorf("%w: a restore into this store failed; close it and discard the directory", ErrBadBackup)
	case db.mu.bulkFailed:
		return fmt.Errorf("%w: close the store; the next Open removes what the load wrote", ErrBulkLoadFailed)
	}
	return nil
}
