package bench

import (
	"bytes"
	"context"
	_ "embed"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"
)

// hnswlibName is the name of the out-of-process peer.
const hnswlibName = "hnswlib"

// hnswlibScript is hnswlib.py, embedded so the harness works from any
// working directory and from an installed binary.
//
//go:embed hnswlib.py
var hnswlibScript []byte

// pythonCandidates is the interpreter lookup order when Options.Python is
// empty: Debian's /usr/bin/python3 first, because python3-hnswlib installs
// into its dist-packages, which a pyenv or venv python3 earlier on PATH
// does not see; then python3 on PATH, for a pip-installed hnswlib.
var pythonCandidates = []string{"/usr/bin/python3", "python3"}

// hnswlibRow is a row as hnswlib.py prints it: the report schema plus its
// layout-arithmetic memory estimate, which is logged, not reported.
type hnswlibRow struct {
	Row
	BytesFormula float64 `json:"bytes_per_vector_formula"`
}

// findPython returns the first interpreter that imports hnswlib and
// numpy, or ErrUnavailable saying what it tried.
func findPython(ctx context.Context, explicit, script string) (string, error) {
	candidates := pythonCandidates
	if explicit != "" {
		candidates = []string{explicit}
	}
	var tried []string
	seen := map[string]bool{}
	for _, c := range candidates {
		path, err := exec.LookPath(c)
		if err != nil {
			tried = append(tried, c+": not found")
			continue
		}
		if real, err := filepath.EvalSymlinks(path); err == nil && seen[real] {
			continue
		} else if err == nil {
			seen[real] = true
		}
		cctx, cancel := context.WithTimeout(ctx, 30*time.Second)
		out, err := exec.CommandContext(cctx, path, script, "--check").CombinedOutput()
		cancel()
		if err != nil {
			tried = append(tried, fmt.Sprintf("%s: %s", path, firstLine(out, err)))
			continue
		}
		return path, nil
	}
	return "", fmt.Errorf("%w: no python3 that imports hnswlib and numpy (%s); install them with: apt-get install python3-hnswlib python3-numpy",
		ErrUnavailable, strings.Join(tried, "; "))
}

func firstLine(out []byte, err error) string {
	s := strings.TrimSpace(string(out))
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	if s == "" {
		return err.Error()
	}
	return s
}

// runHNSWLib measures hnswlib through hnswlib.py. It writes the queries and
// the top-k truth they are measured against to a temporary directory, and
// the base vectors too unless ds was read from a file; the script builds
// an hnswlib cosine index with the same M and efConstruction on one thread
// and sweeps the same ef values. It returns ErrUnavailable when no
// interpreter has hnswlib.
func runHNSWLib(ctx context.Context, ds *Dataset, queries [][]float32, truth [][]int, k int, cfg config, python string, log *slog.Logger) ([]Row, error) {
	dir, err := os.MkdirTemp("", "engram-bench-hnswlib-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	script := filepath.Join(dir, "hnswlib.py")
	if err := os.WriteFile(script, hnswlibScript, 0o600); err != nil {
		return nil, err
	}
	py, err := findPython(ctx, python, script)
	if err != nil {
		return nil, err
	}

	base := ds.baseFile
	if base == "" {
		base = filepath.Join(dir, "base.fvecs")
		if err := writeFile(base, func(f *os.File) error { return WriteFvecs(f, ds.Base) }); err != nil {
			return nil, err
		}
	}
	topK := make([][]int, len(truth))
	for i, row := range truth {
		topK[i] = row[:k]
	}
	qfile, tfile := filepath.Join(dir, "query.fvecs"), filepath.Join(dir, "truth.ivecs")
	if err := writeFile(qfile, func(f *os.File) error { return WriteFvecs(f, queries) }); err != nil {
		return nil, err
	}
	if err := writeFile(tfile, func(f *os.File) error { return WriteIvecs(f, topK) }); err != nil {
		return nil, err
	}

	efs := make([]string, len(cfg.efs))
	for i, ef := range cfg.efs {
		efs[i] = strconv.Itoa(ef)
	}
	args := []string{script, "--base", base, "--query", qfile, "--truth", tfile, "--dataset", ds.Name,
		"--k", strconv.Itoa(k), "--M", strconv.Itoa(cfg.m), "--efc", strconv.Itoa(cfg.efConstruction),
		"--ef", strings.Join(efs, ","), "--seed", strconv.FormatUint(cfg.seed%(1<<31), 10)}
	log.Info("building", "system", hnswlibName, "python", py, "n", len(ds.Base), "dim", ds.Dim, "threads", 1)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(ctx, py, args...)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		var exit *exec.ExitError
		if errors.As(err, &exit) && exit.ExitCode() == 3 {
			return nil, fmt.Errorf("%w: %s", ErrUnavailable, firstLine(stderr.Bytes(), err))
		}
		return nil, fmt.Errorf("hnswlib.py: %w: %s", err, strings.TrimSpace(stderr.String()))
	}
	var got []hnswlibRow
	if err := json.Unmarshal(stdout.Bytes(), &got); err != nil {
		return nil, fmt.Errorf("hnswlib.py output: %w", err)
	}
	if len(got) != len(cfg.efs) {
		return nil, fmt.Errorf("hnswlib.py printed %d rows for %d ef values", len(got), len(cfg.efs))
	}
	rows := make([]Row, len(got))
	for i, r := range got {
		rows[i] = r.Row
		log.Info("measured", "system", hnswlibName, "params", r.Params, "recall", round(r.RecallAtK, 4),
			"qps", round(r.QPS, 0), "build_seconds", round(r.BuildSeconds, 3),
			"bytes_per_vector", round(r.BytesPerVector, 1), "bytes_per_vector_formula", round(r.BytesFormula, 1))
	}
	return rows, nil
}

// writeFile creates path and fills it with fn.
func writeFile(path string, fn func(*os.File) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := fn(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
