//go:build !unix

package kv

import "io/fs"

// allocated returns the bytes a file takes on disk; without a portable
// block count, its size.
func allocated(fi fs.FileInfo) int64 { return fi.Size() }
