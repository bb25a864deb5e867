package main

import (
	"crypto/sha256"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
	"github.com/engramdb/engram/memory"
)

// storeDigest returns a digest of every file of a store but its lock file.
func storeDigest(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() || d.Name() == "engram.lock" {
			return err
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		out[rel] = fmt.Sprintf("%x", sha256.Sum256(b))
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestReadingCommandsWriteNothing: inspect, export and backup read a
// closed store without changing any of its files (they opened it
// read-write, which starts a write-ahead log, flushes and rewrites files:
// issue 26 item 14).
func TestReadingCommandsWriteNothing(t *testing.T) {
	kvtest.SkipOnPostgres(t, "reads Badger's files")
	src := seedStore(t)
	tmp := t.TempDir()
	for _, args := range [][]string{
		{"inspect", "--dir", src},
		{"inspect", "--dir", src, "--tenant", "acme", "--user", "alice"},
		{"export", "--dir", src, "--tenant", "acme"},
		{"backup", "--dir", src, "--out", filepath.Join(tmp, "b.backup")},
	} {
		before := storeDigest(t, src)
		mustRun(t, args...)
		after := storeDigest(t, src)
		for name, h := range before {
			if after[name] != h {
				t.Errorf("engram %s: %s changed or went", strings.Join(args, " "), name)
			}
		}
		for name := range after {
			if _, ok := before[name]; !ok {
				t.Errorf("engram %s: %s was created", strings.Join(args, " "), name)
			}
		}
	}
}

// TestReadingCommandsReplayFirst: a store that was not closed (a copy
// taken while it was open, as kill -9 leaves it) cannot be opened
// read-only, because its write-ahead log must be replayed: export opens
// it read-write, says so on stderr, and exports everything.
func TestReadingCommandsReplayFirst(t *testing.T) {
	kvtest.SkipOnPostgres(t, "copies Badger's files while open")
	src := seedStore(t)
	want, _, err := runCLIIO(t, strings.NewReader(""), "export", "--dir", src, "--tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	st, err := memory.Open(src, &memory.Options{SweepInterval: -1, Extraction: memory.ExtractOff})
	if err != nil {
		t.Fatal(err)
	}
	killed := filepath.Join(t.TempDir(), "killed")
	if err := os.CopyFS(killed, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	if m, _ := filepath.Glob(filepath.Join(killed, "*.mem")); len(m) == 0 {
		t.Fatal("the copy has no write-ahead log")
	}
	out, stderr, err := runCLIIO(t, strings.NewReader(""), "export", "--dir", killed, "--tenant", "acme")
	if err != nil {
		t.Fatal(err)
	}
	if out != want {
		t.Errorf("export of the replayed store differs:\n%s\n---\n%s", out, want)
	}
	if !strings.Contains(stderr, "not closed cleanly") || !strings.Contains(stderr, "read-write") {
		t.Errorf("stderr does not say the store was opened read-write: %q", stderr)
	}
}
