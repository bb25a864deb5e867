package kv

import (
	"errors"
	"fmt"
)

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
	item, err := tx.btx.Get(key)
	if err != nil {
		return convertError(err)
	}
	var fnErr error
	called := false
	err = item.Value(func(v []byte) error {
		if len(v) == 0 && item.ValueSize() > 0 {
			// As in Txn.value: Badger logs a value-log read failure and
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
	if msg := tx.log.lastReadError(); msg != "" {
		return corruptRead(errors.New(msg))
	}
	return fmt.Errorf("%w: the value of key %q could not be read from the value log", ErrCorrupt, item.Key())
}
