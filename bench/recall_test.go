package bench

import (
	"context"
	"os"
	"path/filepath"
	"strings"
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

// TestRunRecallReuse: runs with Reuse on a directory that a run of the
// same shape wrote time the same queries on the same store (the same
// items and facts per Recall, run after run); a different shape is
// written anew. (A reopened store is compared with a reopened store: the
// run that wrote it may rank ties otherwise, from indexes built as it
// wrote.)
func TestRunRecallReuse(t *testing.T) {
	dir := filepath.Join(t.TempDir(), "store")
	o := RecallOptions{Dir: dir, Users: 2, MemoriesPerUser: 30, FactsPerUser: 200, Queries: 30, Seed: 3}
	first, err := RunRecall(context.Background(), o)
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dir + ".recall-bench"); err != nil || !strings.Contains(string(b), "seed=3") {
		t.Fatalf("marker after the first run: %q, %v", b, err)
	}
	o.Reuse = true
	var runs [2]RecallResult
	for i := range runs {
		if runs[i], err = RunRecall(context.Background(), o); err != nil {
			t.Fatal(err)
		}
	}
	if a, b := runs[0], runs[1]; a.Items != b.Items || a.FactItems != b.FactItems || a.Memories != first.Memories || a.Facts != first.Facts {
		t.Errorf("reused runs: %+v and %+v; first run %+v", a, b, first)
	}
	o.Seed = 4 // another shape: written, and the marker says so
	if _, err := RunRecall(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(dir + ".recall-bench"); err != nil || !strings.Contains(string(b), "seed=4") {
		t.Fatalf("marker after a run of another seed: %q, %v", b, err)
	}
}
