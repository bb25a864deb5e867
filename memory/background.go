package memory

import (
	"context"
	"sync/atomic"
	"time"
)

// DefaultBackgroundShare is Options.BackgroundShare when zero: while
// requests are being served, background work runs at most a quarter of the
// time.
const DefaultBackgroundShare = 0.25

// Background work paces itself (see pacer) with these bounds.
const (
	// maxBackgroundPause bounds one pause, so that background work moves
	// on under any load: it falls behind, never stops.
	maxBackgroundPause = 250 * time.Millisecond
	// requestQuiet is how long after a request ends the store still
	// counts as loaded: a client's next request is usually that close.
	requestQuiet = 10 * time.Millisecond
)

// BackgroundWork names a kind of work a [Store] does in the background.
type BackgroundWork int

// The kinds of background work, one goroutine each.
const (
	// WorkExtract is the extraction worker: it turns appended messages
	// into facts and memories (see [ExtractionMode]).
	WorkExtract BackgroundWork = iota
	// WorkSweep is the sweeper: it takes expired records out of the
	// indexes and applies the retention rules.
	WorkSweep
	// WorkSnapshot is the snapshotter: it writes vector indexes that
	// changed to disk, so that the next Open loads them instead of
	// rebuilding them.
	WorkSnapshot
	// WorkWriteBack stores the token counts Recall had to compute for
	// records and facts written without one.
	WorkWriteBack
	numBackgroundWork
)

var backgroundWorkNames = [numBackgroundWork]string{"extract", "sweep", "snapshot", "writeback"}

// String returns "extract", "sweep", "snapshot" or "writeback".
func (w BackgroundWork) String() string {
	if w < 0 || w >= numBackgroundWork {
		return "unknown"
	}
	return backgroundWorkNames[w]
}

// BackgroundStats is what one kind of background work did since the store
// opened.
type BackgroundStats struct {
	Work BackgroundWork
	// Busy is the time it spent working (wall clock: its CPU time is at
	// most this).
	Busy time.Duration
	// Paused is the time it waited for requests, and Pauses how many times
	// it did.
	Paused time.Duration
	Pauses int64
}

// BackgroundStats returns, for each kind of background work, how long it
// worked and how long it stood aside for requests since the store opened.
func (s *Store) BackgroundStats() []BackgroundStats {
	out := make([]BackgroundStats, numBackgroundWork)
	for w := range out {
		c := &s.pace.work[w]
		out[w] = BackgroundStats{
			Work:   BackgroundWork(w),
			Busy:   time.Duration(c.busy.Load()),
			Paused: time.Duration(c.paused.Load()),
			Pauses: c.pauses.Load(),
		}
	}
	return out
}

// pacer keeps the store's background work from competing with its
// requests for the CPU. Each request marks itself (begin, end); each
// background loop reports a unit of work done (pace) and, while requests
// are in flight or ended within requestQuiet, pauses long enough that its
// time working is at most share of the elapsed time: a unit that took d
// is followed by a pause of d×(1−share)/share, at most
// maxBackgroundPause. With no requests it never pauses, so a backlog
// built up under load drains at full speed once the load drops. A caller
// waiting for the work ([Store.Flush]) cuts every pause short.
//
// Go has no thread priorities; a duty cycle is what bounds the CPU share
// of one goroutine, and each kind of background work is one goroutine.
type pacer struct {
	share   float64
	active  atomic.Int64 // requests in flight
	lastEnd atomic.Int64 // when the last request ended, Unix nanoseconds
	waiters atomic.Int64 // Flush calls waiting for the extraction worker
	work    [numBackgroundWork]struct {
		busy, paused, pauses atomic.Int64
	}
	// timer is time.After unless a test replaces it.
	timer func(time.Duration) <-chan time.Time
}

// backgroundKey marks the contexts of the store's own background work, so
// that what it calls through the public methods is not taken for a request.
type backgroundKey struct{}

// backgroundContext returns ctx marked as background work's.
func backgroundContext(ctx context.Context) context.Context {
	return context.WithValue(ctx, backgroundKey{}, true)
}

// begin marks a request in flight, unless ctx is background work's, and
// says whether it did; end(begin's answer) marks it done.
func (p *pacer) begin(ctx context.Context) bool {
	if ctx.Value(backgroundKey{}) != nil {
		return false
	}
	p.active.Add(1)
	return true
}

func (p *pacer) end(began bool) {
	if !began {
		return
	}
	p.lastEnd.Store(time.Now().UnixNano())
	p.active.Add(-1)
}

// loaded reports whether requests are in flight or just were.
func (p *pacer) loaded() bool {
	if p.active.Load() > 0 {
		return true
	}
	return time.Now().UnixNano()-p.lastEnd.Load() < int64(requestQuiet)
}

// pause returns how long background work that just worked for d should
// stand aside: zero when nothing waits for it to.
func (p *pacer) pause(d time.Duration) time.Duration {
	if p.share >= 1 || d <= 0 || p.waiters.Load() > 0 || !p.loaded() {
		return 0
	}
	return min(time.Duration(float64(d)*(1-p.share)/p.share), maxBackgroundPause)
}

// pace records that work w worked for d and stands aside as pause says,
// until the pause ends, ctx is done or hurry fires (nil: never).
func (p *pacer) pace(ctx context.Context, w BackgroundWork, d time.Duration, hurry <-chan struct{}) {
	c := &p.work[w]
	c.busy.Add(int64(d))
	wait := p.pause(d)
	if wait <= 0 {
		return
	}
	after := p.timer
	if after == nil {
		after = time.After
	}
	start := time.Now()
	select {
	case <-after(wait):
	case <-ctx.Done():
	case <-hurry:
	}
	c.paused.Add(int64(time.Since(start)))
	c.pauses.Add(1)
}
