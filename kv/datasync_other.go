//go:build !linux

package kv

import "os"

// datasync flushes f to disk.
func datasync(f *os.File) error { return f.Sync() }

// liveSync returns what the syncer calls to flush the current logs:
// Badger's Sync, which msyncs its maps, because here an fsync of a mapped
// file is not known to reach the map's pages.
func liveSync(badgerSync func() error) func() error { return badgerSync }
