package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
)

func newBenchLocomoCmd() *cobra.Command {
	var o conversationFlags
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
	o.register(cmd.Flags(), "the LoCoMo JSON file",
		`write the rows as a JSON array ({"mode", "category", "k", "recall", "questions"}) to this file`)
	return cmd
}

func runBenchLocomo(ctx context.Context, stdout, stderr io.Writer, o conversationFlags) error {
	modes, open, err := o.setup("bench locomo")
	if err != nil {
		return err
	}
	samples, err := bench.LoadLocomo(o.data)
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	rows, err := bench.RunLocomo(ctx, samples, bench.LocomoOptions{Modes: modes, Progress: stderr, Store: open})
	if err != nil {
		return fmt.Errorf("bench locomo: %w", err)
	}
	return o.report("bench locomo", stdout, func(w io.Writer) error { return bench.WriteLocomoTable(w, rows) }, rows)
}
