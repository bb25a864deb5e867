package kv

import (
	"bytes"
	"errors"
	"fmt"
	"time"

	"github.com/dgraph-io/badger/v4"
)

// badgerTxn is a Badger transaction behind a [Txn].
type badgerTxn struct {
	btx *badger.Txn
	log *badgerLogger
	// bigValue is the value length from which a write may go to Badger's
	// value log (half its threshold, to be safe), and vlog is set once one
	// did: only then must the commit's sync include the value log.
	bigValue int
	vlog     bool
}

func (t *badgerTxn) get(key, dst []byte) ([]byte, error) {
	item, err := t.btx.Get(key)
	if err != nil {
		return nil, convertError(err)
	}
	return t.value(item, dst)
}

// value appends item's value to dst. Badger returns an empty value and no
// error when it cannot read a value from the value log (see
// badgerLogger): a value-log item (ValueSize above zero) read as empty is
// reported as ErrCorrupt.
func (t *badgerTxn) value(item *badger.Item, dst []byte) ([]byte, error) {
	n := len(dst)
	v, err := item.ValueCopy(dst)
	if err != nil {
		return v, convertError(err)
	}
	if len(v) == n && item.ValueSize() > 0 {
		if msg := t.log.lastReadError(); msg != "" {
			return v, corruptRead(errors.New(msg))
		}
		return v, fmt.Errorf("%w: the value of key %q could not be read from the value log", ErrCorrupt, item.Key())
	}
	return v, nil
}

func (t *badgerTxn) getFunc(key []byte, fn func(value []byte) error) error {
	item, err := t.btx.Get(key)
	if err != nil {
		return convertError(err)
	}
	var fnErr error
	called := false
	err = item.Value(func(v []byte) error {
		if len(v) == 0 && item.ValueSize() > 0 {
			// As in value: Badger logs a value-log read failure and
			// returns an empty value.
			return nil
		}
		called = true
		fnErr = fn(v)
		return fnErr
	})
	switch {
	case called:
		return fnErr
	case err != nil:
		return convertError(err)
	}
	if msg := t.log.lastReadError(); msg != "" {
		return corruptRead(errors.New(msg))
	}
	return fmt.Errorf("%w: the value of key %q could not be read from the value log", ErrCorrupt, item.Key())
}

func (t *badgerTxn) has(key []byte) (bool, error) {
	_, err := t.btx.Get(key)
	switch err = convertError(err); err {
	case nil:
		return true, nil
	case ErrNotFound:
		return false, nil
	default:
		return false, err
	}
}

func (t *badgerTxn) expiry(key []byte) (time.Time, error) {
	item, err := t.btx.Get(key)
	if err != nil {
		return time.Time{}, convertError(err)
	}
	return expiryTime(item.ExpiresAt()), nil
}

func (t *badgerTxn) set(key, value []byte, expiresAt uint64) error {
	if len(value) >= t.bigValue {
		t.vlog = true
	}
	e := badger.NewEntry(clone(key), clone(value))
	e.ExpiresAt = expiresAt
	return convertError(t.btx.SetEntry(e))
}

func (t *badgerTxn) delete(key []byte) error {
	return convertError(t.btx.Delete(clone(key)))
}

func (t *badgerTxn) iterator(opts IterOptions) iterImpl {
	bo := badger.DefaultIteratorOptions
	bo.Reverse = opts.Reverse
	bo.Prefix = opts.Prefix
	bo.PrefetchValues = !opts.KeysOnly
	bo.PrefetchSize = opts.Prefetch
	return &badgerIter{tx: t, it: t.btx.NewIterator(bo), prefix: opts.Prefix, rev: opts.Reverse}
}

// badgerMaxKey is Badger's longest key (txn.go's maxKeySize).
const badgerMaxKey = 65000

// badgerIter is a Badger iterator behind an [Iterator].
type badgerIter struct {
	tx     *badgerTxn
	it     *badger.Iterator
	prefix []byte
	rev    bool
}

func (it *badgerIter) seek(key []byte) {
	switch {
	case key != nil:
		it.it.Seek(key)
	case !it.rev:
		it.it.Seek(it.prefix)
	default:
		// Reverse from the end of the prefix: seek to the smallest key past
		// every key with the prefix and step back over it if it exists.
		succ := PrefixEnd(it.prefix)
		if succ == nil && len(it.prefix) == 0 {
			it.it.Rewind()
			return
		}
		if succ == nil {
			// A prefix of 0xFF bytes alone has no successor, and Badger's
			// reverse Rewind seeks to the prefix itself, before every
			// longer key with it: seek past the longest key there can be
			// instead (found by TestPostgresModelAgainstBadger).
			it.it.Seek(bytes.Repeat([]byte{0xFF}, len(it.prefix)+badgerMaxKey+1))
			return
		}
		//
		// Badger's Valid is false on succ (it lacks the prefix), so
		// landing there looks like the end: the scan came back empty
		// whenever succ was a key (found by TestPostgresModelAgainstBadger).
		// Not valid after the seek means no key at or below succ, a key
		// below the prefix, or succ itself; only succ's existence tells
		// the last apart, and Item panics on the first.
		it.it.Seek(succ)
		if !it.it.Valid() {
			if _, err := it.tx.btx.Get(succ); err == nil {
				it.it.Next()
			}
		}
	}
}

func (it *badgerIter) valid() bool                      { return it.it.ValidForPrefix(it.prefix) }
func (it *badgerIter) next()                            { it.it.Next() }
func (it *badgerIter) key() []byte                      { return it.it.Item().Key() }
func (it *badgerIter) value(dst []byte) ([]byte, error) { return it.tx.value(it.it.Item(), dst) }
func (it *badgerIter) valueSize() int64                 { return it.it.Item().ValueSize() }
func (it *badgerIter) expiresAt() time.Time             { return expiryTime(it.it.Item().ExpiresAt()) }
func (it *badgerIter) close()                           { it.it.Close() }
