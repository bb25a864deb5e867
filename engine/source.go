package engine

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
)

// VectorSource names what made a store's vectors: the embedder's provider
// and model, and the vectors' dimension. Vectors of two sources cannot be
// compared (a cosine between two models' vectors means nothing), so a store
// keeps the source of its first vector and refuses vectors of any other
// (see [Options.VectorSource]). It is a comparable value.
type VectorSource struct {
	// Provider names the embedding service or algorithm, such as
	// "hashing", "static", "ollama" or "openai".
	Provider string `json:"provider"`
	// Model names the model and anything else that changes the vectors,
	// such as "v1-384" for the hashing embedder or a hash of a static
	// model's table. It names no server: the same model served from
	// another host gives the same vectors.
	Model string `json:"model"`
	// Dimensions is the vectors' length, or 0 where it is not known before
	// the first vector (a network model configured without it).
	Dimensions int `json:"dimensions,omitempty"`
}

// IsZero reports whether s names no source.
func (s VectorSource) IsZero() bool { return s == VectorSource{} }

// String returns "provider/model" and the dimension when it is known.
func (s VectorSource) String() string {
	if s.Dimensions == 0 {
		return s.Provider + "/" + s.Model
	}
	return fmt.Sprintf("%s/%s (%d dimensions)", s.Provider, s.Model, s.Dimensions)
}

// Compatible reports whether vectors from s and o can share a store: the
// same provider and model, and the same dimension where both know it.
func (s VectorSource) Compatible(o VectorSource) bool {
	return s.Provider == o.Provider && s.Model == o.Model &&
		(s.Dimensions == 0 || o.Dimensions == 0 || s.Dimensions == o.Dimensions)
}

// validate reports what makes s unusable as [Options.VectorSource].
func (s VectorSource) validate() error {
	var errs []error
	if s.Provider == "" {
		errs = append(errs, errors.New("VectorSource.Provider is empty"))
	}
	if strings.ContainsRune(s.Provider+s.Model, 0) {
		errs = append(errs, errors.New("VectorSource holds a NUL byte"))
	}
	if s.Dimensions < 0 || s.Dimensions > maxRecordDim {
		errs = append(errs, fmt.Errorf("VectorSource.Dimensions %d is outside [0, %d]", s.Dimensions, maxRecordDim))
	}
	return errors.Join(errs...)
}

// vectorSourceKey holds the store's [VectorSource], as JSON: written with
// the first record that carries one, never changed after.
var vectorSourceKey = SystemKey(NSMeta, []byte("vector-source"))

// decodeVectorSource decodes the value of vectorSourceKey.
func decodeVectorSource(b []byte) (VectorSource, error) {
	var s VectorSource
	if err := json.Unmarshal(b, &s); err != nil {
		return VectorSource{}, fmt.Errorf("%w: the store's vector source: %v", ErrCorrupt, err)
	}
	if s.IsZero() || s.validate() != nil {
		return VectorSource{}, fmt.Errorf("%w: the store's vector source %q", ErrCorrupt, b)
	}
	return s, nil
}

// VectorSource returns the source the store's vectors come from, as the
// first record written with [Options.VectorSource] set recorded it; false
// when none is recorded (a new store, one written before sources were
// recorded, or only ever written without a source).
func (db *DB) VectorSource() (VectorSource, bool) {
	if s := db.source.recorded.Load(); s != nil {
		return *s, true
	}
	return VectorSource{}, false
}

// loadVectorSource reads the recorded source into db.source.recorded.
func (db *DB) loadVectorSource(ctx context.Context) error {
	return db.View(ctx, func(tx *Tx) error {
		b, err := tx.Get(vectorSourceKey)
		if errors.Is(err, ErrNotFound) {
			db.source.recorded.Store(nil)
			return nil
		}
		if err != nil {
			return err
		}
		s, err := decodeVectorSource(b)
		if err != nil {
			return err
		}
		db.source.recorded.Store(&s)
		return nil
	})
}

// checkSource is run by every write of a record: it fails with
// [ErrVectorSourceMismatch] when the store's vectors come from a source
// other than the DB's, and records the DB's source with the store's first
// record, in the same transaction.
func (tx *Tx) checkSource() error {
	want := tx.db.source.want
	if want.IsZero() || tx.sourceSet {
		return nil
	}
	rec := tx.db.source.recorded.Load()
	if rec == nil {
		// Read in the transaction: a concurrent first write that records
		// it conflicts with this one, and the retry sees it.
		b, err := tx.Get(vectorSourceKey)
		switch {
		case errors.Is(err, ErrNotFound):
			v, _ := json.Marshal(want) // plain strings and an int: cannot fail
			if err := tx.Set(vectorSourceKey, v); err != nil {
				return err
			}
			tx.sourceSet = true
			tx.OnCommit(func() { tx.db.source.recorded.CompareAndSwap(nil, &want) })
			return nil
		case err != nil:
			return err
		}
		s, err := decodeVectorSource(b)
		if err != nil {
			return err
		}
		rec = &s
	}
	if !rec.Compatible(want) {
		return fmt.Errorf("%w: the store's vectors come from %s, this one from %s", ErrVectorSourceMismatch, rec, want)
	}
	tx.sourceSet = true
	return nil
}
