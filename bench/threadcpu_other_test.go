//go:build !linux

package bench

import "time"

// threadCPU is not measured off Linux: it reports false.
func threadCPU() (time.Duration, bool) { return 0, false }
