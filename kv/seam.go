package kv

import "time"

// The storage seam. A [DB] is Badger (in a directory or in memory) or
// PostgreSQL ([OpenPostgres]); a [Txn] and an [Iterator] hand their work
// to one of the two implementations of txnImpl and iterImpl below, after
// the checks every backend shares (empty key, read-only transaction, a
// closed iterator). Callers see one API: package engine and package graph
// never know which backend holds their keys.

// txnImpl is one transaction of a backend. Keys are never empty and writes
// happen only in read-write transactions: Txn checks both first.
type txnImpl interface {
	// get appends the value of key to dst, or returns ErrNotFound.
	get(key, dst []byte) ([]byte, error)
	// getFunc calls fn with the value of key (valid only during the call),
	// or returns ErrNotFound; fn's error is returned unchanged.
	getFunc(key []byte, fn func(value []byte) error) error
	// has reports whether key exists.
	has(key []byte) (bool, error)
	// expiry returns when key expires (zero for never), or ErrNotFound.
	expiry(key []byte) (time.Time, error)
	// set stores value under key, expiring at expiresAt (Unix seconds;
	// zero for never). It may keep neither slice.
	set(key, value []byte, expiresAt uint64) error
	// delete removes key; a missing key is not an error.
	delete(key []byte) error
	// iterator opens an iterator; opts.Prefix is the caller's own copy.
	iterator(opts IterOptions) iterImpl
}

// iterImpl is an iterator of a backend, as [Iterator] documents it.
type iterImpl interface {
	seek(key []byte)
	valid() bool
	next()
	key() []byte
	value(dst []byte) ([]byte, error)
	valueSize() int64
	expiresAt() time.Time
	close()
}

// expiryTime converts a stored expiry in Unix seconds.
func expiryTime(s uint64) time.Time {
	if s == 0 {
		return time.Time{}
	}
	return time.Unix(int64(s), 0)
}
