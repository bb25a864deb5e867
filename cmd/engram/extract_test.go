package main

import (
	"context"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

func TestExtractRetry(t *testing.T) {
	dir, _ := parkedStore(t)
	out := mustRun(t, "extract", "retry", "--dir", dir)
	if !strings.Contains(out, "queued 1 parked extraction job again") {
		t.Errorf("extract retry: %s", out)
	}
	// The job waits in the queue: the command extracted nothing.
	out = mustRun(t, "inspect", "--dir", dir)
	if !strings.Contains(out, "1 pending (0 retrying), 0 parked") {
		t.Errorf("inspect after retry:\n%s", out)
	}
	out = mustRun(t, "extract", "retry", "--dir", dir)
	if !strings.Contains(out, "queued 0 parked") {
		t.Errorf("second extract retry: %s", out)
	}

	// The next store with a working extractor drains it.
	ctx := context.Background()
	st, err := memory.Open(dir, &memory.Options{SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Flush(ctx); err != nil {
		t.Fatal(err)
	}
	q, err := st.ExtractionQueue(ctx)
	if err != nil || q.Pending != 0 || q.ParkedTotal != 0 {
		t.Errorf("queue after a drain = %+v, %v", q, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}

	wantError(t, []string{"no store in"}, "extract", "retry", "--dir", t.TempDir())
}
