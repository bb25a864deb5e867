package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/memory"
)

type benchExtractOptions struct {
	data       string
	messages   int
	seed       uint64
	rounds     int
	perRound   int
	durability string
	dir        string
	jsonPath   string
}

func newBenchExtractCmd() *cobra.Command {
	var o benchExtractOptions
	cmd := &cobra.Command{
		Use:   "extract [--data FILE]",
		Short: "Measure memory formation: extraction throughput, Append latency with extraction on and off",
		Long: `extract measures the offline extractor and the extraction pipeline on the
turns of a LoCoMo file (--data), or without it on a seeded synthetic support
conversation (--messages, --seed), in three phases:

  1. throughput: the default extractor (memory.RuleExtractor) alone over
     every message, on one core (GOMAXPROCS 1 for the phase), in messages a
     second;
  2. Append latency, p50, p95 and p99, with extraction async against off:
     two stores of the same durability open side by side, appended to in
     --rounds alternating rounds of --appends messages (who goes first
     swaps every round), so that machine noise falls on both alike; the
     async store's worker extracts during the rounds, as in a server;
  3. the pipeline: every message appended to a fresh store with extraction
     async, then Flush: messages a second end to end, on every core.

The stores live in a temporary directory unless --dir names one.`,
		Example: `  engram bench extract
  engram bench extract --data ../shared/data/locomo/locomo-sample.json --json extract.json`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchExtract(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "a LoCoMo JSON file whose turns are the conversation (default: a synthetic one)")
	f.IntVar(&o.messages, "messages", 5000, "messages of the synthetic conversation")
	f.Uint64Var(&o.seed, "seed", 1, "seed of the synthetic conversation")
	f.IntVar(&o.rounds, "rounds", 10, "rounds of the latency phase")
	f.IntVar(&o.perRound, "appends", 100, "appends to each store per round")
	f.StringVar(&o.durability, "durability", "sync", "durability of the stores of the latency and pipeline phases: sync or async")
	f.StringVar(&o.dir, "dir", "", "directory for the stores (default: a temporary one, removed after)")
	f.StringVar(&o.jsonPath, "json", "", "write the report as JSON to this file")
	return cmd
}

func runBenchExtract(ctx context.Context, stdout, stderr io.Writer, o benchExtractOptions) error {
	if o.messages < 1 || o.rounds < 1 || o.perRound < 1 {
		return errors.New("bench extract: --messages, --rounds and --appends must be positive")
	}
	opts := bench.ExtractOptions{Rounds: o.rounds, AppendsPerRound: o.perRound, Dir: o.dir, Progress: stderr}
	switch o.durability {
	case "sync":
		opts.Durability = memory.Sync
	case "async":
		opts.Durability = memory.Async
	default:
		return fmt.Errorf("bench extract: --durability %q is not sync or async", o.durability)
	}
	if o.data != "" {
		samples, err := bench.LoadLocomo(o.data)
		if err != nil {
			return fmt.Errorf("bench extract: %w", err)
		}
		opts.Turns = bench.LocomoTurns(samples)
	} else {
		opts.Turns = bench.SyntheticTurns(o.messages, o.seed)
	}
	rep, err := bench.RunExtract(ctx, opts)
	if err != nil {
		return fmt.Errorf("bench extract: %w", err)
	}
	if err := bench.WriteExtractTable(stdout, rep); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := writeJSONFile(o.jsonPath, rep); err != nil {
			return fmt.Errorf("bench extract: --json: %w", err)
		}
	}
	return nil
}
