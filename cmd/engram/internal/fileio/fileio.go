// Package fileio holds the file-writing steps the engram command's
// subcommands share: a file written whole or not at all, a directory's
// entries made durable, and a writer that counts.
package fileio

import (
	"errors"
	"io"
	"os"
	"path/filepath"
)

// WriteAtomic writes path through a temporary file in the same directory,
// filled by fill, synced, renamed into place and its directory synced, so a
// failed run never leaves a half-written file at path. The file is mode
// 0644.
func WriteAtomic(path string, fill func(io.Writer) error) (err error) {
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
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}

// SyncDir makes a directory's entries (a rename into it, a new file) durable.
// On platforms that cannot sync a directory it does nothing.
func SyncDir(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, os.ErrInvalid) {
		return err
	}
	return nil
}

// CountingWriter counts the bytes written through it to W.
type CountingWriter struct {
	W io.Writer
	N int64 // bytes written so far
}

// Write writes p to W and counts what W took.
func (cw *CountingWriter) Write(p []byte) (int, error) {
	n, err := cw.W.Write(p)
	cw.N += int64(n)
	return n, err
}
