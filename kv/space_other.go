//go:build !(linux || darwin || freebsd)

package kv

// diskFree cannot tell the free space on this platform: no write is
// refused for lack of space, and a full disk fails as Badger fails.
func diskFree(string) (int64, bool) { return 0, false }
