//go:build linux || darwin || freebsd || netbsd || openbsd || dragonfly

package kv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

const lockFile = "engram.lock"

// dirLock is an exclusive flock on dir/engram.lock, taken before Badger opens
// so that a second opener gets a typed ErrLocked (Badger's own lock error is
// a formatted string that errors.Is cannot see through).
type dirLock struct{ f *os.File }

func lockDir(dir string) (*dirLock, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		holder, _ := os.ReadFile(path)
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			pid := strings.TrimSpace(string(holder))
			if _, perr := strconv.Atoi(pid); perr == nil {
				return nil, fmt.Errorf("%w: %s (held by pid %s)", ErrLocked, dir, pid)
			}
			return nil, fmt.Errorf("%w: %s", ErrLocked, dir)
		}
		return nil, fmt.Errorf("lock %s: %w", path, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return &dirLock{f: f}, nil
}

func (l *dirLock) release() error {
	if l == nil {
		return nil
	}
	// Closing the descriptor releases the flock. The file stays: removing it
	// would race with a process that has just opened it.
	return l.f.Close()
}

// isBadgerLockError reports Badger's own lock failure. Unused where our
// flock runs first, kept for platforms without it.
func isBadgerLockError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock")
}
