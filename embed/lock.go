package embed

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
)

// The lock file's format name and version, checked on every read.
const (
	lockFormat  = "engram-model-lock"
	lockVersion = 1
)

// modelLock is the lock file of a pulled model (engram-model.lock, JSON):
// what was pulled and what each file must hash to. [Pull] writes it last,
// once every file is in place and verified; a later pull of the same
// commit must find the Hub reporting the same files.
type modelLock struct {
	Format   string       `json:"format"`
	Version  int          `json:"version"`
	Name     string       `json:"name"`
	Repo     string       `json:"repo"`
	Revision string       `json:"revision"`
	Commit   string       `json:"commit"`
	Files    []lockedFile `json:"files"`
}

// lockedFile is one file of a [modelLock].
type lockedFile struct {
	Path   string `json:"path"`
	Size   int64  `json:"size"`
	SHA256 string `json:"sha256"`
	// GitSHA1 is the git blob id of the content: what the Hub reports
	// for a file not stored with LFS.
	GitSHA1 string `json:"git_sha1"`
}

// readLock reads and checks the lock file in dir. A missing one is an
// error wrapping fs.ErrNotExist.
func readLock(dir string) (*modelLock, error) {
	b, err := os.ReadFile(filepath.Join(dir, lockFileName))
	if err != nil {
		return nil, err
	}
	var l modelLock
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&l); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", lockFileName, err)
	}
	if err := l.check(); err != nil {
		return nil, fmt.Errorf("lock file %s: %w", lockFileName, err)
	}
	return &l, nil
}

// check reports what makes l unusable.
func (l *modelLock) check() error {
	if l.Format != lockFormat || l.Version != lockVersion {
		return fmt.Errorf("format %q version %d, want %q version %d", l.Format, l.Version, lockFormat, lockVersion)
	}
	if l.Repo == "" || !commitRE.MatchString(l.Commit) {
		return errors.New("no repository or commit")
	}
	for _, f := range pullFiles {
		if l.file(f) == nil {
			return fmt.Errorf("no entry for %s", f)
		}
	}
	for _, f := range l.Files {
		if !slices.Contains(pullFiles, f.Path) || f.Size < 0 || len(f.SHA256) != 64 {
			return fmt.Errorf("bad entry for %q", f.Path)
		}
	}
	return nil
}

// file returns the entry of path, nil if there is none.
func (l *modelLock) file(path string) *lockedFile {
	for i := range l.Files {
		if l.Files[i].Path == path {
			return &l.Files[i]
		}
	}
	return nil
}

// missing names the first file of l that is not in dir at its locked size,
// or returns "" when all are.
func (l *modelLock) missing(dir string) string {
	for _, f := range l.Files {
		fi, err := os.Stat(filepath.Join(dir, f.Path))
		switch {
		case err != nil:
			return f.Path + " is missing"
		case !fi.Mode().IsRegular() || fi.Size() != f.Size:
			return fmt.Sprintf("%s has %d bytes, not %d", f.Path, fi.Size(), f.Size)
		}
	}
	return ""
}

// writeLock replaces the lock file in dir atomically.
func writeLock(dir string, l *modelLock) error {
	l.Format, l.Version = lockFormat, lockVersion
	b, err := json.MarshalIndent(l, "", "  ")
	if err != nil {
		return err
	}
	return writeFileAtomic(filepath.Join(dir, lockFileName), append(b, '\n'))
}

// writeFileAtomic writes path through a temporary file in its folder:
// write, fsync, rename, fsync the folder.
func writeFileAtomic(path string, b []byte) (err error) {
	dir := filepath.Dir(path)
	f, err := os.CreateTemp(dir, filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			_ = os.Remove(f.Name())
		}
	}()
	if _, err = f.Write(b); err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	if err = os.Chmod(f.Name(), 0o644); err != nil {
		return err
	}
	if err = os.Rename(f.Name(), path); err != nil {
		return err
	}
	return syncDir(dir)
}

// syncDir fsyncs a folder so that a rename in it is durable. Windows
// cannot open a folder for that, and needs no such step.
func syncDir(dir string) error {
	if runtime.GOOS == "windows" {
		return nil
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	err = d.Sync()
	if cerr := d.Close(); err == nil {
		err = cerr
	}
	return err
}
