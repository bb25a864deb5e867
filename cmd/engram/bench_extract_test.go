package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBenchExtract(t *testing.T) {
	path := filepath.Join(t.TempDir(), "extract.json")
	out := mustRun(t, "bench", "extract", "--messages", "200", "--rounds", "2", "--appends", "10",
		"--durability", "async", "--json", path)
	for _, want := range []string{
		"Extraction alone, one core: 200 messages", "messages/s",
		"Append latency (durability async", "async       20", "off       20", "p50 async / off = ",
		"Pipeline (Append each, then Flush): 200 messages",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("bench extract lacks %q:\n%s", want, out)
		}
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var rep struct {
		Messages         int     `json:"messages"`
		ExtractPerSecond float64 `json:"extract_per_second"`
		Produced         struct{ Memories, Entities, Facts int }
		Async            struct {
			N   int     `json:"n"`
			P50 float64 `json:"p50_us"`
		} `json:"append_async"`
		Off struct {
			N   int     `json:"n"`
			P50 float64 `json:"p50_us"`
		} `json:"append_off"`
		P50Ratio          float64 `json:"p50_ratio"`
		PipelinePerSecond float64 `json:"pipeline_per_second"`
	}
	if err := json.Unmarshal(b, &rep); err != nil {
		t.Fatalf("--json: %v\n%s", err, b)
	}
	if rep.Messages != 200 || rep.ExtractPerSecond <= 0 || rep.Async.N != 20 || rep.Off.N != 20 ||
		rep.Async.P50 <= 0 || rep.P50Ratio <= 0 || rep.PipelinePerSecond <= 0 {
		t.Errorf("--json report: %+v", rep)
	}
	// The synthetic conversation holds what the extractor looks for.
	if rep.Produced.Facts == 0 || rep.Produced.Memories == 0 {
		t.Errorf("the extractor produced nothing from the synthetic conversation: %+v", rep.Produced)
	}

	for _, args := range [][]string{
		{"--durability", "later"}, {"--rounds", "0"}, {"--data", filepath.Join(t.TempDir(), "missing.json")},
	} {
		wantError(t, []string{"bench extract"}, append([]string{"bench", "extract", "--messages", "10"}, args...)...)
	}
}
