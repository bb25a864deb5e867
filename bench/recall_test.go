package bench

import (
	"context"
	"testing"
)

// TestRunRecallReachesFacts checks that the synthetic queries of RunRecall
// bring graph facts into the context, as they did before Recall began to
// rank facts by the query's terms (issue 13): with predicates that share
// no word with any query, every fact fell to the tenth-weight list and
// the benchmark timed a Recall that returned memories only.
func TestRunRecallReachesFacts(t *testing.T) {
	r, err := RunRecall(context.Background(), RecallOptions{Users: 2, MemoriesPerUser: 100, FactsPerUser: 1000, Queries: 40, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Items == 0 || r.FactItems < 1 {
		t.Errorf("mean items %.1f, facts among them %.1f: want at least one fact per Recall", r.Items, r.FactItems)
	}
	if r.AllocsPerRecall <= 0 || r.BytesPerRecall <= 0 {
		t.Errorf("allocations per Recall %.0f (%.0f bytes): not measured", r.AllocsPerRecall, r.BytesPerRecall)
	}
}
