package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestExportFormats(t *testing.T) {
	src := seedStore(t)
	tmp := t.TempDir()
	// --format overrides the extension; --user narrows to one user.
	out := filepath.Join(tmp, "bob.data")
	msg := mustRun(t, "export", "--dir", src, "--tenant", "acme", "--user", "bob", "--format", "jsonl", "--out", out)
	if !strings.Contains(msg, "exported 1 message and 1 memory of user bob of tenant acme to "+out) {
		t.Errorf("export output: %s", msg)
	}
	if got := readFile(t, out); strings.Count(got, "\n") != 2 || strings.Contains(got, "alice") {
		t.Errorf("bob's export:\n%s", got)
	}
	// JSONL holds no graphs, and the summary says so.
	if !strings.Contains(msg, "no knowledge graphs") {
		t.Errorf("a JSONL export does not say it leaves out the graphs: %s", msg)
	}
	// N-Quads by extension; an existing empty directory is a directory
	// export.
	nq := filepath.Join(tmp, "bob.nquads")
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--user", "bob", "--out", nq)
	if got := readFile(t, nq); !strings.HasPrefix(got, "# engram:user \"bob\"\n") || !strings.Contains(got, `"likes \"quotes\"\nand new lines"`) {
		t.Errorf("bob's graph:\n%s", got)
	}
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "export", "--dir", src, "--tenant", "acme", "--user", "bob", "--out", empty)
	if _, err := os.Stat(filepath.Join(empty, "users", "bob.nq")); err != nil {
		t.Errorf("directory export of bob: %v", err)
	}
	// Standard output: the data there, the summary on standard error.
	stdout, stderr, err := runCLIIO(t, strings.NewReader(""), "export", "--dir", src, "--tenant", "acme", "--user", "alice", "--format", "nquads")
	if err != nil || !strings.HasPrefix(stdout, "# engram:user \"alice\"\n") || !strings.Contains(stderr, "to standard output") {
		t.Errorf("export to stdout: %v\n%s\n%s", err, stdout, stderr)
	}
}

func TestExportErrors(t *testing.T) {
	src := seedStore(t)
	tmp := t.TempDir()
	full := filepath.Join(tmp, "full")
	if err := os.Mkdir(full, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(full, "x"), "")
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no dir", []string{"export", "--tenant", "acme"}, []string{`"dir" not set`}},
		{"no tenant", []string{"export", "--dir", src}, []string{`"tenant" not set`}},
		{"no store", []string{"export", "--dir", filepath.Join(tmp, "nothing"), "--tenant", "acme"}, []string{"no store in"}},
		{"bad format", []string{"export", "--dir", src, "--tenant", "acme", "--format", "xml"}, []string{`unknown format "xml"`}},
		{"nquads of a tenant", []string{"export", "--dir", src, "--tenant", "acme", "--out", filepath.Join(tmp, "g.nq")}, []string{"give --user", "--format dir"}},
		{"dir to stdout", []string{"export", "--dir", src, "--tenant", "acme", "--format", "dir"}, []string{"--format dir needs --out"}},
		{"dir not empty", []string{"export", "--dir", src, "--tenant", "acme", "--out", full}, []string{"exists and is not empty"}},
		{"bad user", []string{"export", "--dir", src, "--tenant", "acme", "--user", "a\nb"}, []string{"invalid scope", "User"}},
		{"dot dot user", []string{"export", "--dir", src, "--tenant", "acme", "--user", ".."}, []string{"invalid scope", "User", "path component"}},
		{"slash tenant", []string{"export", "--dir", src, "--tenant", "acme/../globex"}, []string{"invalid scope", "Tenant", "'/'"}},
		{"bidi user", []string{"export", "--dir", src, "--tenant", "acme", "--user", "bob\u202e"}, []string{"invalid scope", "User", "invisible"}},
		{"session flag", []string{"export", "--dir", src, "--tenant", "acme", "--session", "s"}, []string{"unknown flag: --session"}},
		{"out without format", []string{"export", "--dir", src, "--tenant", "acme", "--out", filepath.Join(tmp, "acme-export")}, []string{"acme-export", "acme-export/", ".jsonl", "--format"}},
		{"out without format, one user", []string{"export", "--dir", src, "--tenant", "acme", "--user", "bob", "--out", filepath.Join(tmp, "bob")}, []string{"--format"}},
		{"no such dir for out", []string{"export", "--dir", src, "--tenant", "acme", "--out", filepath.Join(tmp, "no", "such", "x.jsonl")}, []string{"no such file"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.want, tt.args...) })
	}
	// Nothing half-written: no file, no temporary left next to it.
	entries, _ := os.ReadDir(tmp)
	for _, e := range entries {
		if e.Name() != "full" {
			t.Errorf("a failed export left %s", e.Name())
		}
	}
}
