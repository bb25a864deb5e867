package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/memory"
)

type benchLocomoOptions struct {
	data         string
	modes        string
	jsonPath     string
	vectorWeight float64
	extract      string
	embed        openFlags
}

func newBenchLocomoCmd() *cobra.Command {
	var o benchLocomoOptions
	cmd := &cobra.Command{
		Use:   "locomo --data FILE",
		Short: "Score evidence recall@k of Recall on the LoCoMo conversations",
		Long: `locomo ingests each conversation of a LoCoMo file (the published locomo10.json
format) into a fresh in-memory store, every session with its date, and asks
Recall each question of categories 1-4 from a new session of the same user.
It reports evidence recall@k (k = 1, 5, 10, 25): the share of a question's
evidence turns among the top k earlier messages Recall ranks, averaged over
the questions, per category and overall ("all").

Modes: default (Recall's defaults with earlier messages turned on: memories,
episodes and the graph, vector and BM25 fused), bm25, vector and hybrid
(earlier messages only, by BM25, by vector, or both), graph (earlier
messages and the graph). Ingestion goes through the extraction pipeline
(the offline rule extractor), and Recall is asked once it has drained, so
the default and graph modes draw on the memories and facts extracted from
the conversation; --extract off ingests the messages alone, to compare. The
embedder is the offline default unless --embedder names another (static
with --model NAME for a model pulled by engram model pull NAME, or
--model-dir for a Model2Vec folder; or a network provider);
--synonyms on expands the BM25 queries with WordNet synonyms
(memory.Options.Synonyms).`,
		Example: `  engram bench locomo --data ../shared/data/locomo/locomo-sample.json
  engram bench locomo --data locomo10.json --mode default,bm25,vector --json locomo.json
  engram bench locomo --data locomo10.json --embedder static --model potion-base-8M`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchLocomo(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.data, "data", "", "the LoCoMo JSON file")
	f.StringVar(&o.modes, "mode", "default", "comma-separated modes: "+strings.Join(bench.LocomoModes, ", ")+", or all")
	f.Float64Var(&o.vectorWeight, "vector-weight", 0, "memory.Options.VectorWeight: the weight of vector search in hybrid fusion (0: the default, none with the offline embedder)")
	f.StringVar(&o.extract, "extract", "async", "extraction while ingesting: async (the default pipeline, drained before the questions), sync or off (messages only)")
	o.embed.registerEmbedder(f)
	f.StringVar(&o.jsonPath, "json", "", `write the rows as a JSON array ({"mode", "category", "k", "recall", "questions"}) to this file`)
	return cmd
}

func runBenchLocomo(ctx context.Context, stdout, stderr io.Writer, o benchLocomoOptions) error {
	if o.data == "" {
		return errors.New("bench locomo: --data FILE is required")
	}
	var modes []string
	for _, m := range strings.Split(o.modes, ",") {
		switch m = strings.TrimSpace(m); {
		case m == "all":
			modes = append(modes, bench.LocomoModes...)
		case slices.Contains(bench.LocomoModes, m):
			modes = append(modes, m)
		case m != "":
			return fmt.Errorf("bench locomo: unknown --mode %q (have %s, all)", m, strings.Join(bench.LocomoModes, ", "))
		}
	}
	if len(modes) == 0 {
		return errors.New("bench locomo: --mode names no mode")
	}
	mode, err := parseExtractMode(o.extract)
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	synonyms, err := o.embed.synonymsOn()
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	// One embedder for every conversation's store: a static model is
	// loaded once.
	embedder, err := o.embed.newEmbedder()
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	samples, err := bench.LoadLocomo(o.data)
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	rows, err := bench.RunLocomo(ctx, samples, bench.LocomoOptions{
		Modes:    modes,
		Progress: stderr,
		Store: func() (*memory.Store, error) {
			return memory.Open("", &memory.Options{VectorWeight: o.vectorWeight, SweepInterval: -1, Extraction: mode, Embedder: embedder, Synonyms: synonyms})
		},
	})
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	if err := bench.WriteLocomoTable(stdout, rows); err != nil {
		return err
	}
	if o.jsonPath != "" {
		err := fileio.WriteAtomic(o.jsonPath, func(w io.Writer) error {
			enc := json.NewEncoder(w)
			enc.SetIndent("", "  ")
			return enc.Encode(rows)
		})
		if err != nil {
			return fmt.Errorf("bench locomo: --json: %w", err)
		}
	}
	return nil
}
