package fileio

import (
	"io"
	"os"
	"path/filepath"
)

// WriteNewPrivate creates path, a file that holds secrets, filled by fill:
// mode 0600 from the start (never readable by others, not even for a
// moment), written whole through a temporary file in the same directory,
// synced, and linked into place only if path does not exist yet. When path
// exists it returns an error satisfying errors.Is(err, fs.ErrExist) and
// leaves the file as it was, so of two processes creating the same file one
// wins and the other can read what the winner wrote.
func WriteNewPrivate(path string, fill func(io.Writer) error) (err error) {
	// CreateTemp makes the file 0600.
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	defer os.Remove(tmp) // after the link, the name is only an extra one
	if err = f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if err = fill(f); err != nil {
		f.Close()
		return err
	}
	if err = f.Sync(); err != nil {
		f.Close()
		return err
	}
	if err = f.Close(); err != nil {
		return err
	}
	// A hard link, unlike a rename, fails when path exists.
	if err = os.Link(tmp, path); err != nil {
		return err
	}
	return SyncDir(filepath.Dir(path))
}
