package engine

import (
	"errors"
	"fmt"

	"github.com/engramdb/engram/kv"
)

// The errors below are shared by this package and package memory, which
// re-exports them, so that errors.Is works the same at both layers.
var (
	// ErrInvalidScope is returned for a scope whose ids are missing where the
	// call needs them, too long, not UTF-8, or hold control characters.
	ErrInvalidScope = errors.New("engine: invalid scope")

	// ErrClosed is returned by every call on a closed DB.
	ErrClosed = errors.New("engine: closed")

	// ErrNotFound is returned by lookups of a key or record that does not
	// exist (or has expired).
	ErrNotFound = errors.New("engine: not found")

	// ErrTooLarge is returned when an entry or a transaction exceeds a size
	// limit. Nothing is written.
	ErrTooLarge = errors.New("engine: too large")

	// ErrConflict is returned by Update when a transaction still conflicted
	// with concurrent writers after the retries.
	ErrConflict = errors.New("engine: transaction conflict")

	// ErrLocked is returned by Open when another process has the directory.
	ErrLocked = errors.New("engine: store is locked by another process")

	// ErrEncryptionKey is returned by Open for a wrong or missing key.
	ErrEncryptionKey = errors.New("engine: encryption key mismatch")

	// ErrInvalidOptions is returned by Open for bad options.
	ErrInvalidOptions = errors.New("engine: invalid options")

	// ErrDimensionMismatch is returned for a vector whose length differs
	// from its partition's dimension, or an empty vector.
	ErrDimensionMismatch = errors.New("engine: dimension mismatch")

	// ErrVectorSourceMismatch is returned by [Tx.PutRecord] when the
	// store's vectors come from a [VectorSource] other than the DB's (see
	// [Options.VectorSource]); package memory returns it from Open for an
	// embedder other than the store's.
	ErrVectorSourceMismatch = errors.New("engine: vectors from another embedder")

	// ErrInvalidRecord is returned by PutRecord for a record that cannot be
	// stored (text or metadata not UTF-8, a non-finite vector component, a
	// bad metadata key or record id).
	ErrInvalidRecord = errors.New("engine: invalid record")

	// ErrInvalidTime is returned for a time the store cannot keep exactly:
	// times are stored as Unix nanoseconds in an int64, which hold
	// 1677-09-21 to 2262-04-11 (see [ValidateTime]). Callers wrap it in
	// their class of bad input ([ErrInvalidRecord], [ErrInvalidOptions]).
	ErrInvalidTime = errors.New("engine: time outside 1677-09-21..2262-04-11")

	// ErrCorrupt is returned when stored data cannot be decoded, and when a
	// file of the store is damaged (a checksum fails, a file is truncated):
	// by Open, or by the read that meets the damage. The message names the
	// file.
	ErrCorrupt = errors.New("engine: corrupt data")

	// ErrDiskFull is returned by writes when the disk holding the store is
	// too full to write safely; nothing is written, reads go on, and writes
	// work again once space is freed. Open returns it for a store on a
	// full disk.
	ErrDiskFull = errors.New("engine: disk full")

	// ErrNotDurable is returned by [DB.Update] when the transaction
	// committed, and is visible, but the fsync meant to make it durable
	// failed (see [kv.ErrNotDurable]): a crash of the machine may lose it.
	// Every later write is refused until the store is reopened.
	ErrNotDurable = errors.New("engine: committed, but not synced to disk")

	// ErrFenced is returned by a write, in a store in PostgreSQL, to a
	// partition whose lease this process no longer holds (another took
	// it over); nothing of the transaction was written. See
	// [kv.ErrFenced].
	ErrFenced = kv.ErrFenced

	// ErrLeaseHeld is returned by a write, in a store in PostgreSQL, to a
	// partition another live process holds; the error is a
	// *[LeaseHeldError] naming it.
	ErrLeaseHeld = kv.ErrLeaseHeld

	// ErrUnavailable is returned when a store in PostgreSQL cannot reach
	// its database; see [kv.ErrUnavailable].
	ErrUnavailable = kv.ErrUnavailable
)

// LeaseHeldError names the process that holds a partition's lease.
type LeaseHeldError = kv.LeaseHeldError

// convert maps kv's errors onto the shared sentinels, keeping kv's message
// (which names the directory, the holder's pid, the bad field) as detail.
// Errors of other kinds, such as those a caller's function returned, pass
// through unchanged.
func convert(err error) error {
	var sentinel error
	switch {
	case err == nil:
		return nil
	case errors.Is(err, kv.ErrNotFound):
		sentinel = ErrNotFound
	case errors.Is(err, kv.ErrClosed):
		sentinel = ErrClosed
	case errors.Is(err, kv.ErrTooLarge):
		sentinel = ErrTooLarge
	case errors.Is(err, kv.ErrConflict):
		sentinel = ErrConflict
	case errors.Is(err, kv.ErrLocked):
		sentinel = ErrLocked
	case errors.Is(err, kv.ErrEncryptionKey):
		sentinel = ErrEncryptionKey
	case errors.Is(err, kv.ErrInvalidOptions):
		sentinel = ErrInvalidOptions
	case errors.Is(err, kv.ErrCorrupt):
		sentinel = ErrCorrupt
	case errors.Is(err, kv.ErrDiskFull):
		sentinel = ErrDiskFull
	case errors.Is(err, kv.ErrNotDurable):
		sentinel = ErrNotDurable
	default:
		return err
	}
	if err == sentinel || sentinel == ErrNotFound {
		// Not-found is control flow on hot paths: no detail to add.
		return sentinel
	}
	// Both wrapped: callers match engine's sentinel, and Update still
	// knows a conflict that a statement inside the transaction reported
	// (PostgreSQL does) from kv's.
	return fmt.Errorf("%w (%w)", sentinel, err)
}
