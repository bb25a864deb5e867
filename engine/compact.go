package engine

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/kv"
)

// Compact rewrites the files so that the bytes of deleted and expired
// entries leave the disk: it flushes the memtables, compacts every level
// of the LSM tree down to one and garbage-collects the value log (see
// [kv.DB.Compact]). The background compactor runs it after erasures; call
// it to finish an erasure now. It is slow on a large store.
func (db *DB) Compact(ctx context.Context) error {
	// A compaction started now covers every erasure made so far.
	gen := db.compactions.requested.Load()
	if db.kv.Dir() != "" || db.kv.Postgres() {
		// Snapshots of partitions that lost records since they were
		// written hold the records' terms: write them again first.
		db.snapshotAll(ctx, 1)
	}
	compact := db.kv.Compact
	if db.compactKV != nil {
		compact = db.compactKV
	}
	err := convert(compact(ctx))
	if err != nil {
		db.ScheduleCompact() // the erasures still wait
		return err
	}
	db.compactions.finished(gen)
	db.clearPending(gen)
	return nil
}

// clearPending deletes the pending mark after a compaction that started
// at gen, unless an erasure came since: the mark goes only once the bytes
// it stands for are out of the files, so a crash during the compaction
// leaves it to the next Open.
func (db *DB) clearPending(gen uint64) {
	c := &db.compactions
	if !c.files {
		return
	}
	c.markMu.Lock()
	defer c.markMu.Unlock()
	if c.requested.Load() != gen || !c.marked.Load() {
		return
	}
	if err := db.kv.Update(context.Background(), func(tx *kv.Txn) error { return tx.Delete(compactPendingKey) }); err != nil {
		return // still marked: the next Open compacts once more
	}
	c.marked.Store(false)
}

// compactPendingKey marks a store with erasures whose bytes may still be
// in its files, so that a process that ends before its background
// compaction (killed, or with it off) leaves the work to the next Open.
var compactPendingKey = SystemKey(NSMeta, []byte("compact-pending"))

// ScheduleCompact asks the background compactor to run [DB.Compact] within
// Options.CompactDelay: call it after deleting data whose bytes must leave
// the files. [DB.ErasePrefix] calls it. Calls made while one is pending
// share its compaction. It does nothing for an in-memory database or when
// the background compactor is off.
func (db *DB) ScheduleCompact() {
	c := &db.compactions
	if !c.files {
		return
	}
	// Counted under markMu: a compaction clears the mark only when no
	// request came after it started.
	c.markMu.Lock()
	c.schedule()
	c.markMu.Unlock()
	db.markPending()
}

// markPending records in the store that erasures wait for a compaction,
// once per compaction. [DB.ErasePrefix] calls it before it deletes
// anything, so a crash part way leaves the compaction to the next Open.
func (db *DB) markPending() {
	c := &db.compactions
	if !c.files {
		return
	}
	c.markMu.Lock()
	defer c.markMu.Unlock()
	if c.marked.Load() {
		return
	}
	err := db.kv.Update(context.Background(), func(tx *kv.Txn) error { return tx.Set(compactPendingKey, nil) })
	if err != nil {
		if !errors.Is(err, kv.ErrClosed) {
			db.logger.Warn("engram: cannot record a pending compaction", "err", err)
		}
		return
	}
	c.marked.Store(true)
}

// resumeCompaction schedules the compaction an earlier process left
// pending.
func (db *DB) resumeCompaction() {
	err := db.kv.View(context.Background(), func(tx *kv.Txn) error {
		_, err := tx.Get(compactPendingKey)
		return err
	})
	if err == nil {
		db.compactions.marked.Store(true)
		db.compactions.schedule()
	}
}

// compactor runs the compaction an erasure needs in the background: at most
// one per delay, only after an erasure, so the work is bounded by how
// often data is erased, not by how much is written.
type compactor struct {
	// requested counts erasures; covered is the count a finished
	// compaction started at: the erasures up to it are out of the files.
	requested, covered atomic.Uint64
	done               atomic.Uint64 // compactions finished
	files              bool          // the DB has files to compact
	// marked says compactPendingKey is set, as far as this process knows.
	marked atomic.Bool
	// markMu orders the mark's writes and clears with new requests.
	markMu sync.Mutex

	wake   chan struct{} // nil when the compactor is off
	stopCh chan struct{}
	wg     sync.WaitGroup
	once   sync.Once
}

// defaultCompactDelay is the zero Options.CompactDelay.
const defaultCompactDelay = time.Minute

func (c *compactor) start(db *DB, delay time.Duration) {
	c.files = true
	if delay < 0 {
		return // off: erasures wait for a forced Compact
	}
	if delay == 0 {
		delay = defaultCompactDelay
	}
	c.wake = make(chan struct{}, 1)
	c.stopCh = make(chan struct{})
	// Close cancels a running compaction's value-log pass.
	ctx, cancel := context.WithCancel(context.Background())
	c.wg.Go(func() {
		<-c.stopCh
		cancel()
	})
	c.wg.Go(func() {
		for {
			select {
			case <-c.stopCh:
				return
			case <-c.wake:
			}
			t := time.NewTimer(delay)
			select {
			case <-c.stopCh:
				t.Stop()
				return
			case <-t.C:
			}
			if !c.pending() {
				continue // a forced Compact covered it
			}
			if err := c.run(ctx, db); err != nil && ctx.Err() == nil {
				db.logger.Warn("engram: background compaction failed; retrying after the delay", "err", err)
				c.schedule()
			}
		}
	})
}

// compactTimeout bounds one background compaction: Badger's calls take
// no context, and one that never returns (issue 26) must not keep the
// compactor, or the erasures after it, waiting. The call itself goes on
// (see [kv.DB.Compact]); the next try waits for it, within its own bound.
const compactTimeout = 10 * time.Minute

// run runs one background compaction within compactTimeout.
func (c *compactor) run(ctx context.Context, db *DB) error {
	ctx, cancel := context.WithTimeout(ctx, compactTimeout)
	defer cancel()
	return db.Compact(ctx)
}

func (c *compactor) schedule() {
	if !c.files {
		return
	}
	c.requested.Add(1)
	if c.wake == nil {
		return
	}
	select {
	case c.wake <- struct{}{}:
	default: // already woken
	}
}

// pending reports whether an erasure waits for a compaction to finish.
func (c *compactor) pending() bool { return c.covered.Load() < c.requested.Load() }

// finished records a compaction that started when requested was gen.
func (c *compactor) finished(gen uint64) {
	c.done.Add(1)
	for {
		cur := c.covered.Load()
		if gen <= cur || c.covered.CompareAndSwap(cur, gen) {
			return
		}
	}
}

// stop ends the loop, cancelling a running compaction, and waits for it.
func (c *compactor) stop() {
	c.once.Do(func() {
		if c.stopCh != nil {
			close(c.stopCh)
			c.wg.Wait()
		}
	})
}
