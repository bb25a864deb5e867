//go:build linux

package index

import "syscall"

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds (getrusage RUSAGE_THREAD), or -1 when unavailable. The
// search benchmarks lock their goroutine to a thread and report it per
// op: time spent descheduled on a shared machine does not count.
func threadCPU() int64 {
	const rusageThread = 1
	var ru syscall.Rusage
	if err := syscall.Getrusage(rusageThread, &ru); err != nil {
		return -1
	}
	return ru.Utime.Nano() + ru.Stime.Nano()
}
