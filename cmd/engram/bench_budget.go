package main

import (
	"context"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
)

func newBenchBudgetCmd() *cobra.Command {
	var (
		o        bench.BudgetOptions
		cache    = byteSize(256 << 20)
		memLimit byteSize
	)
	cmd := &cobra.Command{
		Use:   "budget",
		Short: "Touch many users under a partition budget: resident memory, cold and warm Recall",
		Long: `budget writes --memories memories for each of --users users (100,000 and 3
by default) into a store whose loaded indexes are bounded by --partition-cache
(256MiB by default), and reports the process's resident memory (VmRSS from
/proc/self/status; the Go heap from runtime/metrics beside it) after a tenth,
a half and all of the users. Then it times Recall for users of the first half,
whose indexes the budget evicted (cold: the Recall loads them again), and for
each the next Recall at once (warm), and reads the memory once more after
--quiet (20s) without writes. The Go runtime's soft memory limit is serve's:
--memory-limit, by default the partition budget plus 768MiB, unless
$GOMEMLIMIT is set (GOMEMLIMIT=off: none). --dir keeps the store (default: a
temporary directory, removed at the end).`,
		Example: `  engram bench budget
  engram bench budget --users 10000 --partition-cache 64MiB`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.PartitionCacheBytes = int64(cache)
			limit := setMemoryLimit(memLimit, o.PartitionCacheBytes, os.Getenv)
			return runBenchBudget(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o, limit)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.Dir, "dir", "", "store directory (default: a temporary one, removed at the end)")
	f.IntVar(&o.Users, "users", 100000, "users touched")
	f.IntVar(&o.MemoriesPerUser, "memories", 3, "memories per user")
	f.IntVar(&o.Samples, "samples", 500, "cold Recalls timed, each followed by a warm one")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the memories and the sampled users")
	f.DurationVar(&o.Quiet, "quiet", 20*time.Second, "wait after the Recalls before the last reading (Badger frees an idle table builder every 2 s)")
	f.Var(&cache, "partition-cache", "the store's partition budget, such as 256MiB")
	f.Var(&memLimit, "memory-limit", "the Go runtime's soft memory limit, as engram serve sets it (0: the partition budget plus 768MiB; $GOMEMLIMIT, when set, instead)")
	return cmd
}

// runBenchBudget runs the budget benchmark and prints its table; limit is
// the soft memory limit in force, for the last line.
func runBenchBudget(ctx context.Context, stdout, stderr io.Writer, o bench.BudgetOptions, limit int64) error {
	if o.Users < 1 || o.MemoriesPerUser < 1 || o.Samples < 1 || o.Quiet <= 0 {
		return fmt.Errorf("bench budget: --users, --memories, --samples and --quiet must be positive")
	}
	if o.PartitionCacheBytes == 0 {
		return fmt.Errorf("bench budget: --partition-cache must be positive")
	}
	if o.Dir == "" {
		dir, err := os.MkdirTemp("", "engram-bench-budget-")
		if err != nil {
			return fmt.Errorf("bench budget: %w", err)
		}
		defer os.RemoveAll(dir)
		o.Dir = dir
	}
	o.Progress = stderr
	r, err := bench.RunBudget(ctx, o)
	if err != nil {
		return fmt.Errorf("bench budget: %w", err)
	}
	mib := func(n int64) string { return fmt.Sprintf("%.0f MiB", float64(n)/(1<<20)) }
	if _, err := fmt.Fprintf(stdout, "| users | RSS | RSS − budget | peak RSS so far | anon | file | Go runtime | live Go heap | unused in its spans | cache (estimate) | partitions loaded | evictions | hits | misses | GC share of CPU | elapsed |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n"); err != nil {
		return err
	}
	for i, p := range append(r.Points, r.Quiet) {
		users := fmt.Sprint(p.Users)
		if i == len(r.Points) {
			users += " (quiet: after the Recalls and --quiet, garbage returned)"
		}
		_, err := fmt.Fprintf(stdout, "| %s | %s | %s | %s | %s | %s | %s | %s | %s | %s | %d | %d | %d | %d | %.0f%% | %v |\n", users, mib(p.RSS), mib(p.RSS-r.Budget), mib(p.PeakRSS),
			mib(p.RSSAnon), mib(p.RSSFile), mib(p.GoTotal), mib(p.Live), mib(p.Unused), mib(p.Cache.Bytes), p.Cache.Partitions, p.Cache.Evictions, p.Cache.Hits, p.Cache.Misses, 100*p.GCShare, p.Elapsed.Round(time.Second))
		if err != nil {
			return err
		}
	}
	lim := "none"
	if limit < math.MaxInt64 {
		lim = mib(limit)
	}
	_, err = fmt.Fprintf(stdout, "\nbudget %s; soft memory limit %s; Recall of an evicted user (cold, %d samples): p50 %v, p99 %v; the same user at once (warm): p50 %v, p99 %v\n",
		mib(r.Budget), lim, r.Samples, r.ColdP50, r.ColdP99, r.WarmP50, r.WarmP99)
	return err
}
