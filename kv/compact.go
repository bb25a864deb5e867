package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// flushMarker is a key written only to be dropped: Badger flushes its
// memtables only when they fill, at Close, or in DropPrefix, so Compact
// writes this key and drops it. It sorts after every key of the module
// (theirs start with 0x00 or 0x01), so no table's key range holds it and
// the drop rewrites no level past level 0.
var flushMarker = []byte("\xff\xffengram-compact")

// Compact takes the bytes of deleted and expired entries out of the
// files. Deleting a key in Badger writes a tombstone; the old value stays
// in the write-ahead memtable file and in the tables until a compaction
// merges the tombstone with it below every open read, and Badger's own
// calls each miss a case (badger v4.9.6):
//
//   - Flatten compacts nothing when every table is on one level, which in
//     a small store is level 0, and never flushes the memtables, whose
//     files (.mem) hold the values too.
//   - A compaction keeps the versions above the oldest open read
//     transaction, and below it keeps one version of a key whose newest
//     version is still above it.
//
// So Compact, with every transaction of this DB held off (they wait, they
// do not fail), writes and drops [flushMarker]: DropPrefix flushes every
// memtable into level 0 and compacts level 0 into the base level. Then
// Flatten merges the levels into one, so each tombstone meets the values
// it hides at the bottom level and both go, and the value-log garbage
// collector rewrites the log files that held erased values. It never
// rewrites the file being written, so when the value log holds values
// (those above the value threshold, about 800 KiB) Compact first closes
// and reopens Badger, which starts a new file.
//
// Badger's calls take no context, and one that never returns (issue 26:
// a damaged DISCARD file made the value-log GC spin) must not hold the
// store. So they run on a goroutine of the DB, and Compact returns when
// ctx ends or Close starts, with ctx's error (or [ErrClosed]), while the
// call goes on: the next Compact waits for it (as long as its own ctx
// lets it), and so does Close, for at most closeWait (see [ErrStalled]).
// Transactions go on meanwhile; only the flush holds them off, and only
// for its own calls.
//
// It is slow on a large store: run it after erasing data, not on every
// write. An in-memory store has no files; Compact does nothing there.
func (db *DB) Compact(ctx context.Context) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.pg != nil {
		if err := db.checkOpen(); err != nil {
			return err
		}
		return db.pg.compact(ctx)
	}
	if db.dir == "" {
		return db.checkOpen()
	}
	if err := db.checkOpen(); err != nil {
		return err
	}
	// A compaction writes new tables before it drops the old ones.
	if err := db.checkSpace(); err != nil {
		return err
	}
	// Badger's Flatten and value-log GC must not overlap themselves.
	release, err := db.acquireCompaction(ctx)
	if err != nil {
		return err
	}
	done := make(chan error, 1)
	go func() {
		defer release()
		done <- db.compact(ctx)
	}()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
		return fmt.Errorf("kv: compact: %w (Badger's call goes on in the background)", ctx.Err())
	case <-db.closing:
		return ErrClosed
	}
}

// compact runs a compaction's calls into Badger; the caller holds the
// compaction slot, so Close leaves db.bdb open until it returns.
func (db *DB) compact(ctx context.Context) error {
	if err := db.flush(ctx); err != nil {
		return err
	}
	if err := db.checkOpen(); err != nil {
		return err
	}
	if err := db.bdb.Flatten(1); err != nil {
		return fmt.Errorf("kv: compact: flatten: %w", err)
	}
	gc := db.valueLogGC
	if gc == nil {
		gc = func(bdb *badger.DB) error { return bdb.RunValueLogGC(0.01) }
	}
	for ctx.Err() == nil {
		err := gc(db.bdb)
		if errors.Is(err, badger.ErrNoRewrite) || errors.Is(err, badger.ErrGCInMemoryMode) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("kv: compact: value-log gc: %w", err)
		}
	}
	return ctx.Err()
}

// acquireCompaction takes the compaction slot, waiting while another
// compaction (or a BulkLoad) holds it, for as long as ctx lets it and
// until Close starts. The returned func gives it back.
func (db *DB) acquireCompaction(ctx context.Context) (release func(), err error) {
	if db.compactSem == nil {
		return func() {}, nil
	}
	select {
	case <-db.closing:
		return nil, ErrClosed
	default:
	}
	select {
	case db.compactSem <- struct{}{}:
		return func() { <-db.compactSem }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("kv: waiting for a running compaction: %w", ctx.Err())
	case <-db.closing:
		return nil, ErrClosed
	}
}

// flush moves every memtable into the tables and compacts level 0, with
// no transaction running: Badger refuses writes during DropPrefix, and an
// open read would hold back what the compaction may drop. The marker is
// written and dropped under one hold of the lock, so no transaction sees
// it and Close cannot come between; a crash can, and Open drops a marker
// left behind.
func (db *DB) flush(ctx context.Context) error {
	if err := db.lockAll(ctx); err != nil {
		return err
	}
	defer db.mu.Unlock()
	if db.mu.closed {
		return ErrClosed
	}
	if valueLogHolds(db.dir) {
		if err := db.reopenLocked(); err != nil {
			return err
		}
	}
	if db.wal != nil {
		// DropPrefix deletes the logs of memtables whose writes it drops.
		if err := db.wal.dropping(); err != nil { // walmark.go
			return fmt.Errorf("kv: compact: %w", err)
		}
	}
	err := db.bdb.Update(func(txn *badger.Txn) error { return txn.Set(flushMarker, nil) })
	if err != nil {
		err = fmt.Errorf("kv: compact: %w", convertError(err))
	} else if err = db.bdb.DropPrefix(flushMarker); err != nil {
		err = fmt.Errorf("kv: compact: flush: %w", err)
	}
	if db.wal != nil {
		db.rerecordWAL() // bulk.go
	}
	return err
}

// lockAll takes db.mu for writing once no transaction holds it, without
// queueing for it: a goroutine waiting in RWMutex.Lock makes every new
// reader wait too, so a transaction that opens another one inside it (the
// engine loads a partition's snapshot names in a View from within an
// Update) would wait for Compact while Compact waits for it, and a Backup
// streaming to a slow writer would stop every read behind Compact.
//
// Instead it closes a gate that new transactions wait at for at most
// gateWait, and polls TryLock: running transactions finish, new ones hold
// back, and the lock is taken in the gap. A transaction nested in a
// running one, or one behind a long Backup, waits gateWait at the most and
// goes on, so nothing waits for Compact for long and nothing deadlocks.
func (db *DB) lockAll(ctx context.Context) error {
	gate := make(chan struct{})
	db.gate.Store(&gate)
	defer func() {
		db.gate.Store(nil)
		close(gate)
	}()
	for wait := 20 * time.Microsecond; !db.mu.TryLock(); wait = min(2*wait, 2*time.Millisecond) {
		if err := ctx.Err(); err != nil {
			return err
		}
		time.Sleep(wait)
	}
	return nil
}

// gateWait bounds how long a new transaction waits for a Compact that is
// waiting for the running ones: long enough for them to commit (an fsync
// takes milliseconds), short enough that a transaction nested in one, or
// a read behind a long Backup, is not held up noticeably.
const gateWait = 50 * time.Millisecond

// waitGate holds a new transaction back while Compact waits for the
// running ones, for at most gateWait.
func (db *DB) waitGate(ctx context.Context) {
	gate := db.gate.Load()
	if gate == nil {
		return
	}
	t := time.NewTimer(gateWait)
	defer t.Stop()
	select {
	case <-*gate:
	case <-t.C:
	case <-ctx.Done():
	}
}

// dropFlushMarker deletes a marker that a crash between its write and
// its drop left in the store, so it is never seen by a Backup or by
// Restore's emptiness check.
func dropFlushMarker(bdb *badger.DB) error {
	return bdb.Update(func(txn *badger.Txn) error {
		if _, err := txn.Get(flushMarker); errors.Is(err, badger.ErrKeyNotFound) {
			return nil
		} else if err != nil {
			return err
		}
		return txn.Delete(flushMarker)
	})
}

// valueLogHolds reports whether a value-log file of the store in dir
// holds values: more than the header and the block it sits in. Values of
// at least the value threshold (about 800 KiB) go there, not in the
// tables.
func valueLogHolds(dir string) bool {
	files, _ := filepath.Glob(filepath.Join(dir, "*.vlog"))
	for _, f := range files {
		if fi, err := os.Stat(f); err == nil && allocated(fi) > 64<<10 {
			return true
		}
	}
	return false
}

// reopenLocked closes Badger and opens it again, the one way to start a
// new value-log file: the garbage collector never rewrites the file being
// written, so an erased large value in it would stay until the file
// fills (64 MiB). Closing also flushes the memtables. The caller holds
// db.mu for writing; if Badger does not open again, the store is closed.
func (db *DB) reopenLocked() error {
	if err := db.closeBadgerLocked(); err != nil {
		db.mu.closed, db.mu.released = true, true
		_ = db.lock.release()
		return fmt.Errorf("kv: compact: close to start a new value log: %w", err)
	}
	bdb, err := openBadger(db.dir, db.opts.badger(db.dir, db.log))
	if err != nil {
		db.mu.closed, db.mu.released = true, true
		_ = db.lock.release()
		return fmt.Errorf("kv: compact: reopen to start a new value log: %w", err)
	}
	if db.wal != nil {
		if err := db.wal.afterOpen(db.opts.MemTableSize, bdb); err != nil {
			_ = bdb.Close()
			db.mu.closed = true
			_ = db.lock.release()
			return fmt.Errorf("kv: compact: reopen to start a new value log: %w", err)
		}
	}
	db.bdb = bdb
	if db.syncer != nil {
		db.syncer.close()
		db.syncer.reset()
	}
	return nil
}

func (db *DB) checkOpen() error {
	db.mu.RLock()
	defer db.mu.RUnlock()
	if db.mu.closed {
		return ErrClosed
	}
	return nil
}
