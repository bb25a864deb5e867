package engine

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestCloseBoundsStalledCompaction: the compaction Close runs for a
// pending erasure must end at a deadline when the store's compaction
// stalls (issue 26: Badger's value-log GC spun for ever, and serve's
// shutdown never finished). The erasure stays marked for the next Open.
func TestCloseBoundsStalledCompaction(t *testing.T) {
	kvtest.SkipOnPostgres(t, "the erasure mark of a store with files")
	dir := t.TempDir()
	db := openDisk(t, dir, &Options{CompactDelay: time.Hour})
	writeAndErase(t, db, []byte("engine-secret-stalled"))
	started := make(chan struct{}, 1)
	db.compactKV = func(ctx context.Context) error {
		started <- struct{}{}
		<-ctx.Done() // a stalled compaction, that gives up at ctx's end
		return ctx.Err()
	}
	db.closeWork = 200 * time.Millisecond
	closed := make(chan error, 1)
	go func() { closed <- db.Close() }()
	select {
	case err := <-closed:
		if err != nil {
			t.Fatalf("Close = %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Close did not return within 15 s with a stalled compaction")
	}
	select {
	case <-started:
	default:
		t.Fatal("Close ran no compaction: the test proves nothing")
	}
	db = openDisk(t, dir, &Options{CompactDelay: -1})
	defer db.Close()
	if s := db.Stats(); !s.CompactPending {
		t.Errorf("the erasure is not pending after a compaction cut short: %+v", s)
	}
}

// TestBackgroundCompactionHasDeadline: the background compactor gives
// each compaction a deadline, so a stalled one cannot keep it (and every
// later erasure) waiting for ever.
func TestBackgroundCompactionHasDeadline(t *testing.T) {
	kvtest.SkipOnPostgres(t, "the background compactor of a store with files")
	db := openDisk(t, t.TempDir(), &Options{CompactDelay: 10 * time.Millisecond})
	defer db.Close()
	got := make(chan bool, 1)
	db.compactKV = func(ctx context.Context) error {
		_, ok := ctx.Deadline()
		select {
		case got <- ok:
		default:
		}
		return errors.New("stand-in")
	}
	db.ScheduleCompact()
	select {
	case ok := <-got:
		if !ok {
			t.Error("the background compaction's context has no deadline")
		}
	case <-time.After(15 * time.Second):
		t.Fatal("no background compaction within 15 s")
	}
}
