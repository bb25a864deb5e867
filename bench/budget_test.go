package bench

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestRunBudgetTiny is the budget run at a scale for the test suite: the
// partitions stay within the budget while users keep coming, and cold
// Recalls (of evicted users) are timed against warm ones.
func TestRunBudgetTiny(t *testing.T) {
	const budget = 256 << 10
	r, err := RunBudget(context.Background(), BudgetOptions{Dir: t.TempDir(), Users: 400, MemoriesPerUser: 2,
		PartitionCacheBytes: budget, Samples: 40, Checkpoints: []int{100, 400}, Quiet: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.Points) != 2 || r.Points[1].Users != 400 {
		t.Fatalf("checkpoints %+v", r.Points)
	}
	last := r.Points[1].Cache
	if last.Evictions == 0 || last.Bytes > budget || last.Budget != budget {
		t.Fatalf("cache after 400 users: %+v, want evictions and at most %d bytes", last, budget)
	}
	if r.Samples == 0 || r.ColdP50 <= 0 || r.WarmP50 <= 0 {
		t.Fatalf("no cold Recall timed: %+v", r)
	}
	if p := r.Points[1]; runtime.GOOS == "linux" && (p.RSS <= 0 || p.PeakRSS < p.RSS || p.RSSAnon <= 0 || p.Live <= 0 || p.Unused < 0 || p.GCShare <= 0 || p.GCShare >= 1) {
		t.Fatalf("memory reading %+v: want RSS, its peak at least as high, anon, live heap and the collector's share of the CPU", p)
	}
	t.Logf("cache %+v; cold p50 %v p99 %v, warm p50 %v p99 %v (%d samples)", last, r.ColdP50, r.ColdP99, r.WarmP50, r.WarmP99, r.Samples)
	if _, err := RunBudget(context.Background(), BudgetOptions{}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("no directory: %v, want ErrInvalidOptions", err)
	}
}
