package main

import (
	"bytes"
	"encoding/hex"
	"errors"
	"os"
	"path/filepath"
	"runtime"
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

// TestBackupPrivateAndSealed: a backup file is its owner's alone (0600),
// and an encrypted store's backup holds nothing in the clear and restores
// only with the store's key; a damaged one is refused.
func TestBackupPrivateAndSealed(t *testing.T) {
	tmp := t.TempDir()
	plain := filepath.Join(tmp, "plain.backup")
	mustRun(t, "backup", "--dir", seedStore(t), "--out", plain)

	dir := filepath.Join(tmp, "data")
	key := writeKey(t, []byte(hex.EncodeToString(bytes.Repeat([]byte{7}, 32))), 0o600)
	other := writeKey(t, []byte(hex.EncodeToString(bytes.Repeat([]byte{8}, 32))), 0o600)
	const secret = "zebra-quartz-4417"
	in := filepath.Join(tmp, "in.jsonl")
	line := `{"type":"memory","user":"alice-private","id":"01JQ0000000000000000000001","kind":"fact","text":"the vault code is ` + secret + `","created_at":"2026-01-02T03:04:05Z"}` + "\n"
	if err := os.WriteFile(in, []byte(line), 0o600); err != nil {
		t.Fatal(err)
	}
	mustRun(t, "import", "--dir", dir, "--tenant", "acme", "--encryption-key-file", key, in)
	sealed := filepath.Join(tmp, "sealed.backup")
	mustRun(t, "backup", "--dir", dir, "--out", sealed, "--encryption-key-file", key)

	for _, f := range []string{plain, sealed} {
		fi, err := os.Stat(f)
		if err != nil {
			t.Fatal(err)
		}
		if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
			t.Errorf("%s has mode %04o, want 0600", filepath.Base(f), fi.Mode().Perm())
		}
	}
	b := readFile(t, sealed)
	for _, clear := range []string{secret, "alice-private", "acme"} {
		if strings.Contains(b, clear) {
			t.Errorf("the encrypted store's backup holds %q in the clear", clear)
		}
	}

	wantError(t, []string{"--encryption-key-file"}, "restore", "--dir", filepath.Join(tmp, "r1"), "--in", sealed)
	wantError(t, []string{"another key", "--encryption-key-file"}, "restore", "--dir", filepath.Join(tmp, "r2"), "--in", sealed, "--encryption-key-file", other)
	damaged := []byte(b)
	damaged[len(damaged)-100] ^= 1
	bad := writeFile(t, filepath.Join(tmp, "damaged.backup"), string(damaged))
	wantError(t, []string{"damaged"}, "restore", "--dir", filepath.Join(tmp, "r3"), "--in", bad, "--encryption-key-file", key)
	for _, r := range []string{"r1", "r2", "r3"} {
		if _, err := os.Stat(filepath.Join(tmp, r)); !errors.Is(err, os.ErrNotExist) {
			t.Errorf("a refused restore left %s: %v", r, err)
		}
	}
	restored := filepath.Join(tmp, "restored")
	mustRun(t, "restore", "--dir", restored, "--in", sealed, "--encryption-key-file", key)
	if out := mustRun(t, "export", "--dir", restored, "--tenant", "acme", "--encryption-key-file", key); !strings.Contains(out, secret) {
		t.Errorf("the restored store lacks the memory:\n%s", out)
	}
}
