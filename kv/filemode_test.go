//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kv

import (
	"bytes"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// storeModes returns the files of dir that another user could read or
// write, with their modes.
func storeModes(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var open []string
	for _, e := range entries {
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			open = append(open, e.Name()+" "+fi.Mode().Perm().String())
		}
	}
	return open
}

// TestFaultFileModes opens a store in a directory that others may enter
// (0755), with the usual umask 022, and writes tables, a value log, a
// write-ahead log and DISCARD: every file must be 0600, while the store
// is open and after Close. Badger creates them 0666 less the umask, so
// they were 0644 (issue 26 item 6).
func TestFaultFileModes(t *testing.T) {
	kvtest.SkipOnPostgres(t, "checks Badger's files on disk")
	old := syscall.Umask(0o022)
	t.Cleanup(func() { syscall.Umask(old) })
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	db, err := Open(dir, &Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 40 {
		v := bytes.Repeat([]byte{byte(i)}, 64<<10)
		if i%10 == 0 {
			v = bytes.Repeat([]byte{byte(i)}, 200<<10) // the value log
		}
		if err := db.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte{'k', byte(i)}, v) }); err != nil {
			t.Fatal(err)
		}
	}
	if open := storeModes(t, dir); len(open) > 0 {
		t.Errorf("while open: %v", open)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, glob := range []string{"*.sst", "*.vlog", "DISCARD"} {
		if m, _ := filepath.Glob(filepath.Join(dir, glob)); len(m) == 0 {
			t.Fatalf("the store has no %s file", glob)
		}
	}
	if open := storeModes(t, dir); len(open) > 0 {
		t.Errorf("after Close: %v", open)
	}
}

// TestOpenWarnsReadableFiles: a store file that other users can read is
// reported at Open through the store's logger, and made 0600.
func TestOpenWarnsReadableFiles(t *testing.T) {
	kvtest.SkipOnPostgres(t, "checks Badger's files on disk")
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(dir, "MANIFEST")
	if err := os.Chmod(p, 0o644); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	db, err = Open(dir, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "MANIFEST") {
		t.Errorf("no warning naming MANIFEST; the log:\n%s", logs.String())
	}
	if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
		t.Errorf("MANIFEST after Open: %v, %v; want 0600", fi.Mode(), err)
	}
}

// TestStoreDirWithoutACL: where the directory takes no default ACL, a
// directory open to others is made 0700, with a warning.
func TestStoreDirWithoutACL(t *testing.T) {
	kvtest.SkipOnPostgres(t, "checks Badger's files on disk")
	setDefaultACL = func(string) error { return errNoACL }
	t.Cleanup(func() { setDefaultACL = setOwnerOnlyACL })
	dir := t.TempDir()
	if err := os.Chmod(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	var logs bytes.Buffer
	db, err := Open(dir, &Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if fi, err := os.Stat(dir); err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("directory after Open: %v, %v; want 0700", fi.Mode(), err)
	}
	if !strings.Contains(logs.String(), "level=WARN") || !strings.Contains(logs.String(), "0700") {
		t.Errorf("no warning; the log:\n%s", logs.String())
	}
}
