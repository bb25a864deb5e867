package kv

import "errors"

var (
	// ErrNotFound is returned by [Txn.Get] when the key does not exist or has
	// expired.
	ErrNotFound = errors.New("kv: not found")

	// ErrClosed is returned by every method of a [DB] after [DB.Close].
	ErrClosed = errors.New("kv: closed")

	// ErrLocked is returned by [Open] when another process, or another DB in
	// this process, holds the directory.
	ErrLocked = errors.New("kv: directory is locked by another process")

	// ErrEncryptionKey is returned by [Open] when the encryption key does not
	// match the one the store was created with, or when an encrypted store is
	// opened without a key (or a plain one with a key).
	ErrEncryptionKey = errors.New("kv: encryption key mismatch")

	// ErrTooLarge is returned by [DB.Update] when a transaction holds more
	// writes than one commit can take, and by [Txn.Set] for an oversized key
	// or value. Nothing is written.
	ErrTooLarge = errors.New("kv: transaction or entry too large")

	// ErrConflict is returned by [DB.Update] when a concurrent transaction
	// wrote a key this one read. Retry the whole transaction.
	ErrConflict = errors.New("kv: transaction conflict")

	// ErrInvalidOptions is returned by [Open] for bad options; the message
	// names every bad field.
	ErrInvalidOptions = errors.New("kv: invalid options")

	// ErrEmptyKey is returned by [Txn.Set], [Txn.Get] and [Txn.Delete] for an
	// empty key.
	ErrEmptyKey = errors.New("kv: empty key")

	// ErrReadOnly is returned by the write methods of a [Txn] opened by
	// [DB.View].
	ErrReadOnly = errors.New("kv: read-only transaction")

	// ErrNotEmpty is returned by [DB.Restore] and [DB.BulkLoad] when the
	// store already holds data.
	ErrNotEmpty = errors.New("kv: restore target is not empty")

	// ErrUnsorted is returned by [DB.BulkLoad] for a key that is not
	// above the one before it.
	ErrUnsorted = errors.New("kv: bulk load keys out of order")

	// ErrBackupKey is returned by [DB.Restore] for a sealed backup (one
	// written by an encrypted store) when this store has no key or another
	// key than the one the backup was sealed with. Nothing is loaded.
	ErrBackupKey = errors.New("kv: backup was sealed with another key")

	// ErrBulkLoadFailed is returned by every call on a store whose
	// [DB.BulkLoad] failed and could not drop what it had written: close
	// the store; the next [Open] removes what the load wrote, and the
	// store is empty and usable again.
	ErrBulkLoadFailed = errors.New("kv: a bulk load failed and could not be undone")

	// ErrBadBackup is returned by [DB.Restore] for a stream that is not one
	// [DB.Backup] wrote, or a damaged one.
	ErrBadBackup = errors.New("kv: not a backup stream, or a damaged one")

	// ErrCorrupt is returned by [Open] when a file of the store is damaged
	// (a table or value-log checksum fails, a truncated table, a write-ahead
	// log with records that could not be replayed, or missing or cut short
	// in a store that was not closed, an unreadable manifest),
	// and by reads ([Txn.Get], [Iterator.Value]) of a value whose checksum
	// fails. The message names the file. Nothing is repaired or dropped:
	// restore the store from a backup, or move the named file aside knowing
	// that its data is lost.
	ErrCorrupt = errors.New("kv: corrupt file")

	// ErrDiskFull is returned by [DB.Update] when the disk holding the
	// store has less free space than the store keeps in reserve for
	// Badger's memtables, flushes and compactions, and by [Open] when a
	// store is opened on such a disk. Nothing is written; reads go on, and
	// writes succeed again once space is freed.
	ErrDiskFull = errors.New("kv: disk full")

	// ErrNeedsRecovery is returned by [Open] with [Options.ReadOnly] for a
	// store that must be written before it can be read: it was not closed
	// (Badger replays and cuts its write-ahead logs at open), or a bulk
	// load did not finish. Open it read-write once.
	ErrNeedsRecovery = errors.New("kv: the store needs a read-write open first")

	// ErrNotDurable is returned by [DB.Update] (and [DB.Sync]) when the
	// commit succeeded, and is visible to other transactions, but the
	// fsync that was to make it durable failed: a crash of the machine
	// may lose it. Do not retry as if nothing was written. After a failed
	// fsync the kernel may have dropped the pages it could not write, so
	// every later write is refused until the store is reopened.
	ErrNotDurable = errors.New("kv: committed, but not synced to disk")

	// ErrStalled is returned by [DB.Close] when a compaction's (or a
	// [DB.BulkLoad]'s) call into Badger, which takes no context, has not
	// returned within 20 s
	// (issue 26: a damaged value-log GC file made one spin for ever).
	// The store is closed to new calls and synced (unless calls wedged in
	// Badger still run: a GC that never returns holds Badger's value-log
	// lock, which an iterator's Close may wait for), but Badger is left
	// open and the directory locked: exit the process (the store then
	// opens as after a crash, which loses no synced write), or call
	// Close again once the call has returned.
	ErrStalled = errors.New("kv: a background call into Badger has stalled")
)
