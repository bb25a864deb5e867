package kv

import (
	"time"
)

// IterOptions configures an [Iterator].
type IterOptions struct {
	// Prefix limits the iterator to keys that start with it.
	Prefix []byte
	// Reverse iterates from the largest key down.
	Reverse bool
	// KeysOnly skips prefetching values; [Iterator.Value] still works.
	KeysOnly bool
	// Prefetch is how many values to read ahead when KeysOnly is false.
	// Zero means 16.
	Prefetch int
}

// Iterator walks the keys of a transaction in order. It is not safe for
// concurrent use; close it before the transaction ends (the transaction
// closes any left open).
//
//	it := tx.NewIterator(kv.IterOptions{Prefix: p})
//	defer it.Close()
//	for it.Seek(nil); it.Valid(); it.Next() { ... }
type Iterator struct {
	impl   iterImpl
	closed bool
}

// NewIterator returns an iterator over the transaction's snapshot. Call
// [Iterator.Seek] before reading. Writes the transaction makes while the
// iterator is open, under its prefix and ahead of it, show up on
// PostgreSQL (each page is read after them) but not on Badger: do not
// rely on either.
func (tx *Txn) NewIterator(opts IterOptions) *Iterator {
	opts.Prefix = clone(opts.Prefix) // a backend may keep it: the caller may reuse theirs
	if opts.Prefetch <= 0 {
		opts.Prefetch = 16
	}
	it := &Iterator{impl: tx.impl.iterator(opts)}
	tx.iterators = append(tx.iterators, it)
	return it
}

// Seek positions the iterator at the first key at or after key (forward) or
// the last key at or before key (reverse). A nil key starts at the first key
// of the prefix (forward) or its last key (reverse).
func (it *Iterator) Seek(key []byte) { it.impl.seek(key) }

// Valid reports whether the iterator is on a key with the prefix.
func (it *Iterator) Valid() bool { return !it.closed && it.impl.valid() }

// Next moves to the next key.
func (it *Iterator) Next() { it.impl.next() }

// Key returns the current key. It is valid only until the next call to Next
// or Seek; copy it to keep it.
func (it *Iterator) Key() []byte { return it.impl.key() }

// Value appends the current value to dst and returns the result. A value
// whose stored checksum fails is [ErrCorrupt].
func (it *Iterator) Value(dst []byte) ([]byte, error) { return it.impl.value(dst) }

// ValueSize returns the length of the current value, what [Iterator.Value]
// would append, without reading the value where the backend can: Badger
// takes it from the key's entry (a value kept in its value log, over
// ValueThreshold, is estimated from the entry's length, within a few
// bytes); PostgreSQL sends each value's length with the page of keys, so
// a keys-only scan that sizes values costs no round trip per value.
func (it *Iterator) ValueSize() int64 { return it.impl.valueSize() }

// ExpiresAt returns when the current key expires; the zero time if never.
func (it *Iterator) ExpiresAt() time.Time { return it.impl.expiresAt() }

// Close releases the iterator. Calling it again does nothing.
func (it *Iterator) Close() {
	if it.closed {
		return
	}
	it.closed = true
	it.impl.close()
}

// PrefixEnd returns the smallest key greater than every key that starts
// with p, or nil when there is none (p is empty or all 0xFF).
func PrefixEnd(p []byte) []byte {
	s := clone(p)
	for i := len(s) - 1; i >= 0; i-- {
		if s[i] != 0xFF {
			s[i]++
			return s[:i+1]
		}
	}
	return nil
}
