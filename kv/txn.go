package kv

import (
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// Txn is a transaction handed to the function given to [DB.Update] or
// [DB.View]. It is valid only until that function returns and is not safe
// for concurrent use.
type Txn struct {
	btx       *badger.Txn
	update    bool
	iterators []*Iterator
	log       *badgerLogger
	// bigValue is the value length from which a write may go to Badger's
	// value log (half its threshold, to be safe), and vlog is set once one
	// did: only then must the commit's sync include the value log.
	bigValue int
	vlog     bool
}

// Get returns a copy of the value stored under key, or [ErrNotFound].
func (tx *Txn) Get(key []byte) ([]byte, error) {
	if len(key) == 0 {
		return nil, ErrEmptyKey
	}
	item, err := tx.btx.Get(key)
	if err != nil {
		return nil, convertError(err)
	}
	return tx.value(item, nil)
}

// value appends item's value to dst. Badger returns an empty value and no
// error when it cannot read a value from the value log (see
// badgerLogger): a value-log item (ValueSize above zero) read as empty is
// reported as ErrCorrupt.
func (tx *Txn) value(item *badger.Item, dst []byte) ([]byte, error) {
	n := len(dst)
	v, err := item.ValueCopy(dst)
	if err != nil {
		return v, convertError(err)
	}
	if len(v) == n && item.ValueSize() > 0 {
		if msg := tx.log.lastReadError(); msg != "" {
			return v, corruptRead(errors.New(msg))
		}
		return v, fmt.Errorf("%w: the value of key %q could not be read from the value log", ErrCorrupt, item.Key())
	}
	return v, nil
}

// Has reports whether key exists, without reading its value.
func (tx *Txn) Has(key []byte) (bool, error) {
	if len(key) == 0 {
		return false, ErrEmptyKey
	}
	_, err := tx.btx.Get(key)
	switch err = convertError(err); err {
	case nil:
		return true, nil
	case ErrNotFound:
		return false, nil
	default:
		return false, err
	}
}

// Expiry returns when key expires, the zero time if it never does, or
// [ErrNotFound].
func (tx *Txn) Expiry(key []byte) (time.Time, error) {
	if len(key) == 0 {
		return time.Time{}, ErrEmptyKey
	}
	item, err := tx.btx.Get(key)
	if err != nil {
		return time.Time{}, convertError(err)
	}
	if s := item.ExpiresAt(); s != 0 {
		return time.Unix(int64(s), 0), nil
	}
	return time.Time{}, nil
}

// Set stores value under key. Both are copied.
func (tx *Txn) Set(key, value []byte) error {
	return tx.SetTTL(key, value, 0)
}

// SetTTL stores value under key so that it expires after ttl: it stays
// readable for at least ttl and at most ttl plus one second (Badger keeps
// expiry in whole Unix seconds). A ttl of 0 never expires. Both are copied.
func (tx *Txn) SetTTL(key, value []byte, ttl time.Duration) error {
	if !tx.update {
		return ErrReadOnly
	}
	if len(key) == 0 {
		return ErrEmptyKey
	}
	if len(value) >= tx.bigValue {
		tx.vlog = true
	}
	e := badger.NewEntry(clone(key), clone(value))
	if ttl > 0 {
		// Not e.WithTTL: it truncates to the second, and Badger treats an
		// entry as expired once its second has begun, so a 1 s TTL could
		// lapse within milliseconds. Round up instead.
		e.ExpiresAt = uint64(time.Now().Add(ttl).Unix()) + 1
	}
	return convertError(tx.btx.SetEntry(e))
}

// Delete removes key. Deleting a missing key is not an error.
func (tx *Txn) Delete(key []byte) error {
	if !tx.update {
		return ErrReadOnly
	}
	if len(key) == 0 {
		return ErrEmptyKey
	}
	return convertError(tx.btx.Delete(clone(key)))
}

// discard closes any iterator the caller left open (Badger panics on Discard
// otherwise, which would hide the caller's own panic) and discards the
// transaction. It runs deferred, after Commit too.
func (tx *Txn) discard() {
	tx.closeIterators()
	tx.btx.Discard()
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
