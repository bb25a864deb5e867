//go:build linux || darwin || freebsd

package kv

import "syscall"

// diskFree reads the free blocks available to unprivileged users (f_bavail:
// root's reserved blocks do not count) with statfs(2).
func diskFree(dir string) (int64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return int64(st.Bavail) * int64(st.Bsize), true //nolint:unconvert // field types differ by platform
}
