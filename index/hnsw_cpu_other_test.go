//go:build !linux

package index

// threadCPU is unavailable off Linux.
func threadCPU() int64 { return -1 }
