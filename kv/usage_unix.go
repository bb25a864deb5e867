//go:build unix

package kv

import (
	"io/fs"
	"syscall"
)

// allocated returns the bytes a file takes on disk: its blocks, so that a
// sparse file counts what it holds.
func allocated(fi fs.FileInfo) int64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return st.Blocks * 512 // st_blocks counts 512-byte units on every unix
	}
	return fi.Size()
}
