package bench

import (
	"context"
	"errors"
	"os"
	"testing"
	"time"
)

func TestProbeFsync(t *testing.T) {
	dir := t.TempDir()
	for _, writers := range []int{1, 3} {
		r, err := ProbeFsync(context.Background(), dir, writers, 50*time.Millisecond)
		if err != nil {
			t.Fatal(err)
		}
		if r.Writers != writers || r.Fsyncs < writers || r.Elapsed < 50*time.Millisecond || r.PerSecond <= 0 ||
			r.P50 <= 0 || r.P99 < r.P50 {
			t.Errorf("%d writers: %+v", writers, r)
		}
	}
	if entries, err := os.ReadDir(dir); err != nil || len(entries) != 0 {
		t.Errorf("the probe left %v (%v)", entries, err)
	}
	for _, tc := range []struct {
		writers int
		d       time.Duration
	}{{0, time.Second}, {1, 0}} {
		if _, err := ProbeFsync(context.Background(), dir, tc.writers, tc.d); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("ProbeFsync(%d, %v) = %v", tc.writers, tc.d, err)
		}
	}
	if _, err := ProbeFsync(context.Background(), dir+"/missing", 1, time.Millisecond); err == nil {
		t.Error("a probe in a missing directory succeeded")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := ProbeFsync(ctx, dir, 2, time.Minute); !errors.Is(err, context.Canceled) {
		t.Errorf("canceled probe = %v", err)
	}
}
