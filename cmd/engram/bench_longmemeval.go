package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/bench"
)

// benchLongMemEvalOptions are bench longmemeval's flags.
type benchLongMemEvalOptions struct {
	conversationFlags
	workers int
	limit   int
}

func newBenchLongMemEvalCmd() *cobra.Command {
	var o benchLongMemEvalOptions
	cmd := &cobra.Command{
		Use:   "longmemeval --data FILE",
		Short: "Score session recall_any@k and NDCG@10 of Recall on LongMemEval",
		Long: `longmemeval ingests the haystack of each question of a LongMemEval file (the
published format: a JSON array, plain or gzip-compressed, such as
longmemeval_s.json) into a fresh in-memory store: one user, one session per
haystack session, every turn a message of its role dated by the session's
haystack_dates entry. Once extraction has drained it asks Recall the
question from a new session of the same user dated question_date, and
ranks the distinct haystack sessions of the items returned, best first.
It reports, per question type and overall ("all"), session recall_any@k
(k = 1, 5, 10: 1 when any answer session is among the first k sessions)
and NDCG@10 (binary relevance, discount 1/log2(rank+1); the ideal ranking
puts every answer session first), averaged over the questions.

Abstention questions (ids ending in _abs: the answer is not in the
history) are skipped, as LongMemEval's own retrieval evaluation does, and
so is a question with no answer session in its haystack.

Modes, --extract, --embedder and --synonyms are those of bench locomo.
Questions run in parallel (--workers, default the number of cores); the
figures do not depend on it. Progress goes to stderr.`,
		Example: `  engram bench longmemeval --data ../shared/data/longmemeval/longmemeval_s_dev.json.gz --mode all
  engram bench longmemeval --data longmemeval_s.json --limit 20 --json lme.json
  engram bench longmemeval --data longmemeval_s.json --embedder static --model-dir ./potion-base-8M`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runBenchLongMemEval(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	o.register(f, "the LongMemEval JSON file (.json or .json.gz)",
		`write the rows as a JSON array ({"mode", "question_type", "metric", "k", "value", "questions"}) to this file`)
	f.IntVar(&o.workers, "workers", runtime.NumCPU(), "questions run at once")
	f.IntVar(&o.limit, "limit", 0, "run only the first N questions (0: all)")
	return cmd
}

func runBenchLongMemEval(ctx context.Context, stdout, stderr io.Writer, o benchLongMemEvalOptions) error {
	modes, open, err := o.setup("bench longmemeval")
	if err != nil {
		return err
	}
	if o.workers < 1 {
		return fmt.Errorf("bench longmemeval: --workers %d is below 1", o.workers)
	}
	if o.limit < 0 {
		return errors.New("bench longmemeval: --limit is negative")
	}
	questions, err := bench.LoadLongMemEval(o.data)
	if err != nil {
		return fmt.Errorf("bench longmemeval: %w", err)
	}
	if o.limit > 0 && o.limit < len(questions) {
		questions = questions[:o.limit]
	}
	rows, err := bench.RunLongMemEval(ctx, questions, bench.LongMemEvalOptions{Modes: modes, Store: open, Workers: o.workers, Progress: stderr})
	if err != nil {
		return fmt.Errorf("bench longmemeval: %w", err)
	}
	return o.report("bench longmemeval", stdout, func(w io.Writer) error { return bench.WriteLongMemEvalTable(w, rows) }, rows)
}
