package memory

import (
	"context"
	"fmt"
	"testing"
	"time"
)

// timerAsks replaces p's timer with one that records each pause asked for
// and fires when release is closed (never, when release is nil).
func timerAsks(p *pacer, release <-chan struct{}) <-chan time.Duration {
	asked := make(chan time.Duration, 1000)
	p.timer = func(d time.Duration) <-chan time.Time {
		asked <- d
		fire := make(chan time.Time, 1)
		if release != nil {
			go func() {
				<-release
				fire <- time.Now()
			}()
		}
		return fire
	}
	return asked
}

func TestPacerPauses(t *testing.T) {
	ctx := context.Background()
	released := make(chan struct{})
	close(released)
	p := &pacer{share: 0.25}
	asked := timerAsks(p, released)
	quiet := func() { p.lastEnd.Store(time.Now().Add(-time.Hour).UnixNano()) }
	quiet()

	p.pace(ctx, WorkExtract, 4*time.Millisecond, nil)
	if len(asked) != 0 {
		t.Fatalf("paused with no request in flight (asked %v)", <-asked)
	}

	if !p.begin(ctx) {
		t.Fatal("begin did not count a request")
	}
	for _, c := range []struct {
		worked, want time.Duration
	}{
		{4 * time.Millisecond, 12 * time.Millisecond}, // 4 ms is a quarter of 16
		{time.Second, maxBackgroundPause},
		{0, 0},
	} {
		p.pace(ctx, WorkExtract, c.worked, nil)
		var got time.Duration
		if len(asked) > 0 {
			got = <-asked
		}
		if got != c.want {
			t.Errorf("worked %v under load: paused %v, want %v", c.worked, got, c.want)
		}
	}

	p.waiters.Add(1)
	p.pace(ctx, WorkExtract, 4*time.Millisecond, nil)
	if len(asked) != 0 {
		t.Errorf("paused while Flush waits (asked %v)", <-asked)
	}
	p.waiters.Add(-1)

	full := &pacer{share: 1}
	full.begin(ctx)
	if d := full.pause(time.Second); d != 0 {
		t.Errorf("share 1 paused %v", d)
	}

	p.end(true)
	quiet()
	p.pace(ctx, WorkSweep, 4*time.Millisecond, nil)
	if len(asked) != 0 {
		t.Errorf("paused after the requests ended (asked %v)", <-asked)
	}

	st := (&Store{pace: p}).BackgroundStats()
	if got, want := st[WorkExtract].Busy, 4*time.Millisecond+time.Second+4*time.Millisecond+4*time.Millisecond; got != want {
		t.Errorf("extract busy %v, want %v", got, want)
	}
	if st[WorkExtract].Pauses != 2 || st[WorkSweep].Pauses != 0 || st[WorkSweep].Busy != 4*time.Millisecond {
		t.Errorf("stats %+v", st)
	}
	if st[WorkSnapshot].Work.String() != "snapshot" {
		t.Errorf("work %d is %q", WorkSnapshot, st[WorkSnapshot].Work)
	}
}

func TestPacerBackgroundIsNoRequest(t *testing.T) {
	p := &pacer{share: 0.25}
	ctx := backgroundContext(context.Background())
	if p.begin(ctx) {
		t.Fatal("background work counted as a request")
	}
	p.end(false)
	if p.active.Load() != 0 || p.lastEnd.Load() != 0 {
		t.Fatalf("active %d, last end %d", p.active.Load(), p.lastEnd.Load())
	}
}

// TestPacerPauseEnds checks that a pause ends when a caller hurries the
// work or its context ends, not only when the timer fires.
func TestPacerPauseEnds(t *testing.T) {
	for _, how := range []string{"hurry", "cancel"} {
		p := &pacer{share: 0.25}
		asked := timerAsks(p, nil) // the timer never fires
		p.begin(context.Background())
		ctx, cancel := context.WithCancel(context.Background())
		hurry := make(chan struct{}, 1)
		done := make(chan struct{})
		go func() {
			defer close(done)
			p.pace(ctx, WorkExtract, time.Second, hurry)
		}()
		<-asked
		if how == "hurry" {
			hurry <- struct{}{}
		} else {
			cancel()
		}
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s did not end the pause", how)
		}
		cancel()
		if st := (&Store{pace: p}).BackgroundStats()[WorkExtract]; st.Pauses != 1 {
			t.Errorf("%s: %d pauses", how, st.Pauses)
		}
	}
}

// TestExtractionStandsAside checks the worker under load: it stands aside
// after each batch while a request is in flight, and runs on without
// pausing once the requests end.
func TestExtractionStandsAside(t *testing.T) {
	x := &fakeExtractor{}
	s := openMem(t, &Options{Extractor: x})
	release := make(chan struct{})
	asked := timerAsks(s.pace, release)
	ctx := context.Background()
	sess := s.Session(Scope{Tenant: "t", User: "u", Session: "s"})
	msgs := make([]Message, 2*extractBatch+1)
	for i := range msgs {
		msgs[i] = user(fmt.Sprintf("message number %d", i))
	}

	s.pace.begin(ctx) // a request in flight
	mustAppend(t, sess, msgs...)
	select {
	case <-asked:
	case <-time.After(20 * time.Second):
		t.Fatal("the worker did not stand aside under load")
	}
	// Paused after its first batch: no more jobs run until released.
	if n := x.calls.Load(); n != extractBatch {
		t.Errorf("%d jobs ran before the pause ended, want %d", n, extractBatch)
	}
	s.pace.end(true)
	s.pace.lastEnd.Store(0) // the requests ended long ago
	close(release)
	for x.calls.Load() < int64(len(msgs)) {
		select {
		case <-s.worker.progressed():
		case <-time.After(20 * time.Second):
			t.Fatalf("%d of %d jobs ran", x.calls.Load(), len(msgs))
		}
	}
	if len(asked) != 0 {
		t.Errorf("the worker paused again with no request in flight (%v)", <-asked)
	}
}

// TestFlushUnderLoad checks that Flush is never kept waiting by the
// worker's pauses: it waits for the work, so the work does not stand
// aside for anyone while it does.
func TestFlushUnderLoad(t *testing.T) {
	s := openMem(t, &Options{Extractor: &fakeExtractor{}})
	timerAsks(s.pace, nil) // a pause would never end by itself
	ctx := context.Background()
	s.pace.begin(ctx)
	defer s.pace.end(true)
	sess := s.Session(Scope{Tenant: "t", User: "u", Session: "s"})
	msgs := make([]Message, 3*extractBatch)
	for i := range msgs {
		msgs[i] = user(fmt.Sprintf("message number %d", i))
	}
	mustAppend(t, sess, msgs...)
	fctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	if err := s.Flush(fctx); err != nil {
		t.Fatalf("Flush under load: %v", err)
	}
}
