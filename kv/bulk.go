package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"iter"
	"os"
	"path/filepath"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/ristretto/v2/z"
)

// Bulk loading.
//
// A transaction's write goes through Badger's write-ahead log, its
// memtable, a flush to level 0 and then compactions that rewrite it once
// per level: on the graph's million-fact benchmark that path tops out at
// 31-49k facts/s (bench/results/graph.md), four keys a fact. Badger's
// StreamWriter instead builds tables from keys given in order and adds
// them straight to the bottom level: no log, no memtable, no compaction.
// It has three sharp edges, which BulkLoad files off:
//
//   - Its Prepare drops every key of the store, and its Flush replaces the
//     transaction oracle, so no other transaction may run meanwhile and
//     the store must hold nothing: BulkLoad holds every transaction off
//     (as Compact does) and refuses a store holding any key.
//   - It adds each table to the manifest as the table is written, so a
//     crash midway leaves some of the data. BulkLoad writes a marker file
//     first and removes it once everything is synced; an Open that finds
//     the marker deletes what the unfinished load wrote (the store held
//     nothing before it), so a load is seen whole or not at all.
//   - It panics in a goroutine of its own on keys out of order: BulkLoad
//     checks the order before Badger sees a key.

// bulkMarker is the file that exists while a BulkLoad is writing; see
// recoverBulk.
const bulkMarker = "ENGRAM-BULKLOAD"

// bulkBatch is the size of one stream handed to Badger: each becomes at
// least one table, and two are built at a time. A variable for tests.
var bulkBatch = 32 << 20

// BulkLoad writes the pairs that pairs yields into the store, which must
// hold no key, without transactions: Badger builds its tables straight
// from them (no write-ahead log, no memtable, no compaction), several
// times faster than [DB.Update] for a large load. Keys must come in
// strictly ascending order ([bytes.Compare]); a key out of order, or an
// empty one, stops the load with [ErrUnsorted] or [ErrEmptyKey]. Keys and
// values are copied; pairs may reuse its slices between iterations.
//
// BulkLoad returns [ErrNotEmpty], having written nothing, when the store
// holds any key (a deleted or expired key does not count). Every other
// transaction of this DB waits while it runs (as for [DB.Compact]), so
// it must not be called from within one.
//
// It is all or nothing: when it returns an error, or the process dies
// midway, the store is left empty (the next [Open] deletes what an
// unfinished load wrote). Should dropping what a failed load wrote fail
// too, every later call returns [ErrBulkLoadFailed] until the store is
// reopened, so that no write is acknowledged that the Open would delete.
// When it returns nil the data is on disk,
// whatever the store's [Durability], and encrypted when the store is.
func (db *DB) BulkLoad(ctx context.Context, pairs iter.Seq2[[]byte, []byte]) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	if db.pg != nil {
		db.mu.RLock()
		defer db.mu.RUnlock()
		if db.mu.closed {
			return ErrClosed
		}
		return db.pg.bulkLoad(ctx, pairs)
	}
	if err := db.checkSpace(); err != nil {
		return err
	}
	release, err := db.acquireCompaction(ctx)
	if err != nil {
		return err
	}
	defer release()
	if err := db.lockAll(ctx); err != nil {
		return err
	}
	defer db.mu.Unlock()
	if db.mu.closed {
		return ErrClosed
	}
	if err := db.failedLocked(); err != nil {
		return err
	}
	empty, err := db.emptyLocked()
	if err != nil {
		return err
	}
	if !empty {
		return ErrNotEmpty
	}
	if db.wal != nil {
		// The StreamWriter drops every memtable (DropAll), logs included;
		// the record of the logs starts again after the load.
		if err := db.wal.dropping(); err != nil { // walmark.go
			return err
		}
		defer db.rerecordWAL()
	}
	if err := db.markBulk(); err != nil {
		return err
	}
	err = db.streamLocked(ctx, pairs)
	if db.syncer != nil {
		// The syncer keeps log files open; Prepare replaced them.
		db.syncer.close()
		db.syncer.reset()
	}
	if err == nil {
		// The tables are synced as they are written and the directory by
		// Flush; this syncs the value log, which holds any value above
		// Badger's threshold.
		if err = db.bdb.Sync(); err != nil {
			err = fmt.Errorf("kv: bulk load: sync: %w", err)
		}
	}
	if err == nil {
		err = db.unmarkBulk() // the load is whole and on disk
	}
	if err != nil {
		// The store held nothing before: drop what was written. If even
		// that fails the marker stays, and the next Open drops it; until
		// then the store refuses every call, or a write acknowledged now
		// would be dropped with the load.
		drop := db.bdb.DropAll
		if db.dropAll != nil {
			drop = db.dropAll
		}
		if drop() != nil || db.unmarkBulk() != nil {
			db.mu.bulkFailed = true
		}
		return err
	}
	return nil
}

// rerecordWAL starts the record of the write-ahead logs again after a
// drop (walMarker.dropping). Should that fail, the record stays as
// dropping left it, which checks no log of the session: nothing is
// refused that was not lost.
func (db *DB) rerecordWAL() {
	if err := db.wal.afterOpen(db.opts.MemTableSize, db.bdb); err != nil && db.opts.Logger != nil {
		db.opts.Logger.Warn("kv: record the write-ahead logs after a drop", "err", err)
	}
}

// emptyLocked reports whether the store holds no key.
func (db *DB) emptyLocked() (bool, error) {
	empty := true
	err := db.bdb.View(func(txn *badger.Txn) error {
		it := txn.NewIterator(badger.IteratorOptions{})
		defer it.Close()
		it.Rewind()
		empty = !it.Valid()
		return nil
	})
	return empty, convertError(err)
}

// streamLocked feeds pairs to a StreamWriter: batches of bulkBatch bytes,
// each its own stream (the batches' key ranges do not overlap, since the
// keys come in order), written by two goroutines while the next batch is
// built.
func (db *DB) streamLocked(ctx context.Context, pairs iter.Seq2[[]byte, []byte]) (err error) {
	sw := db.bdb.NewStreamWriter()
	if err := sw.Prepare(); err != nil {
		sw.Cancel()
		return fmt.Errorf("kv: bulk load: %w", err)
	}
	batches := make(chan *z.Buffer, 1)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var werr error
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for buf := range batches {
				mu.Lock()
				failed := werr != nil
				mu.Unlock()
				if !failed {
					if err := sw.Write(buf); err != nil {
						mu.Lock()
						werr = errors.Join(werr, err)
						mu.Unlock()
					}
				}
				_ = buf.Release()
			}
		}()
	}
	finish := func() error {
		close(batches)
		wg.Wait()
		return werr
	}

	var (
		kv      pb.KV
		buf     *z.Buffer
		stream  uint32
		size    int
		last    []byte
		started bool
		n       int
	)
	send := func() {
		if buf == nil {
			return
		}
		badger.KVToBuffer(&pb.KV{StreamId: stream, StreamDone: true}, buf)
		batches <- buf
		buf, size = nil, 0
	}
	for k, v := range pairs {
		if len(k) == 0 {
			err = ErrEmptyKey
			break
		}
		if started && bytes.Compare(k, last) <= 0 {
			err = fmt.Errorf("%w: %q after %q", ErrUnsorted, k, last)
			break
		}
		if n++; n%4096 == 0 {
			if err = ctx.Err(); err != nil {
				break
			}
			mu.Lock()
			failed := werr != nil
			mu.Unlock()
			if failed {
				break
			}
		}
		last, started = append(last[:0], k...), true
		if buf == nil {
			stream++
			buf = z.NewBuffer(bulkBatch+bulkBatch/8, "kv.BulkLoad")
		}
		kv = pb.KV{Key: k, Value: v, Version: 1, StreamId: stream}
		badger.KVToBuffer(&kv, buf)
		if size += len(k) + len(v) + 16; size >= bulkBatch {
			send()
		}
	}
	if err == nil {
		send()
	} else if buf != nil {
		_ = buf.Release()
	}
	if ferr := finish(); err == nil && ferr != nil {
		err = fmt.Errorf("kv: bulk load: %w", convertError(ferr))
	}
	if err != nil {
		sw.Cancel()
		return err
	}
	if err := sw.Flush(); err != nil {
		return fmt.Errorf("kv: bulk load: %w", convertError(err))
	}
	return nil
}

// markBulk writes the marker file of a running BulkLoad and syncs it and
// the directory; an in-memory store needs none.
func (db *DB) markBulk() error {
	if db.dir == "" {
		return nil
	}
	f, err := os.OpenFile(filepath.Join(db.dir, bulkMarker), os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("kv: bulk load: %w", err)
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = syncDir(db.dir)
	}
	if err != nil {
		return fmt.Errorf("kv: bulk load: %w", err)
	}
	return nil
}

// unmarkBulk removes the marker: the load is whole and on disk.
func (db *DB) unmarkBulk() error {
	if db.dir == "" {
		return nil
	}
	if err := os.Remove(filepath.Join(db.dir, bulkMarker)); err != nil {
		return fmt.Errorf("kv: bulk load: %w", err)
	}
	if err := syncDir(db.dir); err != nil {
		return fmt.Errorf("kv: bulk load: %w", err)
	}
	return nil
}

// recoverBulk runs at Open, before anything reads the store's files: when
// a BulkLoad's marker is there, the load did not finish, and the store
// held no key when it began (BulkLoad checks, with every transaction held
// off, before it writes the marker). So everything in the directory but
// the key registry is what the load wrote: the tables, the manifest that
// names them and the logs are deleted, and Badger starts an empty store.
// The marker goes last, so a crash during this is mended by the next Open.
func recoverBulk(dir string) error {
	if dir == "" {
		return nil
	}
	marker := filepath.Join(dir, bulkMarker)
	if _, err := os.Lstat(marker); errors.Is(err, os.ErrNotExist) {
		return nil
	} else if err != nil {
		return fmt.Errorf("kv: open: %w", err)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("kv: open: %w", err)
	}
	for _, e := range entries {
		name := e.Name()
		switch ext := filepath.Ext(name); {
		case ext == ".sst", ext == ".mem", ext == ".vlog", name == badger.ManifestFilename, name == "DISCARD", name == walMarkFile:
			if err := os.Remove(filepath.Join(dir, name)); err != nil {
				return fmt.Errorf("kv: open: drop an unfinished bulk load: %w", err)
			}
		}
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("kv: open: %w", err)
	}
	if err := os.Remove(marker); err != nil {
		return fmt.Errorf("kv: open: drop an unfinished bulk load: %w", err)
	}
	if err := syncDir(dir); err != nil {
		return fmt.Errorf("kv: open: %w", err)
	}
	return nil
}

// syncDir fsyncs a directory, so that files created or removed in it stay
// so after a crash.
func syncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
