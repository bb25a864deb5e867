package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// The extraction queue
//
// Append writes, in the transaction that stores a message, a queue entry
// under the system key NSExtractQueue + session prefix + message id. The
// worker reads the queue in key order, so each session's messages come in
// append order, and runs the Extractor over a batch of them, one at a
// time, outside any transaction. Then, in one transaction for each job or
// for a run of fast ones (see extractCommitMax), it writes what each
// produced, records it in the session's ledger (NSExtracted, for erasure)
// and deletes the entries. A job whose entry is gone when that
// transaction runs (done already, or its session forgotten) writes
// nothing, so running a job twice writes nothing new. A crash before a
// commit leaves its entries in place; a reopen resumes, calling the
// Extractor again only for the jobs not committed.

// Limits of the extraction worker.
const (
	// extractBatch is how many jobs the worker reads at a time, and at
	// most how many one transaction completes: with Sync durability each
	// commit is an fsync, so fast jobs share one.
	extractBatch = 64
	// extractCommitAfter and extractCommitMax bound how long the jobs of
	// a batch run before what they gave is committed: at least the
	// first, and four times the batch's last commit, so that commits take
	// at most a fifth of the time; at most the second, so a crash repeats
	// no more than that much extraction and the job in flight. A model
	// call takes longer than extractCommitMax, so each is committed as it
	// returns; a local extractor's jobs (well under a ms each) share one
	// commit (one fsync, with Sync durability) as they did when a batch
	// was one commit.
	extractCommitAfter = 10 * time.Millisecond
	extractCommitMax   = 100 * time.Millisecond
	// ExtractMaxAttempts is how many times a job is tried before it is
	// parked (see [Store.ExtractionQueue]).
	ExtractMaxAttempts = 5
	// extractBackoff is the wait after a job's first failure; it doubles
	// with each further failure, up to extractBackoffMax.
	extractBackoff    = 500 * time.Millisecond
	extractBackoffMax = 30 * time.Second
	// extractGather is how long the worker lets appends gather before a
	// pass, unless Flush is waiting. With Sync durability every commit of
	// the worker is an fsync that appends may queue behind: measured with
	// engram bench extract (interleaved rounds), Append p50 with
	// extraction async over off was 1.05-1.26 with 10 ms, 0.96-1.09 with
	// 100 ms.
	extractGather = 100 * time.Millisecond
	// extractJobTimeout bounds one Extractor call.
	extractJobTimeout = 2 * time.Minute
	// maxJobError bounds the error text kept with a failed job.
	maxJobError = 512
)

// job is one message waiting for extraction.
type job struct {
	key    []byte // its queue entry
	prefix []byte // its session's key prefix
	scope  Scope
	id     ulid.ULID
	state  jobState
}

// jobState is the value of a queue or parked entry: how often the job
// failed and the last error. A new job's entry is empty.
type jobState struct {
	Attempts int    `json:"a,omitempty"`
	Error    string `json:"e,omitempty"`
	At       int64  `json:"t,omitempty"` // of the last failure, Unix ns
}

func (st *jobState) encode() []byte {
	if st.Attempts == 0 {
		return nil
	}
	b, _ := json.Marshal(st) // ints and a string always marshal
	return b
}

func decodeJobState(b []byte) jobState {
	var st jobState
	if len(b) > 0 {
		_ = json.Unmarshal(b, &st) // a damaged state counts as a new job
	}
	return st
}

// parseJob parses a queue (or parked) entry of namespace ns.
func parseJob(ns engine.SystemNamespace, key, val []byte) (job, bool) {
	j := job{key: bytes.Clone(key)}
	var ok bool
	if j.prefix, j.scope, j.id, ok = parseQueueKey(ns, j.key); !ok {
		return job{}, false
	}
	j.state = decodeJobState(val)
	return j, true
}

// extracts reports whether m is queued for extraction: user and assistant
// messages with text, and tool results when Options.ExtractToolResults.
func (s *Store) extracts(m *Message) bool {
	if s.opts.Extraction == ExtractOff || m.Content == "" {
		return false
	}
	switch m.Role {
	case RoleUser, RoleAssistant:
		return true
	case RoleTool:
		return s.opts.ExtractToolResults
	}
	return false
}

// worker is the store's extraction worker: one goroutine that drains the
// queue, owned by the Store and stopped by Close.
type worker struct {
	s      *Store
	x      Extractor
	ctx    context.Context
	cancel context.CancelFunc
	wake   chan struct{} // buffered: a pending nudge
	hurry  chan struct{} // buffered: a nudge from Flush, which waits
	done   chan struct{} // closed when the goroutine ends

	mu struct {
		sync.Mutex
		// progress is closed (and replaced) after every pass, for Flush.
		progress chan struct{}
		// blocked holds the sessions (by prefix) whose next job failed,
		// until when it may be tried again: their later jobs wait, so a
		// session's messages are extracted in order.
		blocked map[string]time.Time
		// heads holds, for each session (by prefix) that may have
		// queued jobs, a queue key at or before its first one. See
		// queueHead.
		heads map[string]queueHead
		// seq numbers the changes to heads.
		seq uint64
		// scanned is when the whole queue was last scanned for heads;
		// zero makes the next pass scan it.
		scanned time.Time
		// after is the last session a full batch read; the next batch
		// starts after it.
		after string
		// foreign and rescan are of a store in PostgreSQL (see
		// extract_partitions.go): the partitions found held by another
		// process, until when they are left to it, and those whose
		// lease this process took since the last pass.
		foreign map[string]time.Time
		rescan  map[string]bool
	}
}

// queueHead is where a session's queued jobs start, or before. A completed
// job's entry is deleted, but an LSM tree keeps the deletion until a
// compaction, and a scan from the start of the queue wades through every
// one of them: the cost of a pass grew with the jobs done since the last
// compaction. So the worker seeks each session at its head instead, which
// it moves up to the first job it finds; Append, Flush and RetryParked
// lower it to the entries they see queued. The whole queue is scanned for
// heads when the worker starts,
// and again every rescanQueue, in case an entry was written without
// telling the worker.
type queueHead struct {
	from []byte
	seq  uint64 // the change that set it
}

// rescanQueue is how often the worker scans the whole queue for heads.
const rescanQueue = 5 * time.Minute

func (s *Store) startWorker() {
	ctx, cancel := context.WithCancel(backgroundContext(context.Background()))
	w := &worker{s: s, x: s.extractor, ctx: ctx, cancel: cancel, wake: make(chan struct{}, 1), hurry: make(chan struct{}, 1), done: make(chan struct{})}
	w.mu.progress = make(chan struct{})
	w.mu.blocked = map[string]time.Time{}
	w.mu.heads = map[string]queueHead{}
	w.mu.foreign = map[string]time.Time{}
	w.mu.rescan = map[string]bool{}
	s.worker = w
	w.watchPartitions()
	go w.run()
}

// nudge tells the worker there may be new jobs.
func (w *worker) nudge() {
	select {
	case w.wake <- struct{}{}:
	default:
	}
}

// hurryUp tells the worker someone waits for the queue.
func (w *worker) hurryUp() {
	select {
	case w.hurry <- struct{}{}:
	default:
	}
}

// stop ends the worker, abandoning a batch not yet committed (its jobs
// stay queued), and waits for it. Calling it again does nothing.
func (w *worker) stop() {
	w.cancel()
	<-w.done
}

// progressed returns a channel closed at the end of the next pass.
func (w *worker) progressed() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.progress
}

func (w *worker) run() {
	defer close(w.done)
	defer w.signal() // wake Flush callers for good
	for {
		next, ran, err := w.pass()
		if ran > 0 {
			// Only a pass that ran jobs wakes Flush: one that found every
			// job waiting out a backoff must not spin with it.
			w.signal()
		}
		if err != nil && w.ctx.Err() == nil {
			w.s.warn("memory: extraction pass failed; retrying", "err", err)
			next = time.Now().Add(backoff(1))
		} else if err == nil {
			next = earliest(next, w.rescanDue())
		}
		var timer *time.Timer
		var fire <-chan time.Time
		if !next.IsZero() {
			timer = time.NewTimer(max(time.Until(next), time.Millisecond))
			fire = timer.C
		}
		select {
		case <-w.ctx.Done():
			if timer != nil {
				timer.Stop()
			}
			return
		case <-w.wake:
			// Let a burst of appends gather, so that one commit (one
			// fsync, with Sync durability) completes many jobs instead
			// of each append paying for a second one.
			gather := time.NewTimer(extractGather)
			select {
			case <-gather.C:
			case <-w.hurry:
			case <-w.ctx.Done():
			}
			gather.Stop()
		case <-w.hurry:
		case <-fire:
		}
		if timer != nil {
			timer.Stop()
		}
	}
}

func (w *worker) signal() {
	w.mu.Lock()
	close(w.mu.progress)
	w.mu.progress = make(chan struct{})
	w.mu.Unlock()
}

// pass runs every job that is ready and returns when the next blocked
// session may be retried (zero: none is blocked) and how many jobs it
// ran.
func (w *worker) pass() (next time.Time, ran int, err error) {
	if err := w.scanHeads(); err != nil {
		return time.Time{}, ran, err
	}
	if err := w.scanTaken(); err != nil {
		return time.Time{}, ran, err
	}
	for w.ctx.Err() == nil {
		start := time.Now()
		jobs, err := w.nextJobs(extractBatch)
		if err != nil {
			return time.Time{}, ran, err
		}
		if len(jobs) == 0 {
			break
		}
		failed, err := w.s.runJobs(w.ctx, w.x, jobs)
		if err != nil {
			return time.Time{}, ran, err
		}
		ran += len(jobs)
		w.block(failed)
		// Under load, stand aside before the next batch (Flush's
		// hurry-up ends the pause).
		w.s.pace.pace(w.ctx, WorkExtract, time.Since(start), w.hurry)
	}
	return w.nextRetry(), ran, nil
}

// queued tells the worker that key, an entry of the session with prefix,
// was queued: the session's head goes down to it.
func (w *worker) queued(prefix, key []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.seq++
	h, ok := w.mu.heads[string(prefix)]
	if !ok || bytes.Compare(key, h.from) < 0 {
		h.from = bytes.Clone(key)
	}
	h.seq = w.mu.seq
	w.mu.heads[string(prefix)] = h
}

// scanHeads records the first entry of every session in the queue, when
// the queue was not scanned for rescanQueue.
func (w *worker) scanHeads() error {
	w.mu.Lock()
	due := time.Since(w.mu.scanned) >= rescanQueue || w.mu.scanned.IsZero()
	w.mu.Unlock()
	if !due {
		return nil
	}
	started := time.Now()
	found, err := w.queueHeads(nil, nil)
	if err != nil {
		return err
	}
	for _, j := range found {
		w.queued(j.prefix, j.key)
	}
	w.mu.Lock()
	w.mu.scanned = started
	w.mu.Unlock()
	return nil
}

// queueHeads reads the first queued job of every session under the key
// prefix under (nil: the whole queue), skipping to the next session after
// each, and returns those keep accepts (nil keeps all).
func (w *worker) queueHeads(under []byte, keep func(job) bool) ([]job, error) {
	var found []job
	base := queuePrefix(engine.NSExtractQueue, under)
	err := w.s.db.View(w.ctx, func(tx *engine.Tx) error {
		found = found[:0]
		it := tx.NewIterator(engine.IterOptions{Prefix: base, KeysOnly: true})
		defer it.Close()
		for it.Seek(base); it.Valid(); {
			j, ok := parseJob(engine.NSExtractQueue, it.Key(), nil)
			if !ok {
				it.Next() // not ours to judge; left alone
				continue
			}
			if keep == nil || keep(j) {
				found = append(found, j)
			}
			it.Seek(engine.PrefixEnd(queuePrefix(engine.NSExtractQueue, j.prefix)))
		}
		return nil
	})
	return found, err
}

// nextJobs returns up to limit queued jobs, each session's in key order,
// leaving out the blocked sessions. It reads each session from its head
// and moves the head up to the first job found, or drops it when the
// session has none, unless Append changed it meanwhile.
func (w *worker) nextJobs(limit int) ([]job, error) {
	type visit struct {
		prefix string
		head   queueHead
		read   bool   // the session was read (not blocked, held here)
		first  []byte // nil: the session has no job
	}
	var visits []visit
	var sessions []string
	w.mu.Lock()
	for p, h := range w.mu.heads {
		visits = append(visits, visit{prefix: p, head: h})
		sessions = append(sessions, p)
	}
	after := w.mu.after
	w.mu.Unlock()
	// Jobs of partitions nobody holds are this process's to run.
	w.claimFree(sessions)
	// In prefix order from the session after the last batch's last one,
	// round the ring: a session that always has a batch's worth of jobs
	// waiting must not starve the sessions after it.
	slices.SortFunc(visits, func(a, b visit) int { return strings.Compare(a.prefix, b.prefix) })
	if i, _ := slices.BinarySearchFunc(visits, after, func(v visit, p string) int {
		if v.prefix <= p {
			return -1
		}
		return 1
	}); i > 0 {
		visits = append(visits[i:], visits[:i]...)
	}

	var jobs []job
	seen := 0
	err := w.s.db.View(w.ctx, func(tx *engine.Tx) error {
		jobs, seen = jobs[:0], 0
		var val []byte
		for i := range visits {
			if len(jobs) >= limit {
				break
			}
			v := &visits[i]
			if w.isBlocked([]byte(v.prefix)) || !w.s.owns([]byte(v.prefix)) {
				// Blocked, or another process's partition: its
				// jobs wait for its lease holder.
				continue
			}
			seen = i + 1
			v.read, v.first = true, nil
			p := queuePrefix(engine.NSExtractQueue, []byte(v.prefix))
			it := tx.NewIterator(engine.IterOptions{Prefix: p, Prefetch: min(limit-len(jobs), 16)})
			for it.Seek(v.head.from); it.Valid() && len(jobs) < limit; it.Next() {
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					it.Close()
					return err
				}
				j, ok := parseJob(engine.NSExtractQueue, it.Key(), val)
				if !ok {
					continue
				}
				if v.first == nil {
					v.first = j.key
				}
				jobs = append(jobs, j)
			}
			it.Close()
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if testHookJobsRead != nil {
		testHookJobsRead()
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	w.mu.after = ""
	if len(jobs) >= limit && seen > 0 {
		w.mu.after = visits[seen-1].prefix
	}
	for _, v := range visits[:seen] {
		if !v.read {
			// Skipped: what it holds is unknown, so its head stands
			// (checking the block again here would not do: it may have
			// ended since the read).
			continue
		}
		cur, ok := w.mu.heads[v.prefix]
		if !ok || cur.seq != v.head.seq {
			continue // Append queued meanwhile: its head stands
		}
		if v.first == nil {
			delete(w.mu.heads, v.prefix)
		} else {
			cur.from = v.first
			w.mu.heads[v.prefix] = cur
		}
	}
	return jobs, nil
}

// testHookJobsRead, when set by a test, runs in nextJobs between reading
// the queue and updating the heads.
var testHookJobsRead func()

// headOf returns the session's head; a zero one when the worker knows of
// no job of the session.
func (w *worker) headOf(prefix []byte) queueHead {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.mu.heads[string(prefix)]
}

// raise moves the session's head up to key, found to be its first job,
// unless Append changed the head since h was read.
func (w *worker) raise(prefix []byte, h queueHead, key []byte) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if cur, ok := w.mu.heads[string(prefix)]; ok && cur.seq == h.seq && bytes.Compare(cur.from, key) < 0 {
		cur.from = bytes.Clone(key)
		w.mu.heads[string(prefix)] = cur
	}
}

func (w *worker) isBlocked(prefix []byte) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.isBlockedLocked(prefix)
}

func (w *worker) isBlockedLocked(prefix []byte) bool {
	until, ok := w.mu.blocked[string(prefix)]
	if ok && !time.Now().Before(until) {
		delete(w.mu.blocked, string(prefix))
		return false
	}
	return ok
}

// block records the sessions whose job failed, with the backoff its
// attempts earned.
func (w *worker) block(failed []job) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, j := range failed {
		w.mu.blocked[string(j.prefix)] = time.Now().Add(backoff(j.state.Attempts))
	}
}

func (w *worker) nextRetry() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	var next time.Time
	for _, t := range w.mu.blocked {
		if next.IsZero() || t.Before(next) {
			next = t
		}
	}
	return next
}

// extractBackoffUnit is extractBackoff, shortened by tests.
var extractBackoffUnit atomic.Int64

func init() { extractBackoffUnit.Store(int64(extractBackoff)) }

// backoff is the wait after a job's attempts-th failure.
func backoff(attempts int) time.Duration {
	d := time.Duration(extractBackoffUnit.Load())
	for i := 1; i < attempts && d < extractBackoffMax; i++ {
		d *= 2
	}
	return min(d, extractBackoffMax)
}

// extractAppended hands the jobs of an append just committed to
// extraction: the worker is nudged, or with ExtractSync they run now (the
// caller holds the session's lock, so they run in order). A failure is
// logged and left to the worker's retries; it never fails the append.
func (s *Store) extractAppended(ctx context.Context, a *preparedAppend, ids []ulid.ULID) {
	if s.worker == nil {
		return
	}
	scope := a.user
	scope.Session = a.session
	var jobs []job
	for i, id := range ids {
		if s.extracts(&a.msgs[i]) {
			jobs = append(jobs, job{key: queueKey(engine.NSExtractQueue, a.prefix, id), prefix: a.prefix, scope: scope, id: id})
		}
	}
	if len(jobs) == 0 {
		return
	}
	s.worker.queued(a.prefix, jobs[0].key)
	if s.opts.Extraction != ExtractSync {
		s.worker.nudge()
		return
	}
	// An earlier message of the session still queued (waiting out a
	// backoff, or left by an earlier run) goes first: the worker takes
	// them in order.
	if w := s.worker; w.isBlocked(a.prefix) || !s.firstQueued(ctx, a.prefix, jobs[0].key) {
		w.nudge()
		return
	}
	failed, err := s.runJobs(ctx, s.extractor, jobs)
	if err != nil {
		s.warn("memory: extraction on append failed; the worker retries", "err", err)
		s.worker.nudge()
		return
	}
	if len(failed) > 0 {
		s.worker.block(failed)
		s.worker.nudge()
	}
}

// firstQueued reports whether key is the first queue entry of the
// session with prefix. It reads from the session's head (see queueHead)
// and raises the head to key when it is.
func (s *Store) firstQueued(ctx context.Context, prefix, key []byte) bool {
	first := false
	h := s.worker.headOf(prefix)
	from := queuePrefix(engine.NSExtractQueue, prefix)
	if h.from != nil && bytes.Compare(h.from, from) > 0 && bytes.Compare(h.from, key) <= 0 {
		from = h.from
	}
	_ = s.db.View(ctx, func(tx *engine.Tx) error {
		p := queuePrefix(engine.NSExtractQueue, prefix)
		it := tx.NewIterator(engine.IterOptions{Prefix: p, KeysOnly: true})
		defer it.Close()
		it.Seek(from)
		first = it.Valid() && bytes.Equal(it.Key(), key)
		return nil
	})
	if first {
		s.worker.raise(prefix, h, key)
	}
	return first
}

// outcome is what running one job gave.
type outcome struct {
	in  *ExtractInput // nil when the message is gone
	x   *Extraction
	err error
	// prepared holds the memories of x, checked and embedded.
	prepared []*preparedMemory
	// skip marks items of x that could not be written, by kind and index.
	skip map[itemRef]bool
	// permanent parks the job at once when err is set.
	permanent bool
}

// texts returns the texts of the memories the outcome embedded.
func (o *outcome) texts() []string {
	var out []string
	for _, p := range o.prepared {
		if p != nil {
			out = append(out, p.m.Text)
		}
	}
	return out
}

// runJobs extracts a batch of jobs and completes them, in order. What the
// jobs since the last commit gave is committed once they have run long
// enough (see extractCommitMax), and at the end of the batch: a model's
// calls are each committed as they return, so a crash sends only the call
// in flight to the model again, while the fast calls of a local extractor
// still share a commit. It returns the jobs that failed and were left
// queued for a retry.
func (s *Store) runJobs(ctx context.Context, x Extractor, jobs []job) ([]job, error) {
	outs := make([]outcome, len(jobs))
	failedSession := map[string]bool{}
	var failed []job
	from, since, commit := 0, time.Now(), time.Duration(0)
	for i := range jobs {
		if err := s.runJob(ctx, x, &jobs[i], &outs[i], failedSession); err != nil {
			return nil, err
		}
		if i+1 < len(jobs) && time.Since(since) < min(extractCommitMax, max(extractCommitAfter, 4*commit)) {
			continue
		}
		began := time.Now()
		f, err := s.completeJobs(ctx, jobs[from:i+1], outs[from:i+1])
		if err != nil {
			return nil, err
		}
		failed = append(failed, f...)
		from, since, commit = i+1, time.Now(), time.Since(began)
	}
	for i := range jobs {
		if o := &outs[i]; o.err != nil && !errors.Is(o.err, errSkipped) {
			s.warn("memory: extraction failed", "tenant", jobs[i].scope.Tenant, "user", jobs[i].scope.User,
				"session", jobs[i].scope.Session, "message", jobs[i].id.String(), "attempt", jobs[i].state.Attempts+1, "err", o.err)
		}
	}
	return failed, nil
}

// runJob extracts one job into o, outside any transaction. A job whose
// session failed earlier in the batch (in failedSession) is skipped, and
// a failure adds the job's session.
func (s *Store) runJob(ctx context.Context, x Extractor, j *job, o *outcome, failedSession map[string]bool) error {
	if failedSession[string(j.prefix)] {
		o.err = errSkipped
		return nil
	}
	in, err := s.jobInput(ctx, j)
	if err != nil {
		return err
	}
	if in == nil {
		return nil // the message is gone: the job is dropped
	}
	o.in = in
	o.x, o.err = callExtractor(ctx, x, in)
	if ctx.Err() != nil {
		return ctx.Err()
	}
	if o.err != nil {
		failedSession[string(j.prefix)] = true
		return nil
	}
	s.checkExtraction(j, o)
	return s.prepareExtraction(ctx, j, o)
}

// completeJobs commits extracted jobs in one transaction. One job the
// store cannot write must not hold up the others: when the transaction
// fails, they are committed one by one, and the one that fails is
// parked.
func (s *Store) completeJobs(ctx context.Context, jobs []job, outs []outcome) ([]job, error) {
	failed, err := s.commitJobs(ctx, jobs, outs)
	if err == nil || len(jobs) == 1 || ctx.Err() != nil {
		return failed, err
	}
	failed = failed[:0]
	for i := range jobs {
		f, err := s.commitJobs(ctx, jobs[i:i+1], outs[i:i+1])
		if err != nil && ctx.Err() == nil {
			s.warn("memory: extraction job cannot be written; parking it", "tenant", jobs[i].scope.Tenant, "user", jobs[i].scope.User,
				"message", jobs[i].id.String(), "err", err)
			outs[i] = outcome{err: fmt.Errorf("memory: write extraction: %w", err), permanent: true}
			f, err = s.commitJobs(ctx, jobs[i:i+1], outs[i:i+1])
		}
		if err != nil {
			return nil, err
		}
		failed = append(failed, f...)
	}
	return failed, nil
}

// maxItemRetries bounds how often commitJobs runs its transaction again
// without an item the store refused.
const maxItemRetries = 16

// commitJobs completes extracted jobs in one transaction: each job's
// writes and ledger, or its failure, and the removal (or update) of its
// queue entry. It returns the jobs that failed and stay queued.
func (s *Store) commitJobs(ctx context.Context, jobs []job, outs []outcome) ([]job, error) {
	var failed []job
	// Items that fail inside the transaction are marked and the
	// transaction is tried again without them: each try drops one.
	for try := 0; ; try++ {
		var touched [][]byte
		var unstored []string
		var bad *itemError
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			touched, unstored, bad, failed = touched[:0], unstored[:0], nil, failed[:0]
			ap := newApplier(s, tx)
			for i := range jobs {
				j, o := &jobs[i], &outs[i]
				if errors.Is(o.err, errSkipped) {
					continue
				}
				switch _, err := tx.Get(j.key); {
				case errors.Is(err, engine.ErrNotFound):
					unstored = append(unstored, o.texts()...)
					continue // done already, or forgotten
				case err != nil:
					return err
				}
				if o.err != nil {
					// A copy: Update may run this function again.
					fj := *j
					fj.state.Attempts++
					fj.state.Error = truncateError(o.err)
					fj.state.At = time.Now().UnixNano()
					if o.permanent || permanent(o.err) {
						fj.state.Attempts = max(fj.state.Attempts, ExtractMaxAttempts)
					}
					if fj.state.Attempts >= ExtractMaxAttempts {
						if err := tx.Delete(j.key); err != nil {
							return err
						}
						if err := tx.Set(queueKey(engine.NSExtractParked, j.prefix, j.id), fj.state.encode()); err != nil {
							return err
						}
						continue
					}
					if err := tx.Set(j.key, fj.state.encode()); err != nil {
						return err
					}
					failed = append(failed, fj)
					continue
				}
				if o.in != nil {
					if err := ap.apply(j, o); err != nil {
						var ie *itemError
						if errors.As(err, &ie) {
							ie.job = i
							bad = ie
						}
						return err
					}
				}
				if err := tx.Delete(j.key); err != nil {
					return err
				}
			}
			touched, unstored = ap.roots(), append(unstored, ap.unstored...)
			return nil
		})
		if bad != nil && try < maxItemRetries {
			o := &outs[bad.job]
			if o.skip == nil {
				o.skip = map[itemRef]bool{}
			}
			o.skip[bad.ref] = true
			s.warn("memory: extracted item not written", "tenant", jobs[bad.job].scope.Tenant, "user", jobs[bad.job].scope.User,
				"message", jobs[bad.job].id.String(), "item", bad.ref.String(), "err", bad.err)
			continue
		}
		if err != nil {
			return nil, err
		}
		for _, r := range touched {
			s.nameCache.invalidate(r)
		}
		// Embedded (and cached) but not stored: merged into another
		// memory, or the job was gone.
		s.dropEmbedded(ctx, unstored...)
		return failed, nil
	}
}

// permanent reports whether an extraction error cannot go away by
// trying again: a refusal, or a server that says the request or its key
// is wrong. Such a job is parked at once.
func permanent(err error) bool {
	if errors.Is(err, ErrExtractionRefused) {
		return true
	}
	var se *StatusError
	if errors.As(err, &se) {
		switch se.StatusCode {
		case 400, 401, 403, 404, 422:
			return true
		}
	}
	return false
}

// errSkipped marks a job left queued because an earlier job of its session
// failed in the same batch.
var errSkipped = errors.New("memory: an earlier message of the session failed extraction")

func truncateError(err error) string {
	msg := err.Error()
	if len(msg) > maxJobError {
		msg = strings.ToValidUTF8(msg[:maxJobError], "")
	}
	return msg
}

// callExtractor runs x on in, turning a panic into an error and bounding
// its time.
func callExtractor(ctx context.Context, x Extractor, in *ExtractInput) (out *Extraction, err error) {
	ctx, cancel := context.WithTimeout(ctx, extractJobTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			out, err = nil, fmt.Errorf("memory: extractor panicked: %v\n%s", r, debug.Stack())
		}
	}()
	out, err = x.Extract(ctx, in)
	if err == nil && out == nil {
		out = &Extraction{}
	}
	return out, err
}

// jobInput reads the message of a job and the messages before it; nil
// when the message is gone (expired or erased).
func (s *Store) jobInput(ctx context.Context, j *job) (*ExtractInput, error) {
	keys := sessionPrefix(j.prefix)
	msgPrefix := keys.messages()
	var in *ExtractInput
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		in = nil
		b, err := tx.Get(keys.message(j.id))
		switch {
		case errors.Is(err, engine.ErrNotFound):
			return nil
		case err != nil:
			return err
		}
		m := Message{ID: j.id.String()}
		if _, err := decodeRecord(b, &m); err != nil {
			s.warn("memory: extraction skips an unreadable message", "message", m.ID, "err", err)
			return nil
		}
		in = &ExtractInput{Scope: j.scope, Message: m, User: j.scope.User}
		switch {
		case m.Name != "":
			in.Speaker = m.Name
		case m.Role == RoleUser:
			in.Speaker = j.scope.User
		}
		it := tx.NewIterator(engine.IterOptions{Prefix: msgPrefix, Reverse: true, Prefetch: ExtractContextMessages})
		defer it.Close()
		var val []byte
		for it.Seek(keys.message(engine.PrevID(j.id))); it.Valid() && len(in.Previous) < ExtractContextMessages; it.Next() {
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			id := keyID(msgPrefix, it.Key())
			pm := Message{ID: id.String()}
			if _, err := decodeRecord(val, &pm); err != nil {
				continue
			}
			in.Previous = append(in.Previous, pm)
		}
		// Oldest first.
		for a, b := 0, len(in.Previous)-1; a < b; a, b = a+1, b-1 {
			in.Previous[a], in.Previous[b] = in.Previous[b], in.Previous[a]
		}
		return nil
	})
	if err != nil || in == nil {
		return nil, err
	}
	in.Known = &known{s: s, user: Scope{Tenant: j.scope.Tenant, User: j.scope.User}}
	return in, nil
}

// warn logs to Options.Logger, when set.
func (s *Store) warn(msg string, args ...any) {
	if s.opts.Logger != nil {
		s.opts.Logger.Warn(msg, args...)
	}
}

// Flush waits until every message appended before the call has been
// through extraction: its memories, entities and facts are written and
// indexed, or the job was parked after failing [ExtractMaxAttempts]
// times (a job waiting between tries is waited for). With [ExtractOff] it
// returns at once. If ctx ends first it returns a [*FlushError] that
// counts the messages still waiting and matches both [ErrFlushPending]
// and ctx's error; [ErrClosed] if the store is closed meanwhile.
//
// In a store in PostgreSQL shared by several processes, the jobs of a
// partition another process holds are run there, and Flush waits for
// them to leave the queue; those of a partition nobody holds are taken
// over by this process's worker (it takes the lease) and run here.
func (s *Store) Flush(ctx context.Context) error {
	if s.worker == nil {
		return nil
	}
	// The worker does not stand aside for requests while Flush waits.
	s.pace.waiters.Add(1)
	defer s.pace.waiters.Add(-1)
	var pending [][]byte
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		pending = pending[:0]
		base := queuePrefix(engine.NSExtractQueue, nil)
		it := tx.NewIterator(engine.IterOptions{Prefix: base, KeysOnly: true})
		defer it.Close()
		for it.Seek(base); it.Valid(); it.Next() {
			pending = append(pending, bytes.Clone(it.Key()))
		}
		return nil
	})
	if err != nil {
		return err
	}
	if testHookFlushRead != nil {
		testHookFlushRead()
	}
	// Whatever wrote them, the worker now knows where each session's
	// jobs start.
	s.worker.queuedAll(pending)
	// Jobs another process runs end without this worker's progress: with
	// PostgreSQL the queue is also looked at every poll.
	var poll time.Duration
	if s.db.Cluster() != nil {
		poll = flushPoll
	}
	for len(pending) > 0 {
		wait := s.worker.progressed()
		s.worker.hurryUp()
		if pending, err = s.stillQueued(ctx, pending); err != nil {
			return err
		}
		if len(pending) == 0 {
			return nil
		}
		if err := s.awaitFlush(ctx, wait, &poll, pending); err != nil {
			return err
		}
	}
	return nil
}

// awaitFlush waits for the worker's next pass, the next poll (when *poll
// is not zero; it doubles), or the end of ctx or the worker.
func (s *Store) awaitFlush(ctx context.Context, wait <-chan struct{}, poll *time.Duration, pending [][]byte) error {
	var tick <-chan time.Time
	if *poll > 0 {
		t := time.NewTimer(*poll)
		defer t.Stop()
		tick = t.C
		*poll = min(2**poll, flushPollMax)
	}
	select {
	case <-ctx.Done():
		return &FlushError{Pending: len(pending), Err: ctx.Err()}
	case <-s.worker.done:
		return ErrClosed
	case <-wait:
	case <-tick:
		// A partition left to another process whose holder died
		// meanwhile is this worker's to take: it is shown the sessions
		// again (it asks about each at most once a lease).
		s.worker.queuedAll(pending)
	}
	return nil
}

// testHookFlushRead, when set by a test, runs in Flush once it has read
// the entries it waits for.
var testHookFlushRead func()

// How often Flush looks at the queue of a store in PostgreSQL, for jobs
// other processes run: from flushPoll, doubling up to flushPollMax.
const (
	flushPoll    = 50 * time.Millisecond
	flushPollMax = time.Second
)

// queuedAll tells the worker of queue entries (in key order) Flush found.
func (w *worker) queuedAll(keys [][]byte) {
	var last []byte
	for _, k := range keys {
		if prefix, _, _, ok := parseQueueKey(engine.NSExtractQueue, k); ok && !bytes.Equal(prefix, last) {
			w.queued(prefix, k)
			last = prefix
		}
	}
}

// stillQueued returns the entries of pending (in key order) still in the
// queue: by a read of each with Badger, by one ordered scan with
// PostgreSQL, where a read is a round trip.
func (s *Store) stillQueued(ctx context.Context, pending [][]byte) ([][]byte, error) {
	var left [][]byte
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		left = make([][]byte, 0, len(pending))
		if s.db.Cluster() == nil {
			for _, k := range pending {
				switch _, err := tx.Get(k); {
				case err == nil:
					left = append(left, k)
				case !errors.Is(err, engine.ErrNotFound):
					return err
				}
			}
			return nil
		}
		it := tx.NewIterator(engine.IterOptions{Prefix: queuePrefix(engine.NSExtractQueue, nil), KeysOnly: true})
		defer it.Close()
		i := 0
		for it.Seek(pending[0]); it.Valid() && i < len(pending); {
			switch c := bytes.Compare(it.Key(), pending[i]); {
			case c == 0:
				left = append(left, pending[i])
				i++
				it.Next()
			case c < 0:
				it.Next()
			default:
				i++ // gone
			}
		}
		return nil
	})
	return left, err
}

// QueueInfo is the state of the extraction queue ([Store.ExtractionQueue]).
type QueueInfo struct {
	// Pending is how many messages wait for extraction, Retrying how many
	// of them failed at least once.
	Pending, Retrying int
	// Parked are the jobs that failed [ExtractMaxAttempts] times, oldest
	// message first (at most 100).
	Parked []ParkedJob
	// ParkedTotal is how many jobs are parked.
	ParkedTotal int
}

// ParkedJob is an extraction job that failed too often.
type ParkedJob struct {
	Scope     Scope     // the message's session
	MessageID string    // the message
	Attempts  int       // tries made
	Error     string    // the last error
	At        time.Time // of the last failure
}

// ExtractionQueue reports the extraction queue across the store: what
// waits and what was parked. Parked jobs stay until their session is
// forgotten or [Store.RetryParked] queues them again.
func (s *Store) ExtractionQueue(ctx context.Context) (QueueInfo, error) {
	var q QueueInfo
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		q = QueueInfo{}
		for _, ns := range queues {
			base := queuePrefix(ns, nil)
			it := tx.NewIterator(engine.IterOptions{Prefix: base})
			var val []byte
			for it.Seek(base); it.Valid(); it.Next() {
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					it.Close()
					return err
				}
				j, ok := parseJob(ns, it.Key(), val)
				if !ok {
					continue
				}
				if ns == engine.NSExtractQueue {
					q.Pending++
					if j.state.Attempts > 0 {
						q.Retrying++
					}
					continue
				}
				q.ParkedTotal++
				if len(q.Parked) < 100 {
					q.Parked = append(q.Parked, ParkedJob{Scope: j.scope, MessageID: j.id.String(), Attempts: j.state.Attempts,
						Error: j.state.Error, At: time.Unix(0, j.state.At).UTC()})
				}
			}
			it.Close()
		}
		return nil
	})
	return q, err
}

// RetryParked queues the parked extraction jobs again, with their tries
// counted afresh, and returns how many.
func (s *Store) RetryParked(ctx context.Context) (int, error) {
	n := 0
	base := queuePrefix(engine.NSExtractParked, nil)
	for {
		var moved []job
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			moved = moved[:0]
			it := tx.NewIterator(engine.IterOptions{Prefix: base, KeysOnly: true})
			var keys [][]byte
			for it.Seek(base); it.Valid() && len(keys) < 256; it.Next() {
				keys = append(keys, bytes.Clone(it.Key()))
			}
			it.Close()
			for _, k := range keys {
				j, ok := parseJob(engine.NSExtractParked, k, nil)
				if !ok {
					continue
				}
				if err := tx.Delete(k); err != nil {
					return err
				}
				if err := tx.Set(queueKey(engine.NSExtractQueue, j.prefix, j.id), nil); err != nil {
					return err
				}
				moved = append(moved, j)
			}
			return nil
		})
		if err != nil {
			return n, err
		}
		n += len(moved)
		if len(moved) == 0 {
			break
		}
		if s.worker != nil {
			// The moved jobs' sessions have heads again, at or below
			// the moved entries.
			for _, j := range moved {
				s.worker.queued(j.prefix, queueKey(engine.NSExtractQueue, j.prefix, j.id))
			}
		}
	}
	if n > 0 && s.worker != nil {
		s.worker.nudge()
	}
	return n, nil
}
