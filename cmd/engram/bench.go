package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
)

type benchANNOptions struct {
	data      string
	synthetic string
	k         int
	jsonPath  string
	systems   string
	queries   int
}

func newBenchCmd() *cobra.Command {
	cmd := &cobra.Command{
		Use:   "bench",
		Short: "Benchmark Engram against its peers",
		Args:  cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return cmd.Help()
		},
	}
	cmd.AddCommand(newBenchANNCmd(), newBenchLocomoCmd(), newBenchLongMemEvalCmd(), newBenchRecallCmd(), newBenchLoadCmd(), newBenchExtractCmd(), newBenchBudgetCmd(), newBenchGraphMCPCmd())
	return cmd
}

func newBenchANNCmd() *cobra.Command {
	var o benchANNOptions
	cmd := &cobra.Command{
		Use:   "ann (--data DIR | --synthetic SPEC)",
		Short: "Measure recall@k, single-thread QPS, build time and memory of vector indexes",
		Long: `ann measures nearest-neighbour search by cosine similarity on one data set, for
every system in the same run: engram-flat and engram-hnsw (Engram's exact and
graph indexes), chromem-go (exact) and hnswlib (through Debian's
python3-hnswlib; skipped with a message when it is absent: apt-get install
python3-hnswlib python3-numpy).

HNSW systems are built with M=16 and efConstruction=200 and swept over ef;
exact systems run once, chromem-go on at most 100 queries. Builds and queries
run on one thread; engram-hnsw is also built on every core. Progress goes to
stderr, the table to stdout.

--data DIR reads NAME_base.fvecs, NAME_query.fvecs and, if present,
NAME_groundtruth_cosine.ivecs (TEXMEX format); without the last the exact
ground truth is computed. --synthetic SPEC generates a seeded, normalised
Gaussian mixture, for example n=100000,dim=384,clusters=1000,seed=1
(optional keys: queries, default 1000; sigma, default 1).

coder-hnsw (github.com/coder/hnsw v0.6.1) and the PNG plot of recall against
QPS (--plot) are in the nested module bench/peers, so that their
dependencies stay out of Engram's: from a checkout, cd bench/peers and
go run . with the same flags.`,
		Example: `  engram bench ann --data ../shared/data/siftsmall --json sift.json
  engram bench ann --synthetic n=100000,dim=384,clusters=1000,seed=1 --k 10`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchANN(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "directory holding NAME_base.fvecs and NAME_query.fvecs")
	f.StringVar(&o.synthetic, "synthetic", "", "generate a Gaussian mixture: n=,dim=,clusters=,seed=[,queries=][,sigma=]")
	f.IntVar(&o.k, "k", 10, "neighbours per query; recall is measured at k")
	f.StringVar(&o.jsonPath, "json", "", "write the rows as a JSON array to this file")
	f.StringVar(&o.systems, "systems", strings.Join(bench.SystemNames(), ","), "comma-separated systems to measure")
	f.IntVar(&o.queries, "queries", 0, "use at most this many queries (0: all)")
	return cmd
}

func runBenchANN(ctx context.Context, stdout, stderr io.Writer, o benchANNOptions) error {
	if (o.data == "") == (o.synthetic == "") {
		return errors.New("bench ann: give exactly one of --data DIR and --synthetic SPEC")
	}
	if o.k < 1 {
		return fmt.Errorf("bench ann: --k %d must be at least 1", o.k)
	}
	if o.queries < 0 {
		return fmt.Errorf("bench ann: --queries %d must not be negative", o.queries)
	}
	var systems []string
	for _, s := range strings.Split(o.systems, ",") {
		if s = strings.TrimSpace(s); s != "" {
			systems = append(systems, s)
		}
	}
	if len(systems) == 0 {
		return errors.New("bench ann: --systems names no system")
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	var ds *bench.Dataset
	var err error
	if o.data != "" {
		log.Info("loading", "dir", o.data)
		ds, err = bench.LoadDir(ctx, o.data)
	} else {
		log.Info("generating", "spec", o.synthetic)
		ds, err = bench.Synthetic(ctx, o.synthetic)
	}
	if err != nil {
		return fmt.Errorf("bench ann: %w", err)
	}
	rep, err := bench.Run(ctx, ds, &bench.Options{
		K: o.k, Systems: systems, MaxQueries: o.queries, Logger: log,
	})
	if err != nil {
		return fmt.Errorf("bench ann: %w", err)
	}
	if err := bench.WriteTable(stdout, rep); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := fileio.WriteAtomic(o.jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, rep.Rows) }); err != nil {
			return fmt.Errorf("bench ann: --json: %w", err)
		}
	}
	return nil
}
