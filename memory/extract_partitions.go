package memory

import (
	"bytes"
	"context"
	"errors"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
)

// The extraction queue of a store in PostgreSQL
//
// Each partition's jobs run on the process that holds its lease: the
// worker writes what they produce, and a write needs the lease. A worker
// that finds queued jobs of a partition it does not hold asks the
// database who does: nobody (its holder stopped cleanly, or died and the
// lease lapsed) and the worker takes the lease and runs them (when the
// process serves requests: see claimFree); another
// process, and the worker leaves them to it, forgets their heads, and
// asks again only after that lease was due to lapse. So jobs of a
// partition nobody holds no longer wait for a request that touches the
// user (issue 26): they are found when the worker starts, at every
// rescan of the queue (rescanQueue), at a Flush, and when this process
// takes the partition's lease for any reason.

// claimTimeout bounds the lease lookup and acquisition of one partition.
const claimTimeout = 5 * time.Second

// foreignMin is the least time a partition found held elsewhere is left
// alone, whatever its lease's expiry says (clocks differ).
const foreignMin = time.Second

// watchPartitions makes the worker rescan the queue of every partition
// whose lease this process takes: a takeover brings the jobs its former
// holder left.
func (w *worker) watchPartitions() {
	if w.s.db.Cluster() == nil {
		return
	}
	w.s.db.OnPartitionChange(func(part []byte) {
		w.mu.Lock()
		w.mu.rescan[string(part)] = true
		delete(w.mu.foreign, string(part))
		w.mu.Unlock()
		w.nudge()
	})
}

// scanTaken records the heads of the sessions of the partitions this
// process took since the last pass (see watchPartitions).
func (w *worker) scanTaken() error {
	w.mu.Lock()
	parts := w.mu.rescan
	w.mu.rescan = map[string]bool{}
	w.mu.Unlock()
	for p := range parts {
		part := []byte(p)
		if !w.s.owns(part) {
			continue // lost again, or it was a loss
		}
		found, err := w.queueHeads(part, func(j job) bool {
			jp, ok := engine.LeasePartition(j.prefix)
			return ok && bytes.Equal(jp, part)
		})
		if err != nil {
			w.mu.Lock()
			w.mu.rescan[p] = true // the next pass tries again
			w.mu.Unlock()
			return err
		}
		for _, j := range found {
			w.queued(j.prefix, j.key)
		}
	}
	return nil
}

// claimFree takes the lease of each partition of the sessions (queue
// prefixes) that this process does not hold and nobody else does, so
// that the worker can run their jobs. Sessions of a partition another
// process holds lose their heads (that process runs them), and the
// partition is not asked about again before its lease was due to lapse.
//
// A process that serves no requests (no [PostgresOptions.Addr]: a
// command-line tool) takes no partition for its jobs: serve nodes cannot
// forward a partition's requests to it, and would answer them 503 while
// it runs.
func (w *worker) claimFree(sessions []string) {
	c := w.s.db.Cluster()
	if c == nil || c.Addr() == "" {
		return
	}
	asked := map[string]bool{}
	for _, sp := range sessions {
		part, ok := engine.LeasePartition([]byte(sp))
		if !ok || asked[string(part)] || w.s.owns(part) || w.foreignUntil(part) {
			continue
		}
		asked[string(part)] = true
		until, err := w.claim(c, part)
		if w.ctx.Err() != nil {
			return
		}
		if err != nil {
			w.s.warn("memory: taking a free partition for its extraction jobs failed", "err", err)
		}
		if !until.IsZero() {
			w.leaveTo(part, until)
		}
	}
}

// claim takes part's lease when nobody holds it. It returns, when another
// process holds it (or the database could not tell), until when to leave
// the partition alone; zero when this process took it.
func (w *worker) claim(c *kv.Cluster, part []byte) (until time.Time, err error) {
	ctx, cancel := context.WithTimeout(w.ctx, claimTimeout)
	defer cancel()
	l, held, err := c.Lease(ctx, part)
	switch {
	case err != nil:
		return time.Now().Add(c.LeaseTTL() / 3), err
	case held && l.Node != c.Node():
		return later(l.Expires, time.Now().Add(foreignMin)), nil
	}
	_, err = c.Acquire(ctx, part)
	var lh *kv.LeaseHeldError
	switch {
	case errors.As(err, &lh):
		return later(lh.Lease.Expires, time.Now().Add(foreignMin)), nil
	case err != nil:
		return time.Now().Add(c.LeaseTTL() / 3), err
	}
	return time.Time{}, nil
}

// foreignUntil reports whether part was found held elsewhere and is left
// alone still.
func (w *worker) foreignUntil(part []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	until, ok := w.mu.foreign[string(part)]
	if ok && !time.Now().Before(until) {
		delete(w.mu.foreign, string(part))
		return false
	}
	return ok
}

// leaveTo records that part is left to its holder until then, and drops
// the heads of its sessions: Flush, a rescan or a takeover finds them
// again.
func (w *worker) leaveTo(part []byte, until time.Time) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.foreign[string(part)] = until
	for sp := range w.mu.heads {
		if p, ok := engine.LeasePartition([]byte(sp)); ok && bytes.Equal(p, part) {
			delete(w.mu.heads, sp)
		}
	}
}

// rescanDue returns when the next full scan of the queue is due, for the
// worker of a store in PostgreSQL to wake for it when idle (a partition
// whose holder died with jobs queued is found then); zero otherwise, and
// before the first scan succeeded (a failed pass retries with backoff).
func (w *worker) rescanDue() time.Time {
	if w.s.db.Cluster() == nil {
		return time.Time{}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.mu.scanned.IsZero() {
		return time.Time{}
	}
	return w.mu.scanned.Add(rescanQueue)
}

// earliest returns the earlier of two times, a zero one meaning never.
func earliest(a, b time.Time) time.Time {
	if a.IsZero() || (!b.IsZero() && b.Before(a)) {
		return b
	}
	return a
}

// later returns the later of two times.
func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}
