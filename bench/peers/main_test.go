package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestPeersSynthetic(t *testing.T) {
	dir := t.TempDir()
	jsonPath, plotPath := filepath.Join(dir, "rows.json"), filepath.Join(dir, "plot.png")
	spec := "n=2000,dim=32,clusters=20,seed=1,queries=50"
	var out bytes.Buffer
	err := run(context.Background(), []string{"--synthetic", spec, "--k", "10", "--systems", "engram-flat,coder-hnsw",
		"--json", jsonPath, "--plot", plotPath}, &out, &out)
	if err != nil {
		t.Fatalf("peers: %v\n%s", err, out.String())
	}
	b, err := os.ReadFile(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	var rows []map[string]any
	if err := json.Unmarshal(b, &rows); err != nil {
		t.Fatalf("%s: %v", jsonPath, err)
	}
	systems := map[string]bool{}
	for _, r := range rows {
		systems[r["system"].(string)] = true
		if r["n"].(float64) != 2000 || r["dim"].(float64) != 32 || r["k"].(float64) != 10 ||
			r["dataset"] != "synthetic:"+spec+",sigma=1" {
			t.Errorf("row %v", r)
		}
		if r["qps"].(float64) <= 0 || r["bytes_per_vector"].(float64) <= 0 {
			t.Errorf("row %v", r)
		}
	}
	for _, want := range []string{"engram-flat", "coder-hnsw"} {
		if !systems[want] {
			t.Errorf("no rows for %s", want)
		}
	}
	if len(rows) == 0 || rows[len(rows)-1]["system"] != "coder-hnsw" {
		t.Errorf("coder-hnsw is not measured last: %v", rows)
	}
	for _, want := range []string{"recall@10", "M=16,Ml=0.25,efc=200,ef=64", "level=INFO msg=built system=coder-hnsw"} {
		if !strings.Contains(out.String(), want) {
			t.Errorf("output lacks %q:\n%s", want, out.String())
		}
	}
	f, err := os.Open(plotPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if img, err := png.Decode(f); err != nil || img.Bounds().Dx() < 500 {
		t.Fatalf("plot does not decode: %v", err)
	}
}

func TestPeersBadFlags(t *testing.T) {
	dir := t.TempDir()
	for _, tc := range []struct {
		name string
		args []string
		want string
	}{
		{"no source", nil, "exactly one of --data"},
		{"both sources", []string{"--data", dir, "--synthetic", "n=10"}, "exactly one of --data"},
		{"k zero", []string{"--synthetic", "n=100,clusters=2,dim=4", "--k", "0"}, "--k 0"},
		{"negative queries", []string{"--synthetic", "n=100,clusters=2,dim=4", "--queries", "-1"}, "--queries -1"},
		{"unknown system", []string{"--synthetic", "n=100,clusters=2,dim=4", "--systems", "faiss"}, `unknown system: "faiss"`},
		{"no systems", []string{"--synthetic", "n=100,clusters=2,dim=4", "--systems", " , "}, "names no system"},
		{"svg plot", []string{"--synthetic", "n=100,clusters=2,dim=4", "--plot", "x.svg"}, "only .png"},
		{"k not a number", []string{"--k", "x"}, "invalid value"},
		{"extra argument", []string{"--synthetic", "n=100,clusters=2,dim=4", "extra"}, "unexpected argument"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			err := run(context.Background(), tc.args, &out, &out)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q\n%s", err, tc.want, out.String())
			}
		})
	}
	var out bytes.Buffer
	if err := run(context.Background(), []string{"--help"}, &out, &out); !errors.Is(err, flag.ErrHelp) || !strings.Contains(out.String(), "coder-hnsw") {
		t.Fatalf("--help: %v\n%s", err, out.String())
	}
}
