package main

import (
	"bytes"
	"context"
	"fmt"
	"image/png"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/bench"
)

// smallN is the size of the data set the tests measure, as bench's own
// tests use without the race detector.
const smallN = 1500

// TestRunCoder measures coder-hnsw through the harness's Options.Extra,
// beside engram-hnsw, and draws the report.
func TestRunCoder(t *testing.T) {
	ds, err := bench.Synthetic(context.Background(), fmt.Sprintf("n=%d,dim=24,clusters=15,seed=2,queries=40", smallN))
	if err != nil {
		t.Fatal(err)
	}
	cfg := config{m: hnswM, efConstruction: hnswEfConstruction, efs: []int{10, 64}}
	rep, err := bench.Run(context.Background(), ds, &bench.Options{
		Systems: []string{"engram-hnsw"},
		Extra:   []bench.System{newCoderHNSW(cfg)},
		Ef:      cfg.efs,
		Python:  filepath.Join(t.TempDir(), "no-such-python"),
	})
	if err != nil {
		t.Fatal(err)
	}
	bySeries := map[string][]bench.Row{}
	for _, r := range rep.Rows {
		bySeries[seriesName(r)] = append(bySeries[seriesName(r)], r)
		if r.Dataset != ds.Name || r.N != smallN || r.Dim != 24 || r.K != 10 {
			t.Errorf("row %+v", r)
		}
		if !(r.QPS > 0) || r.BuildSeconds < 0 || !(r.BytesPerVector > 0) || r.RecallAtK < 0 || r.RecallAtK > 1 {
			t.Errorf("implausible row %+v", r)
		}
	}
	if coder := bySeries["coder-hnsw"]; len(coder) != 2 || !strings.HasPrefix(coder[0].Params, "M=16,Ml=0.25,efc=200,ef=10,mem=heap") {
		t.Errorf("coder-hnsw rows %+v", coder)
	}
	if len(rep.Skipped) != 0 {
		t.Errorf("skipped %+v", rep.Skipped)
	}

	var img bytes.Buffer
	if err := writePlot(&img, rep); err != nil {
		t.Fatal(err)
	}
	if cfg, err := png.DecodeConfig(&img); err != nil || cfg.Width < 500 {
		t.Fatalf("plot: %+v, %v", cfg, err)
	}
}

func TestWritePlotEmpty(t *testing.T) {
	rep := &bench.Report{Dataset: "d", K: 10, Rows: []bench.Row{{System: "s", QPS: 0}}}
	if err := writePlot(&bytes.Buffer{}, rep); err == nil {
		t.Fatal("plot of no positive QPS succeeded")
	}
}
