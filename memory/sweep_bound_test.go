package memory

import (
	"context"
	"testing"
	"time"
)

// TestSweepRoundHasDeadline: each background sweep round runs under a
// deadline, so a store that stalls (issue 26) cannot hold the sweeper for
// ever, and Close stops a round in progress.
func TestSweepRoundHasDeadline(t *testing.T) {
	s, err := Open(t.TempDir(), &Options{SweepInterval: 20 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	mustRemember(t, s, alice, Memory{Text: "Alice's gate code is 9876", ExpiresAt: time.Now().Add(time.Hour)})
	deadline := make(chan bool, 1)
	s.sweep.mu.Lock()
	s.sweep.sweepOne = func(ctx context.Context, _ Scope) (int, error) {
		_, ok := ctx.Deadline()
		select {
		case deadline <- ok:
		default:
		}
		<-ctx.Done() // a stalled sweep, that gives up at ctx's end
		return 0, ctx.Err()
	}
	s.sweep.mu.Unlock()
	select {
	case ok := <-deadline:
		if !ok {
			t.Error("the sweep round's context has no deadline")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no sweep within 15 s")
	}
	closed := make(chan error, 1)
	go func() { closed <- s.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not stop a stalled sweep within 15 s")
	}
}
