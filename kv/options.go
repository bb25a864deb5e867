package kv

import (
	"errors"
	"fmt"
	"log/slog"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/options"
)

// Durability says when a commit is acknowledged.
type Durability int

const (
	// Sync acknowledges a commit once it is fsynced to disk. The default.
	Sync Durability = iota
	// Async acknowledges a commit once it is in the operating system's page
	// cache: it survives the process being killed, not a machine crash.
	Async
)

// String returns "sync" or "async".
func (d Durability) String() string {
	switch d {
	case Sync:
		return "sync"
	case Async:
		return "async"
	default:
		return fmt.Sprintf("Durability(%d)", int(d))
	}
}

// Small-footprint defaults. Badger's DefaultOptions reserve a 64 MiB memtable
// arena plus a 256 MiB block cache (about 85 MiB of heap right after open);
// an embedded memory engine inside an agent process should not.
const (
	defaultMemTableSize   = 8 << 20
	defaultNumMemtables   = 2
	defaultBlockCacheSize = 8 << 20
	defaultIndexCacheSize = 4 << 20
	// A value-log file is mapped at twice its size; 64 MiB keeps a fresh
	// store's files small on disk listings.
	defaultValueLogFileSize = 64 << 20
)

// Options configures a [DB]. A nil *Options, and every zero field, means the
// documented default.
type Options struct {
	// Durability of commits. Zero is [Sync].
	Durability Durability

	// EncryptionKey, when set, encrypts every file at rest with AES; it must
	// be 16, 24 or 32 bytes (AES-128, -192 or -256). The same key must be given
	// on every later Open.
	EncryptionKey []byte

	// Logger receives Badger's log lines. Nil discards them.
	Logger *slog.Logger

	// MemTableSize is the size of one memtable in bytes. Zero means 8 MiB.
	// It also bounds one transaction's writes (about 15% of it).
	MemTableSize int64

	// BlockCacheSize is the size of the block cache in bytes. Zero means
	// 8 MiB; negative is refused (Badger needs one for its compressed
	// tables).
	BlockCacheSize int64

	// IndexCacheSize is the size of the table-index cache in bytes. Zero
	// means 4 MiB. It is always set: Badger panics in a background goroutine
	// when encryption is on without it.
	IndexCacheSize int64

	// ReadOnly opens an existing store for reading: nothing of the
	// store's is written (Badger's read-only mode: no replay, no new
	// write-ahead log, no compaction, no flush at Close; kv's own lock
	// file still gets the pid), and every write fails with [ErrReadOnly].
	// A store that needs writing before it can be read, because it was
	// not closed (its write-ahead logs need replaying) or a bulk load did
	// not finish, is [ErrNeedsRecovery]: open it read-write once. Not for
	// a store in memory.
	ReadOnly bool

	// dirless is set by Open for a store in memory (validate refuses
	// ReadOnly there).
	dirless bool

	// perCommitSync makes Sync durability use Badger's SyncWrites, one
	// fsync per commit before it is visible, instead of group commit: the
	// peer that BenchmarkSyncedUpdates measures group commit against.
	perCommitSync bool

	// holdFlushes, for tests, runs no compaction and lets level 0 take two
	// tables: from the third flush on, memtables stay in their write-ahead
	// logs, as when flushes fall behind the writes, and writes wait for
	// ever once the memtables are full. Only a process that is killed
	// sets it.
	holdFlushes bool
}

func (o *Options) withDefaults() Options {
	var out Options
	if o != nil {
		out = *o
	}
	if out.MemTableSize == 0 {
		out.MemTableSize = defaultMemTableSize
	}
	if out.BlockCacheSize == 0 {
		out.BlockCacheSize = defaultBlockCacheSize
	}
	if out.IndexCacheSize == 0 {
		out.IndexCacheSize = defaultIndexCacheSize
	}
	return out
}

// validate reports every bad field at once.
func (o *Options) validate() error {
	var errs []error
	switch o.Durability {
	case Sync, Async:
	default:
		errs = append(errs, fmt.Errorf("Durability %d is neither Sync nor Async", int(o.Durability)))
	}
	switch len(o.EncryptionKey) {
	case 0, 16, 24, 32:
	default:
		errs = append(errs, fmt.Errorf("EncryptionKey is %d bytes; want 16, 24 or 32", len(o.EncryptionKey)))
	}
	if o.MemTableSize < 1<<20 {
		errs = append(errs, fmt.Errorf("MemTableSize %d is below 1 MiB", o.MemTableSize))
	}
	if o.ReadOnly && o.dirless {
		errs = append(errs, errors.New("ReadOnly needs a store on disk"))
	}
	if o.BlockCacheSize < 0 {
		errs = append(errs, fmt.Errorf("BlockCacheSize %d is negative: Badger needs a block cache for compressed tables", o.BlockCacheSize))
	}
	if o.IndexCacheSize < 0 {
		errs = append(errs, fmt.Errorf("IndexCacheSize %d is negative", o.IndexCacheSize))
	}
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}

func (o *Options) badger(dir string, log *badgerLogger) badger.Options {
	var bo badger.Options
	if dir == "" {
		bo = badger.DefaultOptions("").WithInMemory(true)
	} else {
		bo = badger.DefaultOptions(dir)
	}
	// Not Badger's SyncWrites, which fsyncs each commit before it is
	// visible: with Sync durability DB.Update syncs commits in groups
	// (groupsync.go). Benchmarks compare with the old way.
	bo.SyncWrites = o.perCommitSync && o.Durability == Sync
	bo.ReadOnly = o.ReadOnly
	bo.MemTableSize = o.MemTableSize
	bo.NumMemtables = defaultNumMemtables
	bo.NumLevelZeroTables = 2
	bo.NumLevelZeroTablesStall = 8
	bo.NumCompactors = 2
	if o.holdFlushes {
		bo.NumCompactors, bo.NumLevelZeroTables, bo.NumLevelZeroTablesStall = 0, 1, 2
	}
	bo.BlockCacheSize = o.BlockCacheSize
	bo.IndexCacheSize = o.IndexCacheSize
	bo.ValueLogFileSize = defaultValueLogFileSize
	// Badger refuses a value threshold above its batch limit (15% of the
	// memtable); values up to the threshold live in the LSM tree.
	bo.ValueThreshold = min(bo.ValueThreshold, o.MemTableSize/10)
	// Table checksums are verified at open, by checkFiles, which runs
	// Badger's own OnTableRead verification on every table before Badger
	// opens them (where a damaged table cannot panic Badger's goroutines).
	// Badger's mode would verify the same tables a second time: measured
	// in bench/results/checksums.md, it doubles the time to open and
	// finds nothing more. OnBlockRead is no use: Badger treats a block
	// that fails its checksum as a missing key (levelHandler.get), which is
	// silent loss, not an error.
	bo.ChecksumVerificationMode = options.NoVerification
	// Value-log entries are checked at every read; only values above the
	// value threshold live there.
	bo.VerifyValueChecksum = true
	bo.EncryptionKey = o.EncryptionKey
	bo.MetricsEnabled = false
	bo.Logger = log
	return bo
}
