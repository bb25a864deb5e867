//go:build !(linux || darwin || freebsd || netbsd || openbsd || dragonfly)

package kv

import "strings"

// dirLock is a no-op where flock is unavailable; Badger's own directory lock
// still protects the store and its error is mapped to ErrLocked.
type dirLock struct{}

func lockDir(string) (*dirLock, error) { return &dirLock{}, nil }

func (*dirLock) release() error { return nil }

func isBadgerLockError(err error) bool {
	return err != nil && strings.Contains(err.Error(), "Cannot acquire directory lock")
}
