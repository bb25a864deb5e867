package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestBackupRestore(t *testing.T) {
	src := seedStore(t)
	tmp := t.TempDir()
	bak := filepath.Join(tmp, "store.backup")
	out := mustRun(t, "backup", "--dir", src, "--out", bak)
	if !strings.Contains(out, "backed up "+src+" to "+bak) {
		t.Errorf("backup: %s", out)
	}
	dst := filepath.Join(tmp, "restored")
	mustRun(t, "restore", "--dir", dst, "--in", bak)
	want := mustRun(t, "export", "--dir", src, "--tenant", "acme")
	if got := mustRun(t, "export", "--dir", dst, "--tenant", "acme"); got != want {
		t.Fatalf("restored store exports differently:\n%s\n---\n%s", got, want)
	}
	// Into an existing empty directory, and into a store without data.
	empty := filepath.Join(tmp, "empty")
	if err := os.Mkdir(empty, 0o755); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "restore", "--dir", empty, "--in", bak)
	fresh := filepath.Join(tmp, "fresh")
	mustRun(t, "import", "--dir", fresh, "--tenant", "t", writeFile(t, filepath.Join(tmp, "none.jsonl"), "\n"))
	mustRun(t, "restore", "--dir", fresh, "--in", bak)
	if got := mustRun(t, "export", "--dir", fresh, "--tenant", "acme"); got != want {
		t.Errorf("restore into an empty store differs")
	}
	// Through standard input and output.
	stream, _, err := runCLIIO(t, strings.NewReader(""), "backup", "--dir", src, "--out", "-")
	if err != nil {
		t.Fatal(err)
	}
	piped := filepath.Join(tmp, "piped")
	if _, _, err := runCLIIO(t, strings.NewReader(stream), "restore", "--dir", piped, "--in", "-"); err != nil {
		t.Fatalf("restore from stdin: %v", err)
	}
	if got := mustRun(t, "export", "--dir", piped, "--tenant", "acme"); got != want {
		t.Errorf("restore from stdin differs")
	}
}

func TestRestoreErrors(t *testing.T) {
	src := seedStore(t)
	tmp := t.TempDir()
	bak := filepath.Join(tmp, "store.backup")
	mustRun(t, "backup", "--dir", src, "--out", bak)
	notStore := filepath.Join(tmp, "papers")
	if err := os.Mkdir(notStore, 0o755); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(notStore, "thesis.txt"), "mine")
	good := readFile(t, bak)
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"no in", []string{"restore", "--dir", filepath.Join(tmp, "x")}, []string{`"in" not set`}},
		{"no out", []string{"backup", "--dir", src}, []string{`"out" not set`}},
		{"backup of no store", []string{"backup", "--dir", filepath.Join(tmp, "none"), "--out", filepath.Join(tmp, "b")}, []string{"no store in"}},
		{"non-empty store", []string{"restore", "--dir", src, "--in", bak}, []string{"is not empty", "restore into a new directory"}},
		{"not a store", []string{"restore", "--dir", notStore, "--in", bak}, []string{"holds no store"}},
		{"missing file", []string{"restore", "--dir", filepath.Join(tmp, "x"), "--in", filepath.Join(tmp, "nope")}, []string{"no such file"}},
		{"not a backup", []string{"restore", "--dir", filepath.Join(tmp, "x"), "--in", writeFile(t, filepath.Join(tmp, "a.jsonl"), `{"type":"memory"}`)}, []string{"not an engram backup"}},
		{"huge frame", []string{"restore", "--dir", filepath.Join(tmp, "x"), "--in", writeFile(t, filepath.Join(tmp, "h"), backupMagic+"\xff\xff\xff\xff\xff\xff\x00\x00junk")}, []string{"not an engram backup", "a frame of"}},
		{"truncated", []string{"restore", "--dir", filepath.Join(tmp, "x"), "--in", writeFile(t, filepath.Join(tmp, "tr"), good[:len(good)/2])}, []string{"restore"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) { wantError(t, tt.want, tt.args...) })
	}
	// Failed restores leave nothing: no target, no temporary directory;
	// the papers are untouched.
	entries, _ := os.ReadDir(tmp)
	var names []string
	for _, e := range entries {
		names = append(names, e.Name())
	}
	if got := strings.Join(names, " "); got != "a.jsonl h papers store.backup tr" {
		t.Errorf("after failed restores the directory holds: %s", got)
	}
	if readFile(t, filepath.Join(notStore, "thesis.txt")) != "mine" {
		t.Error("restore touched a directory that holds no store")
	}
}
