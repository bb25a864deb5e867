package graph

import (
	"bytes"
	"errors"
	"flag"
	"io"
	"os"
	"path/filepath"
	"testing"

	"github.com/cayleygraph/quad/nquads"
)

var updateGolden = flag.Bool("update", false, "rewrite the golden files in testdata")

// checkGolden compares got with testdata/name, or rewrites it with -update.
func checkGolden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", name)
	if *updateGolden {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs (run with -update to rewrite it):\n%s", path, lineDiff(want, got))
	}
}

func TestExportGolden(t *testing.T) {
	s, db := nquadsTestGraph(t)
	got := exportNQuads(t, s, db, testRoot)
	checkGolden(t, "export.nq", got)

	// Every line is a quad that nquads itself reads.
	r := nquads.NewReader(bytes.NewReader(got), false)
	n := 0
	for {
		_, err := r.ReadQuad()
		if err != nil {
			if !errors.Is(err, io.EOF) {
				t.Fatalf("nquads.Reader, quad %d: %v", n+1, err)
			}
			break
		}
		n++
	}
	if lines := bytes.Count(got, []byte("\n")); n != lines {
		t.Errorf("nquads.Reader read %d quads of %d lines", n, lines)
	}
}
