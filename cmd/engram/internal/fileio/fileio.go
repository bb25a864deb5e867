// Package fileio holds the file steps the engram command's subcommands
// share: a file written whole or not at all, a directory's entries made
// durable, a writer that counts, and a secret file read only if private.
package fileio

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
)

// WriteAtomic writes path through a temporary file in the same directory,
// filled by fill, synced, renamed into place and its directory synced, so a
// failed run never leaves a half-written file at path. The file is mode
// 0644.
func WriteAtomic(path string, fill func(io.Writer) error) error {
	return WriteAtomicMode(path, 0o644, fill)
}

// WriteAtomicMode is [WriteAtomic] with the file's permission bits: 0600
// for a file that holds a store's data, such as a backup.
func WriteAtomicMode(path string, perm os.FileMode, fill func(io.Writer) error) (err error) {
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
	if err = os.Chmod(f.Name(), perm); err != nil {
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

// Errors of [ReadPrivate].
var (
	// ErrNotPrivate: the file's group or other users may read or write it.
	ErrNotPrivate = errors.New("file is readable or writable by others")
	// ErrNotRegular: the path is not a regular file.
	ErrNotRegular = errors.New("not a regular file")
	// ErrTooLarge: the file is larger than the limit.
	ErrTooLarge = errors.New("file too large")
)

// ReadPrivate reads a file that holds secrets (bearer tokens, a key): a
// regular file of at most limit bytes that its group and other users can
// neither read nor write (not checked on Windows, which has no such bits;
// its ACLs are the operator's job). The mode is checked on the file as
// opened, so it cannot change between the check and the read.
func ReadPrivate(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	if !fi.Mode().IsRegular() {
		return nil, fmt.Errorf("%w: %s", ErrNotRegular, path)
	}
	if perm := fi.Mode().Perm(); runtime.GOOS != "windows" && perm&0o077 != 0 {
		return nil, fmt.Errorf("%w: %s has mode %04o; run chmod 600 %s", ErrNotPrivate, path, perm, path)
	}
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("%w: %s is larger than %d bytes", ErrTooLarge, path, limit)
	}
	return data, nil
}
