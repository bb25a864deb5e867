package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// smallSet is a synthetic set of smallN vectors (see race_test.go).
func smallSet(t *testing.T) *Dataset {
	t.Helper()
	ds, err := Synthetic(context.Background(), fmt.Sprintf("n=%d,dim=24,clusters=15,seed=2,queries=40", smallN))
	if err != nil {
		t.Fatal(err)
	}
	return ds
}

// param returns the value of key in a comma-separated key=value list.
func param(params, key string) (string, bool) {
	for _, kv := range strings.Split(params, ",") {
		if v, ok := strings.CutPrefix(kv, key+"="); ok {
			return v, true
		}
	}
	return "", false
}

// seriesName names the plot line a row belongs to: its system, and for a
// parallel build, how many threads built it.
func seriesName(r Row) string {
	if t, ok := param(r.Params, "build_threads"); ok && t != "1" {
		return fmt.Sprintf("%s (%s-thread build)", r.System, t)
	}
	return r.System
}

func TestRun(t *testing.T) {
	ds := smallSet(t)
	var logs bytes.Buffer
	rep, err := Run(context.Background(), ds, &Options{
		Ef:          []int{10, 64},
		SlowQueries: 25,
		Python:      filepath.Join(t.TempDir(), "no-such-python"), // hnswlib: skipped, not fatal
		Logger:      slog.New(slog.NewTextHandler(&logs, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	if rep.N != smallN || rep.Dim != 24 || rep.K != 10 || rep.Queries != 40 || rep.Kernel == "" {
		t.Fatalf("report header %+v", rep)
	}
	bySeries := map[string][]Row{}
	for _, r := range rep.Rows {
		bySeries[seriesName(r)] = append(bySeries[seriesName(r)], r)
		if r.Dataset != ds.Name || r.N != smallN || r.Dim != 24 || r.K != 10 {
			t.Errorf("row %+v", r)
		}
		if !(r.QPS > 0) || r.BuildSeconds < 0 || !(r.BytesPerVector > 0) || r.RecallAtK < 0 || r.RecallAtK > 1 {
			t.Errorf("implausible row %+v", r)
		}
	}
	for _, exact := range []string{"engram-flat", "chromem-go"} {
		rows := bySeries[exact]
		if len(rows) != 1 || rows[0].RecallAtK != 1 {
			t.Errorf("%s rows %+v, want one with recall 1", exact, rows)
		}
	}
	if p := bySeries["chromem-go"][0].Params; p != "exact,mem=heap,queries=25" {
		t.Errorf("chromem-go params %q", p)
	}
	if p := bySeries["engram-flat"][0].Params; p != "exact,mem=index" {
		t.Errorf("engram-flat params %q", p)
	}
	hnsw := bySeries["engram-hnsw"]
	if len(hnsw) != 2 || hnsw[1].Params != "M=16,efc=200,ef=64,mem=index,build_threads=1" || hnsw[1].RecallAtK < 0.9 {
		t.Errorf("engram-hnsw rows %+v", hnsw)
	}
	if rep.Procs > 1 {
		par := bySeries[fmt.Sprintf("engram-hnsw (%d-thread build)", rep.Procs)]
		if len(par) != 2 || par[1].RecallAtK < 0.9 {
			t.Errorf("parallel engram-hnsw rows %+v", par)
		}
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].System != "hnswlib" || !strings.Contains(rep.Skipped[0].Reason, "apt-get install python3-hnswlib") {
		t.Errorf("skipped %+v", rep.Skipped)
	}
	if !strings.Contains(logs.String(), "msg=skipped system=hnswlib") {
		t.Errorf("no skip message logged:\n%s", logs.String())
	}

	var table bytes.Buffer
	if err := WriteTable(&table, rep); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{fmt.Sprintf("n=%d dim=24 k=10 queries=40", smallN), "recall@10", "engram-hnsw", "M=16,efc=200,ef=10", "skipped hnswlib:"} {
		if !strings.Contains(table.String(), want) {
			t.Errorf("table lacks %q:\n%s", want, table.String())
		}
	}
}

func TestRunHNSWLib(t *testing.T) {
	ctx := context.Background()
	script := filepath.Join(t.TempDir(), "hnswlib.py")
	if err := os.WriteFile(script, hnswlibScript, 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := findPython(ctx, "", script); err != nil {
		t.Skipf("hnswlib peer unavailable: %v", err)
	}
	ds := smallSet(t)
	rep, err := Run(ctx, ds, &Options{Systems: []string{"hnswlib"}, Ef: []int{10, 64}, K: 5})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Skipped) != 0 || len(rep.Rows) != 2 {
		t.Fatalf("rows %+v, skipped %+v", rep.Rows, rep.Skipped)
	}
	for i, r := range rep.Rows {
		want := fmt.Sprintf("M=16,efc=200,ef=%d,mem=rss", []int{10, 64}[i])
		if r.System != "hnswlib" || r.Params != want || r.N != smallN || r.Dim != 24 || r.K != 5 || r.Dataset != ds.Name ||
			!(r.QPS > 0) || !(r.BuildSeconds > 0) || !(r.BytesPerVector > 0) {
			t.Errorf("row %d: %+v", i, r)
		}
	}
	if rep.Rows[1].RecallAtK < 0.9 {
		t.Errorf("hnswlib recall@5 at ef=64 is %v", rep.Rows[1].RecallAtK)
	}
}

func TestRunOptions(t *testing.T) {
	ds := smallSet(t)
	ctx := context.Background()
	for _, tc := range []struct {
		name string
		opts Options
		err  error
		msgs []string
	}{
		{"unknown system", Options{Systems: []string{"faiss", "engram-flat", "annoy"}}, ErrUnknownSystem, []string{`"faiss", "annoy"`}},
		{"bad fields", Options{K: -1, M: 1, Ef: []int{0}, MaxQueries: -2, Systems: []string{"chromem-go", "chromem-go"}}, ErrInvalidOptions,
			[]string{"K -1", "M 1", "Ef value 0", "MaxQueries -2", `"chromem-go" listed twice`}},
		{"k above n", Options{K: 2000, Systems: []string{"engram-flat"}}, ErrInvalidOptions, []string{"K 2000 exceeds"}},
		{"nil extra", Options{Extra: []System{nil}}, ErrInvalidOptions, []string{"Extra[0]"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := Run(ctx, ds, &tc.opts)
			if !errors.Is(err, tc.err) {
				t.Fatalf("err = %v, want %v", err, tc.err)
			}
			for _, m := range tc.msgs {
				if !strings.Contains(err.Error(), m) {
					t.Errorf("error %q lacks %q", err, m)
				}
			}
		})
	}
	if _, err := Run(ctx, &Dataset{Name: "empty"}, nil); !errors.Is(err, ErrInvalidDataset) {
		t.Errorf("empty dataset: %v", err)
	}
	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := Run(cancelled, ds, &Options{Systems: []string{"engram-flat"}}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled run: %v", err)
	}
}

// brokenSystem returns the wrong neighbours, then fails.
type brokenSystem struct{ searches int }

func (b *brokenSystem) Name() string                             { return "broken" }
func (b *brokenSystem) Build(context.Context, [][]float32) error { return nil }
func (b *brokenSystem) Sweep() []int                             { return []int{1, 2} }
func (b *brokenSystem) Params(p int) string                      { return fmt.Sprintf("p=%d", p) }
func (b *brokenSystem) Search(dst []int, _ []float32, k, p int) ([]int, error) {
	b.searches++
	if p == 2 {
		return dst, errors.New("out of order")
	}
	for range k {
		dst = append(dst, 1_000_000) // no such id, repeated
	}
	return dst, nil
}

func TestRunExtraAndFailure(t *testing.T) {
	ds := smallSet(t)
	// A truth deeper than the file's is recomputed; MaxQueries caps queries.
	ds.Truth = nil
	rep, err := Run(context.Background(), ds, &Options{Systems: []string{"engram-flat"}, Extra: []System{&brokenSystem{}}, MaxQueries: 7, K: 3})
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.Rows) != 1 || rep.Rows[0].System != "engram-flat" || rep.Rows[0].RecallAtK != 1 || rep.Queries != 7 {
		t.Fatalf("rows %+v", rep.Rows)
	}
	if len(rep.Skipped) != 1 || rep.Skipped[0].System != "broken" || !strings.Contains(rep.Skipped[0].Reason, "out of order") {
		t.Fatalf("skipped %+v", rep.Skipped)
	}
	if len(ds.Truth) != len(ds.Queries) || len(ds.Truth[0]) != 100 {
		t.Fatalf("truth not recomputed: %d rows", len(ds.Truth))
	}
}

func TestRecallOne(t *testing.T) {
	for _, tc := range []struct {
		got, truth []int
		k          int
		want       float64
	}{
		{[]int{1, 2, 3}, []int{3, 2, 1}, 3, 1},
		{[]int{1, 1, 1}, []int{1, 2, 3}, 3, 1.0 / 3},
		{[]int{1}, []int{1, 2}, 2, 0.5},
		{[]int{9, 1, 2}, []int{1, 2, 3, 9}, 2, 0.5}, // only the first k of each count
		{nil, []int{1}, 1, 0},
	} {
		if r := recallOne(tc.got, tc.truth, tc.k); r != tc.want {
			t.Errorf("recallOne(%v, %v, %d) = %v, want %v", tc.got, tc.truth, tc.k, r, tc.want)
		}
	}
}

func TestWriteJSON(t *testing.T) {
	var b bytes.Buffer
	if err := WriteJSON(&b, nil); err != nil || strings.TrimSpace(b.String()) != "[]" {
		t.Fatalf("empty: %q, %v", b.String(), err)
	}
	b.Reset()
	if err := WriteJSON(&b, []Row{{System: "s", Dataset: "d", N: 1, Dim: 2, K: 3, Params: "ef=4", RecallAtK: 0.5, QPS: 6, BuildSeconds: 7, BytesPerVector: 8}}); err != nil {
		t.Fatal(err)
	}
	want := `"system": "s", "dataset": "d", "n": 1, "dim": 2, "k": 3, "params": "ef=4", "recall_at_k": 0.5, "qps": 6, "build_seconds": 7, "bytes_per_vector": 8`
	if got := strings.Join(strings.Fields(strings.NewReplacer("\n", " ").Replace(b.String())), " "); !strings.Contains(got, want) {
		t.Fatalf("JSON %s", got)
	}
}
