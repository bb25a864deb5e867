package fileio

import (
	"bytes"
	"errors"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"testing"
)

func TestWriteAtomic(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.json")
	if err := WriteAtomic(path, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }); err != nil {
		t.Fatal(err)
	}
	// A failed fill leaves the old file as it was, and no temporary file.
	boom := errors.New("boom")
	err := WriteAtomic(path, func(w io.Writer) error {
		io.WriteString(w, "half")
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("WriteAtomic = %v, want the fill's error", err)
	}
	if b, _ := os.ReadFile(path); string(b) != "first" {
		t.Fatalf("file holds %q after a failed write", b)
	}
	if entries, _ := os.ReadDir(dir); len(entries) != 1 {
		t.Fatalf("%d entries in the directory, want the file alone", len(entries))
	}
	if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v", fi.Mode().Perm())
	}
}

func TestCountingWriter(t *testing.T) {
	var buf bytes.Buffer
	cw := &CountingWriter{W: &buf}
	io.WriteString(cw, "hello, ")
	io.WriteString(cw, "world")
	if cw.N != 12 || buf.String() != "hello, world" {
		t.Fatalf("counted %d, wrote %q", cw.N, buf.String())
	}
}

func TestReadPrivate(t *testing.T) {
	dir := t.TempDir()
	write := func(name string, data []byte, perm os.FileMode) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, perm); err != nil {
			t.Fatal(err)
		}
		if err := os.Chmod(p, perm); err != nil {
			t.Fatal(err)
		}
		return p
	}
	if b, err := ReadPrivate(write("ok", []byte("secret"), 0o600), 16); err != nil || string(b) != "secret" {
		t.Fatalf("private file: %q, %v", b, err)
	}
	if _, err := ReadPrivate(write("big", make([]byte, 17), 0o600), 16); !errors.Is(err, ErrTooLarge) {
		t.Errorf("17 bytes with a limit of 16: %v", err)
	}
	if runtime.GOOS != "windows" {
		if _, err := ReadPrivate(write("loose", []byte("secret"), 0o640), 16); !errors.Is(err, ErrNotPrivate) {
			t.Errorf("mode 0640: %v", err)
		}
	}
	if _, err := ReadPrivate(dir, 16); !errors.Is(err, ErrNotRegular) {
		t.Errorf("a directory: %v", err)
	}
	if _, err := ReadPrivate(filepath.Join(dir, "missing"), 16); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("a missing file: %v", err)
	}
}

func TestWriteNewPrivate(t *testing.T) {
	path := filepath.Join(t.TempDir(), "secret.json")
	if err := WriteNewPrivate(path, func(w io.Writer) error { _, err := io.WriteString(w, "first"); return err }); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(path)
	if err != nil {
		t.Fatal(err)
	}
	if runtime.GOOS != "windows" && fi.Mode().Perm() != 0o600 {
		t.Errorf("mode %04o, want 0600", fi.Mode().Perm())
	}
	err = WriteNewPrivate(path, func(w io.Writer) error { _, err := io.WriteString(w, "second"); return err })
	if !errors.Is(err, fs.ErrExist) {
		t.Errorf("second create = %v, want fs.ErrExist", err)
	}
	if b, err := ReadPrivate(path, 100); err != nil || string(b) != "first" {
		t.Errorf("after the second create: %q, %v", b, err)
	}
	// A failed fill leaves nothing.
	other := filepath.Join(filepath.Dir(path), "other.json")
	if err := WriteNewPrivate(other, func(io.Writer) error { return errors.New("no") }); err == nil {
		t.Error("a failed fill succeeded")
	}
	entries, _ := os.ReadDir(filepath.Dir(path))
	if len(entries) != 1 {
		t.Errorf("left behind: %v", entries)
	}
}
