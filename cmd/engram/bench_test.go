package main

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/bench"
	"github.com/engramdb/engram/embed/embedtest"
)

// benchRowKeys is the JSON schema of a row, exactly.
var benchRowKeys = []string{"build_seconds", "bytes_per_vector", "dataset", "dim", "k", "n", "params", "qps", "recall_at_k", "system"}

// readRows decodes a bench ann --json file and checks every row has
// exactly the schema's keys.
func readRows(t *testing.T, path string) []map[string]any {
	t.Helper()
	return readRowsKeys(t, path, benchRowKeys)
}

// readRowsKeys decodes a --json file and checks every row has exactly
// the keys of schema (sorted).
func readRowsKeys(t *testing.T, path string, schema []string) []map[string]any {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
	for i, r := range rows {
		var keys []string
		for k := range r {
			keys = append(keys, k)
		}
		slices.Sort(keys)
		if !slices.Equal(keys, schema) {
			t.Errorf("row %d keys %v, want %v", i, keys, schema)
		}
	}
	return rows
}

func TestBenchANNSynthetic(t *testing.T) {
	dir := t.TempDir()
	jsonPath := filepath.Join(dir, "rows.json")
	// Four indexes (coder-hnsw's too, before it moved to bench/peers) built
	// under -race took half a minute at 2,000 vectors; .ci/run runs the
	// full size without -race.
	n := 2000
	if raceEnabled {
		n = 400
	}
	spec := fmt.Sprintf("n=%d,dim=32,clusters=20,seed=1,queries=50", n)
	out, err := runCLI(t, "bench", "ann", "--synthetic", spec,
		"--k", "10", "--json", jsonPath)
	if err != nil {
		t.Fatalf("bench ann: %v\n%s", err, out)
	}
	rows := readRows(t, jsonPath)
	systems := map[string]bool{}
	for _, r := range rows {
		systems[r["system"].(string)] = true
		if r["n"].(float64) != float64(n) || r["dim"].(float64) != 32 || r["k"].(float64) != 10 ||
			r["dataset"] != "synthetic:"+spec+",sigma=1" {
			t.Errorf("row %v", r)
		}
		if r["qps"].(float64) <= 0 || r["bytes_per_vector"].(float64) <= 0 {
			t.Errorf("row %v", r)
		}
	}
	for _, want := range []string{"engram-flat", "engram-hnsw", "chromem-go"} {
		if !systems[want] {
			t.Errorf("no rows for %s", want)
		}
	}
	if !systems["hnswlib"] && !strings.Contains(out, "skipped hnswlib") {
		t.Errorf("hnswlib neither measured nor reported skipped:\n%s", out)
	}
	for _, want := range []string{"recall@10", "engram-hnsw", "M=16,efc=200,ef=64", "level=INFO msg=built system=engram-flat"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestBenchANNData(t *testing.T) {
	dir := t.TempDir()
	rng := rand.New(rand.NewPCG(1, 1))
	vecs := func(n int) [][]float32 {
		out := make([][]float32, n)
		for i := range out {
			out[i] = make([]float32, 8)
			for j := range out[i] {
				out[i][j] = float32(rng.NormFloat64())
			}
		}
		return out
	}
	for name, v := range map[string][][]float32{"toy_base.fvecs": vecs(300), "toy_query.fvecs": vecs(12)} {
		f, err := os.Create(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := bench.WriteFvecs(f, v); err != nil {
			t.Fatal(err)
		}
		if err := f.Close(); err != nil {
			t.Fatal(err)
		}
	}
	jsonPath := filepath.Join(t.TempDir(), "rows.json")
	out, err := runCLI(t, "bench", "ann", "--data", dir, "--k", "5", "--systems", "engram-flat, chromem-go",
		"--queries", "10", "--json", jsonPath)
	if err != nil {
		t.Fatalf("bench ann --data: %v\n%s", err, out)
	}
	rows := readRows(t, jsonPath)
	if len(rows) != 2 || rows[0]["system"] != "engram-flat" || rows[1]["system"] != "chromem-go" {
		t.Fatalf("rows %v", rows)
	}
	for _, r := range rows {
		if r["dataset"] != "toy" || r["recall_at_k"].(float64) != 1 || r["k"].(float64) != 5 {
			t.Errorf("row %v", r)
		}
	}
	if !strings.Contains(out, "toy: n=300 dim=8 k=5 queries=10") {
		t.Errorf("table header missing:\n%s", out)
	}
}

func TestBenchANNBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", []string{"bench", "ann"}, "exactly one of --data"},
		{"both sources", []string{"bench", "ann", "--data", dir, "--synthetic", "n=10"}, "exactly one of --data"},
		{"bad spec", []string{"bench", "ann", "--synthetic", "n=abc"}, "invalid synthetic spec"},
		{"k zero", []string{"bench", "ann", "--synthetic", "n=100,clusters=2,dim=4", "--k", "0"}, "--k 0"},
		{"negative queries", []string{"bench", "ann", "--synthetic", "n=100,clusters=2,dim=4", "--queries", "-1"}, "--queries -1"},
		{"unknown system", []string{"bench", "ann", "--synthetic", "n=100,clusters=2,dim=4", "--systems", "faiss"}, `unknown system: "faiss"`},
		{"no systems", []string{"bench", "ann", "--synthetic", "n=100,clusters=2,dim=4", "--systems", " , "}, "names no system"},
		{"empty data dir", []string{"bench", "ann", "--data", dir}, "no dataset"},
		{"k not a number", []string{"bench", "ann", "--k", "x"}, "invalid argument"},
		{"extra argument", []string{"bench", "ann", "extra"}, "unknown command"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			out, err := runCLI(t, tc.args...)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, out)
			}
		})
	}
	if out, err := runCLI(t, "bench"); err != nil || !strings.Contains(out, "ann") {
		t.Fatalf("bench without a subcommand: %v\n%s", err, out)
	}
}

// sharedData returns the path of a file of the shared benchmark data: under
// $ENGRAM_SHARED_DATA when set (a git worktree elsewhere has no
// ../shared), else ../shared/data next to the repository.
func sharedData(rel string) string {
	if dir := os.Getenv("ENGRAM_SHARED_DATA"); dir != "" {
		return filepath.Join(dir, rel)
	}
	return filepath.Join("../../../shared/data", rel)
}

// locomoRecallFloor guards the sample's recall@10 in mode default: it
// measured 0.734 over 150 questions, and the run is deterministic (the
// offline hashing embedder, BM25). One question moves it by about 0.007, so
// the floor leaves two questions for a tie broken the other way, and a
// regression of two points fails (BM25's k1 at 3.0 instead of 1.2 gives
// 0.717).
const locomoRecallFloor = 0.72

func TestBenchLocomo(t *testing.T) {
	data := sharedData("locomo/locomo-sample.json")
	if _, err := os.Stat(data); err != nil {
		t.Skipf("LoCoMo sample not found at %s (see ../shared/data/README.md; ENGRAM_SHARED_DATA names another directory): %v", data, err)
	}
	jsonPath := filepath.Join(t.TempDir(), "locomo.json")
	out, err := runCLI(t, "bench", "locomo", "--data", data, "--mode", "bm25,default", "--json", jsonPath)
	if err != nil {
		t.Fatalf("bench locomo: %v\n%s", err, out)
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []bench.LocomoRow
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatal(err)
	}
	// 2 modes × (4 categories + all) × 4 cut-offs.
	if len(rows) != 2*5*4 {
		t.Fatalf("%d rows:\n%s", len(rows), out)
	}
	for _, r := range rows {
		if r.Recall < 0 || r.Recall > 1 || r.Questions == 0 {
			t.Errorf("row %+v", r)
		}
		if r.Category == "all" && r.K == 25 && r.Recall < 0.3 {
			t.Errorf("%s recall@25 %.3f is implausibly low", r.Mode, r.Recall)
		}
		if r.Category == "all" && r.K == 10 {
			t.Logf("%s recall@10 %.3f over %d questions", r.Mode, r.Recall, r.Questions)
			if r.Mode == "default" && r.Recall < locomoRecallFloor {
				t.Errorf("default recall@10 %.3f is below %.2f (measured 0.731 with memory formation): retrieval quality regressed", r.Recall, locomoRecallFloor)
			}
		}
	}
	if !strings.Contains(out, "| bm25 | all | 150 |") {
		t.Errorf("table:\n%s", out)
	}
	if _, err := runCLI(t, "bench", "locomo", "--data", data, "--mode", "psychic"); err == nil {
		t.Error("an unknown mode should fail")
	}
	if _, err := runCLI(t, "bench", "locomo"); err == nil {
		t.Error("no --data should fail")
	}
	if _, err := runCLI(t, "bench", "locomo", "--data", data, "--extract", "later"); err == nil || !strings.Contains(err.Error(), "--extract") {
		t.Errorf("an unknown --extract: %v", err)
	}
}

func TestBenchRecallSmall(t *testing.T) {
	out, err := runCLI(t, "bench", "recall", "--users", "3", "--memories", "20", "--facts", "200", "--queries", "30")
	if err != nil {
		t.Fatalf("bench recall: %v\n%s", err, out)
	}
	if !strings.Contains(out, "| 3 users, 60 memories, 600 facts |") || !strings.Contains(out, "peer: one BM25 search") {
		t.Fatalf("table:\n%s", out)
	}
	if _, err := runCLI(t, "bench", "recall", "--users", "0"); err == nil {
		t.Error("--users 0 should fail")
	}
}

// TestBenchLocomoStatic: bench locomo runs with a local static model
// (--embedder static --model-dir), on a two-turn conversation in the
// LoCoMo format and a model the test writes, so it needs no shared data.
// The vector mode finds the evidence turn by a word it does not contain
// (the lexical default ranks the other turn first: it shares "Caroline",
// "did" and "buy" with the question).
func TestBenchLocomoStatic(t *testing.T) {
	model := filepath.Join(t.TempDir(), "model")
	m := embedtest.StaticModel{Dims: 4, Vocab: []string{"[UNK]", "car", "automobile", "piano", "lessons", "buy", "a", "i", "what", "did", "caroline"}}
	m.Rows = [][]float32{{0, 0, 0, 0}, {1, 0, 0, 0}, {1, 0, 0, 0}, {0, 1, 0, 0}, {0, 1, 0, 0}, {0, 0, 1, 0}, {0, 0, 0, 0.1}, {0, 0, 0, 0.1}, {0, 0, 0, 0.1}, {0, 0, 0, 0.1}, {0, 0, 0, 0.1}}
	if err := embedtest.WriteStaticModel(model, m); err != nil {
		t.Fatal(err)
	}
	data := filepath.Join(t.TempDir(), "locomo.json")
	conv := `[{"sample_id":"tiny","conversation":{"speaker_a":"Caroline","speaker_b":"Mel",
"session_1_date_time":"1:56 pm on 8 May, 2023",
"session_1":[{"speaker":"Mel","dia_id":"D1:1","text":"I got a car"},{"speaker":"Caroline","dia_id":"D1:2","text":"I did buy piano lessons"}]},
"qa":[{"question":"What automobile did Caroline buy?","answer":"a car","evidence":["D1:1"],"category":4}]}]`
	if err := os.WriteFile(data, []byte(conv), 0o600); err != nil {
		t.Fatal(err)
	}
	out := mustRun(t, "bench", "locomo", "--data", data, "--mode", "vector", "--extract", "off", "--embedder", "static", "--model-dir", model)
	if !strings.Contains(out, "| vector | all | 1 | 1.000 |") {
		t.Fatalf("the static model did not rank the evidence first:\n%s", out)
	}
	wantError(t, []string{"--embedder static needs --model NAME"}, "bench", "locomo", "--data", data, "--embedder", "static")
}
