package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
)

func newBenchRecallCmd() *cobra.Command {
	var (
		o          bench.RecallOptions
		cpuProfile string
		blockCache byteSize
	)
	cmd := &cobra.Command{
		Use:   "recall",
		Short: "Time Recall on a synthetic store of memories and facts",
		Long: `recall builds a synthetic store (by default 1,000 users with 100 memories and
1,000 power-law graph facts each: 100,000 memories and 1,000,000 facts) and
times Recall with its default sources for random users, reporting p50 and
p99 with the query's embedding excluded and included, and the heap
allocations per Recall. Queries name an entity of the user's graph, the
predicate of one of its facts and a word of the memories' vocabulary. The
peer, timed in the same loop, is one BM25 search of the user's memories.
The embedder is the offline default. --dir keeps the store on disk
(default: in memory); --users, --memories and --facts scale it down;
--reuse with --dir times the store an earlier run of the same shape wrote
there, with the same queries.`,
		Example: `  engram bench recall
  engram bench recall --users 100 --queries 500`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) (err error) {
			if cpuProfile != "" {
				stop, err := startCPUProfile(cpuProfile)
				if err != nil {
					return fmt.Errorf("bench recall: %w", err)
				}
				defer func() { err = errors.Join(err, stop()) }()
			}
			o.BlockCacheBytes = int64(blockCache)
			return runBenchRecall(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.Var(&blockCache, "block-cache", "the store's and the peer's Badger block cache, such as 256MiB (memory.Options.BlockCacheBytes; 0: the default, 8MiB)")
	f.StringVar(&o.Dir, "dir", "", "store directory (default: in memory)")
	f.IntVar(&o.Users, "users", 1000, "users")
	f.IntVar(&o.MemoriesPerUser, "memories", 100, "memories per user")
	f.IntVar(&o.FactsPerUser, "facts", 1000, "graph facts per user")
	f.IntVar(&o.Queries, "queries", 2000, "timed Recalls")
	f.Uint64Var(&o.Seed, "seed", 1, "seed of the store and the queries")
	f.BoolVar(&o.Reuse, "reuse", false, "with --dir: reuse the store a run of the same shape and seed wrote there instead of writing it again")
	f.StringVar(&cpuProfile, "cpuprofile", "", "write a CPU profile of the whole command to this file (pprof -focus 'Store..Recall' for the timed Recalls)")
	f.Float64Var(&o.VectorWeight, "vector-weight", 0, "memory.Options.VectorWeight (0: the default, no vector search with the offline embedder; 1 embeds every query)")
	return cmd
}

func runBenchRecall(ctx context.Context, stdout, stderr io.Writer, o bench.RecallOptions) error {
	if o.Users < 1 || o.MemoriesPerUser < 0 || o.FactsPerUser < 0 || o.Queries < 1 {
		return fmt.Errorf("bench recall: --users and --queries must be positive, --memories and --facts not negative")
	}
	o.Progress = stderr
	r, err := bench.RunRecall(ctx, o)
	if err != nil {
		return fmt.Errorf("bench recall: %w", err)
	}
	_, err = fmt.Fprintf(stdout, `| store | build | queries | Recall p50 | Recall p99 | with embedding p50 | with embedding p99 | peer: one BM25 search p50 | p99 | Recall p50 / peer p50 | items (facts) | allocs/Recall | bytes/Recall |
|---|---|---|---|---|---|---|---|---|---|---|---|---|
| %d users, %d memories, %d facts | %v | %d | %v | %v | %v | %v | %v | %v | %.2f× | %.1f (%.1f) | %.0f | %.0f |
`, r.Users, r.Memories, r.Facts, r.Build.Round(1e9), r.Queries, r.ExcludedP50, r.ExcludedP99, r.IncludedP50, r.IncludedP99, r.PeerP50, r.PeerP99,
		float64(r.ExcludedP50)/float64(max(r.PeerP50, 1)), r.Items, r.FactItems, r.AllocsPerRecall, r.BytesPerRecall)
	return err
}
