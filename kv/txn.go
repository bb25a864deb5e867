package kv

import (
	"time"
)

// Txn is a transaction handed to the function given to [DB.Update] or
// [DB.View]. It is valid only until that function returns and is not safe
// for concurrent use.
type Txn struct {
	impl      txnImpl
	update    bool
	iterators []*Iterator
	db        *DB
	onEnd     []func(Outcome)
}

// Outcome is how a read-write transaction ended, as told to the functions
// registered with [Txn.OnEnd].
type Outcome uint8

// Outcomes.
const (
	// Aborted: nothing the transaction wrote is stored (fn failed or
	// panicked, or the commit conflicted).
	Aborted Outcome = iota
	// Committed: every write is visible to transactions that begin after.
	Committed
	// Unknown: the commit failed in a way that may have stored it (a
	// PostgreSQL connection lost with COMMIT sent, a Badger write error).
	Unknown
)

// String names the outcome.
func (o Outcome) String() string {
	switch o {
	case Aborted:
		return "aborted"
	case Committed:
		return "committed"
	case Unknown:
		return "unknown"
	}
	return "outcome(?)"
}

// OnEnd registers fn to be called once when the transaction ends, with
// how it ended: right after the commit is visible (before [DB.Update]
// waits for the disk), or when it aborts, panics included. A read-only
// transaction ends Aborted. Functions run in the order registered, on the
// goroutine that ran the transaction, after the Txn is no longer usable;
// they must not block. It is how a cache of what a transaction writes (an
// in-memory index) learns which writes are visible.
func (tx *Txn) OnEnd(fn func(Outcome)) { tx.onEnd = append(tx.onEnd, fn) }

// end calls the functions registered with OnEnd, once.
func (tx *Txn) end(o Outcome) {
	fns := tx.onEnd
	tx.onEnd = nil
	for _, fn := range fns {
		fn(o)
	}
}

// DB returns the store the transaction belongs to, so that a cache keyed
// by store can tell two stores apart.
func (tx *Txn) DB() *DB { return tx.db }

// Get returns a copy of the value stored under key, or [ErrNotFound].
func (tx *Txn) Get(key []byte) ([]byte, error) {
	if len(key) == 0 {
		return nil, ErrEmptyKey
	}
	return tx.impl.get(key, nil)
}

// GetFunc calls fn with the value stored under key, or returns
// [ErrNotFound] without calling it. The value is the transaction's own
// buffer, not a copy: it is valid only while fn runs, and fn must neither
// modify nor keep it (it copies what it keeps). It saves the copy [Txn.Get]
// makes, for a reader that decodes the value into fields of its own.
// An error fn returns is returned unchanged.
func (tx *Txn) GetFunc(key []byte, fn func(value []byte) error) error {
	if len(key) == 0 {
		return ErrEmptyKey
	}
	return tx.impl.getFunc(key, fn)
}

// Has reports whether key exists, without reading its value.
func (tx *Txn) Has(key []byte) (bool, error) {
	if len(key) == 0 {
		return false, ErrEmptyKey
	}
	return tx.impl.has(key)
}

// Expiry returns when key expires, the zero time if it never does, or
// [ErrNotFound].
func (tx *Txn) Expiry(key []byte) (time.Time, error) {
	if len(key) == 0 {
		return time.Time{}, ErrEmptyKey
	}
	return tx.impl.expiry(key)
}

// Set stores value under key. Both are copied.
func (tx *Txn) Set(key, value []byte) error {
	return tx.SetTTL(key, value, 0)
}

// SetTTL stores value under key so that it expires after ttl: it stays
// readable for at least ttl and at most ttl plus one second (expiry is
// kept in whole Unix seconds). A ttl of 0 never expires. Both are copied.
func (tx *Txn) SetTTL(key, value []byte, ttl time.Duration) error {
	if !tx.update {
		return ErrReadOnly
	}
	if len(key) == 0 {
		return ErrEmptyKey
	}
	var expires uint64
	if ttl > 0 {
		// Not truncated to the second: Badger treats an entry as expired
		// once its second has begun, so a 1 s TTL could lapse within
		// milliseconds. Round up instead.
		expires = uint64(time.Now().Add(ttl).Unix()) + 1
	}
	return tx.impl.set(key, value, expires)
}

// Delete removes key. Deleting a missing key is not an error.
func (tx *Txn) Delete(key []byte) error {
	if !tx.update {
		return ErrReadOnly
	}
	if len(key) == 0 {
		return ErrEmptyKey
	}
	return tx.impl.delete(key)
}

func (tx *Txn) closeIterators() {
	for _, it := range tx.iterators {
		it.Close()
	}
	tx.iterators = nil
}

func clone(b []byte) []byte {
	if b == nil {
		return []byte{}
	}
	return append(make([]byte, 0, len(b)), b...)
}
