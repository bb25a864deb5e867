package kv

import (
	"fmt"
)

// freeSpace returns the bytes an unprivileged writer may still write on the
// filesystem holding dir; ok is false when the platform cannot say, and
// then no write is refused. It is a variable so that tests can stand in a
// full disk anywhere; Open copies it into the DB.
var freeSpace = diskFree

// reserve is the free space a store keeps for Badger's own writes, which
// it makes through memory maps: on a full disk a write into a map's hole is
// SIGBUS, which kills the process (also on restart, when Badger replays and
// flushes its write-ahead log). Writes are refused while less than this is
// free, so that what Badger writes after the last accepted write always
// fits:
//
//   - 2 memtables of write-ahead log (.mem): the current one grows to
//     MemTableSize before it is rotated, the next one as much;
//   - 2 memtables of flush output (L0 tables, one per immutable memtable;
//     NumMemtables is 2);
//   - 8 memtables of compaction output: an L0-to-L1 compaction rewrites up
//     to NumLevelZeroTablesStall (8) L0 tables before it deletes them;
//   - one largest commit (TxnLimits), which may go to the value log
//     (mapped too) as well as the write-ahead log;
//   - 1 MiB for the manifest, the discard stats and the filesystem's
//     metadata.
//
// With the default 8 MiB memtable that is about 99 MiB. Compactions of
// deeper levels write more than this while they run; they are rare, and
// the reserve leaves them the space the store's own writes do not take.
func reserve(memTableSize, maxBatch int64) int64 {
	return 12*memTableSize + 2*maxBatch + 1<<20
}

// checkSpace returns ErrDiskFull when the disk holding the store has less
// free space than the reserve.
func (db *DB) checkSpace() error {
	if db.dir == "" || db.free == nil {
		return nil
	}
	free, ok := db.free(db.dir)
	if !ok || free >= db.reserve {
		return nil
	}
	return fmt.Errorf("%w: %s has %s free; the store keeps %s for its own writes", ErrDiskFull, db.dir, mib(free), mib(db.reserve))
}

func mib(n int64) string {
	return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
}

// maxBatchSize is Badger's limit on one commit's bytes (checkAndSetOptions
// in badger v4.9.6: 15% of the memtable), known before Badger opens.
func maxBatchSize(memTableSize int64) int64 {
	return memTableSize * 15 / 100
}
