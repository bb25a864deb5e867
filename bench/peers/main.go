package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"

	"github.com/engramdb/engram/bench"
)

// coderName is the name of the peer this command adds to the harness's.
const coderName = "coder-hnsw"

// The HNSW settings of every system: the harness's defaults, given to
// bench.Run explicitly because coder-hnsw is built outside it.
const (
	hnswM              = 16
	hnswEfConstruction = 200
)

// hnswEfs are the search breadths swept, the harness's default list.
var hnswEfs = []int{10, 16, 24, 32, 48, 64, 96, 128, 192, 256}

// config is what coder-hnsw is built with, the same as the harness's
// built-in systems.
type config struct {
	m, efConstruction int
	efs               []int
	seed              uint64
}

// annOptions are the command's flags.
type annOptions struct {
	data      string
	synthetic string
	k         int
	jsonPath  string
	plotPath  string
	systems   string
	queries   int
}

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	err := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	if errors.Is(err, flag.ErrHelp) {
		return
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
}

// run parses args and runs the comparison; the table goes to stdout,
// progress and usage to stderr.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	var o annOptions
	fs := flag.NewFlagSet("peers", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.Usage = func() {
		fmt.Fprint(stderr, `usage: go run . (--data DIR | --synthetic SPEC) [flags]

peers measures nearest-neighbour search by cosine similarity on one data set,
as engram bench ann does (engram-flat, engram-hnsw, chromem-go, hnswlib), with
coder-hnsw (github.com/coder/hnsw v0.6.1) added, and can draw recall against
QPS to a PNG (--plot). HNSW systems are built with M=16 and efConstruction=200
and swept over ef; coder-hnsw is measured last.

--data DIR reads NAME_base.fvecs, NAME_query.fvecs and, if present,
NAME_groundtruth_cosine.ivecs (TEXMEX format). --synthetic SPEC generates a
seeded Gaussian mixture, for example n=100000,dim=384,clusters=1000,seed=1.

Flags:
`)
		fs.PrintDefaults()
	}
	fs.StringVar(&o.data, "data", "", "directory holding NAME_base.fvecs and NAME_query.fvecs")
	fs.StringVar(&o.synthetic, "synthetic", "", "generate a Gaussian mixture: n=,dim=,clusters=,seed=[,queries=][,sigma=]")
	fs.IntVar(&o.k, "k", 10, "neighbours per query; recall is measured at k")
	fs.StringVar(&o.jsonPath, "json", "", "write the rows as a JSON array to this file")
	fs.StringVar(&o.plotPath, "plot", "", "draw recall against QPS to this PNG file")
	fs.StringVar(&o.systems, "systems", strings.Join(append(bench.SystemNames(), coderName), ","), "comma-separated systems to measure")
	fs.IntVar(&o.queries, "queries", 0, "use at most this many queries (0: all)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("peers: unexpected argument %q", fs.Arg(0))
	}
	return runANN(ctx, stdout, stderr, o)
}

// runANN is engram bench ann with coder-hnsw and the plot.
func runANN(ctx context.Context, stdout, stderr io.Writer, o annOptions) error {
	if (o.data == "") == (o.synthetic == "") {
		return errors.New("peers: give exactly one of --data DIR and --synthetic SPEC")
	}
	if o.k < 1 {
		return fmt.Errorf("peers: --k %d must be at least 1", o.k)
	}
	if o.queries < 0 {
		return fmt.Errorf("peers: --queries %d must not be negative", o.queries)
	}
	if o.plotPath != "" && !strings.EqualFold(filepath.Ext(o.plotPath), ".png") {
		return fmt.Errorf("peers: --plot %s: only .png is supported", o.plotPath)
	}
	systems := []string{} // not nil: nil would mean every built-in system
	for _, s := range strings.Split(o.systems, ",") {
		if s = strings.TrimSpace(s); s != "" {
			systems = append(systems, s)
		}
	}
	if len(systems) == 0 {
		return errors.New("peers: --systems names no system")
	}
	cfg := config{m: hnswM, efConstruction: hnswEfConstruction, efs: hnswEfs}
	var extra []bench.System
	if i := slices.Index(systems, coderName); i >= 0 {
		systems = slices.Delete(systems, i, i+1)
		extra = append(extra, newCoderHNSW(cfg))
	}

	log := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				return slog.Attr{}
			}
			return a
		},
	}))
	var ds *bench.Dataset
	var err error
	if o.data != "" {
		log.Info("loading", "dir", o.data)
		ds, err = bench.LoadDir(ctx, o.data)
	} else {
		log.Info("generating", "spec", o.synthetic)
		ds, err = bench.Synthetic(ctx, o.synthetic)
	}
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	rep, err := bench.Run(ctx, ds, &bench.Options{
		K: o.k, Systems: systems, Extra: extra, MaxQueries: o.queries, Logger: log,
		M: cfg.m, EfConstruction: cfg.efConstruction, Ef: cfg.efs, Seed: cfg.seed,
	})
	if err != nil {
		return fmt.Errorf("peers: %w", err)
	}
	if err := bench.WriteTable(stdout, rep); err != nil {
		return err
	}
	if o.jsonPath != "" {
		if err := writeAtomic(o.jsonPath, func(w io.Writer) error { return bench.WriteJSON(w, rep.Rows) }); err != nil {
			return fmt.Errorf("peers: --json: %w", err)
		}
	}
	if o.plotPath != "" {
		if err := writeAtomic(o.plotPath, func(w io.Writer) error { return writePlot(w, rep) }); err != nil {
			return fmt.Errorf("peers: --plot: %w", err)
		}
	}
	return nil
}

// writeAtomic writes path through a temporary file in the same directory,
// filled by fill, synced and renamed into place, so a failed run never
// leaves a half-written file at path.
func writeAtomic(path string, fill func(io.Writer) error) (err error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			f.Close()
			os.Remove(f.Name())
		}
	}()
	if err = fill(f); err != nil {
		return err
	}
	if err = f.Sync(); err != nil {
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(f.Name(), path)
}

// ownedCopy copies base into one new backing array, so a system that keeps
// the caller's slices holds (and is charged for) its own copy.
func ownedCopy(base [][]float32) [][]float32 {
	if len(base) == 0 {
		return nil
	}
	dim := len(base[0])
	flat := make([]float32, 0, len(base)*dim)
	for _, v := range base {
		flat = append(flat, v...)
	}
	out := make([][]float32, len(base))
	for i := range out {
		out[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	return out
}
