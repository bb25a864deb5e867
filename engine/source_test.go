package engine

import (
	"bytes"
	"errors"
	"sync"
	"testing"
)

// putOne writes one record of vector v and returns PutRecord's error.
func putOne(db *DB, v []float32) error {
	return db.Update(ctxb, func(tx *Tx) error {
		_, err := tx.PutRecord(vscope, "", Record{Text: "x", Vector: v})
		return err
	})
}

// TestVectorSourceRecorded: a store records the source of its first record
// (not at Open: an empty store stays empty), keeps it across reopens, and
// refuses records from an incompatible source without writing them; a DB
// with no source checks nothing.
func TestVectorSourceRecorded(t *testing.T) {
	dir := t.TempDir()
	a := VectorSource{Provider: "static", Model: "8-aaaa", Dimensions: 8}
	b := VectorSource{Provider: "static", Model: "8-bbbb", Dimensions: 8}
	v := randVecs(1, 1, 8)[0]

	db := openDisk(t, dir, &Options{VectorSource: a})
	if s, ok := db.VectorSource(); ok {
		t.Fatalf("new store: recorded %v before any record", s)
	}
	// An aborted first write records nothing.
	errAbort := errors.New("abort")
	err := db.Update(ctxb, func(tx *Tx) error {
		if _, err := tx.PutRecord(vscope, "", Record{Text: "x", Vector: v}); err != nil {
			return err
		}
		return errAbort
	})
	if !errors.Is(err, errAbort) {
		t.Fatal(err)
	}
	if s, ok := db.VectorSource(); ok {
		t.Fatalf("aborted write recorded %v", s)
	}
	if err := putOne(db, v); err != nil {
		t.Fatal(err)
	}
	if s, ok := db.VectorSource(); !ok || s != a {
		t.Fatalf("after the first record: %v %v, want %v", s, ok, a)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	// Reopened with another source: the recorded one is reported, and a
	// record is refused and not written.
	db = openDisk(t, dir, &Options{VectorSource: b})
	if s, ok := db.VectorSource(); !ok || s != a {
		t.Fatalf("reopened: %v %v, want %v", s, ok, a)
	}
	if err := putOne(db, v); !errors.Is(err, ErrVectorSourceMismatch) {
		t.Fatalf("record from another source: %v, want ErrVectorSourceMismatch", err)
	}
	if n := countRecords(t, db); n != 1 {
		t.Fatalf("%d records after the refused write, want 1", n)
	}
	// A dimension-less description of the same model is compatible.
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openDisk(t, dir, &Options{VectorSource: VectorSource{Provider: a.Provider, Model: a.Model}})
	if err := putOne(db, v); err != nil {
		t.Fatalf("same model, dimension unknown: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// No source: no check.
	db = openDisk(t, dir, nil)
	defer db.Close()
	if err := putOne(db, v); err != nil {
		t.Fatalf("no source: %v", err)
	}
	if n := countRecords(t, db); n != 3 {
		t.Fatalf("%d records, want 3", n)
	}
}

// countRecords counts the records of vscope's default space.
func countRecords(t *testing.T, db *DB) int {
	t.Helper()
	n := 0
	err := db.View(ctxb, func(tx *Tx) error {
		return tx.ScanRecords(vscope, "", [16]byte{}, func(Record) (bool, error) { n++; return true, nil })
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// TestVectorSourceCompatible is the table of [VectorSource.Compatible].
func TestVectorSourceCompatible(t *testing.T) {
	base := VectorSource{Provider: "ollama", Model: "nomic-embed-text", Dimensions: 768}
	for _, c := range []struct {
		o    VectorSource
		want bool
	}{
		{base, true},
		{VectorSource{Provider: "ollama", Model: "nomic-embed-text"}, true},
		{VectorSource{Provider: "ollama", Model: "nomic-embed-text", Dimensions: 512}, false},
		{VectorSource{Provider: "openai", Model: "nomic-embed-text", Dimensions: 768}, false},
		{VectorSource{Provider: "ollama", Model: "mxbai-embed-large", Dimensions: 768}, false},
	} {
		if got := base.Compatible(c.o); got != c.want {
			t.Errorf("%v compatible with %v: %v, want %v", base, c.o, got, c.want)
		}
		if got := c.o.Compatible(base); got != c.want {
			t.Errorf("not symmetric for %v", c.o)
		}
	}
}

// TestVectorSourceConcurrentFirst: many first writes at once all succeed
// and record one source.
func TestVectorSourceConcurrentFirst(t *testing.T) {
	a := VectorSource{Provider: "hashing", Model: "v1-8", Dimensions: 8}
	db := openDisk(t, t.TempDir(), &Options{VectorSource: a})
	defer db.Close()
	vecs := randVecs(2, 16, 8)
	var wg sync.WaitGroup
	errs := make([]error, len(vecs))
	for i := range vecs {
		wg.Go(func() { errs[i] = putOne(db, vecs[i]) })
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if s, ok := db.VectorSource(); !ok || s != a {
		t.Fatalf("recorded %v %v", s, ok)
	}
	if n := countRecords(t, db); n != len(vecs) {
		t.Fatalf("%d records, want %d", n, len(vecs))
	}
}

// TestVectorSourceRestore: a restored store keeps its source, and the DB
// it was restored into refuses records from its own, other source.
func TestVectorSourceRestore(t *testing.T) {
	a := VectorSource{Provider: "static", Model: "8-aaaa", Dimensions: 8}
	b := VectorSource{Provider: "hashing", Model: "v1-8", Dimensions: 8}
	v := randVecs(3, 1, 8)[0]
	src := openDisk(t, t.TempDir(), &Options{VectorSource: a})
	if err := putOne(src, v); err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	if err := src.Backup(ctxb, &buf); err != nil {
		t.Fatal(err)
	}
	if err := src.Close(); err != nil {
		t.Fatal(err)
	}
	dst := openDisk(t, t.TempDir(), &Options{VectorSource: b})
	defer dst.Close()
	if err := dst.Restore(ctxb, &buf); err != nil {
		t.Fatal(err)
	}
	if s, ok := dst.VectorSource(); !ok || s != a {
		t.Fatalf("restored: %v %v, want %v", s, ok, a)
	}
	if err := putOne(dst, v); !errors.Is(err, ErrVectorSourceMismatch) {
		t.Fatalf("write after restore: %v, want ErrVectorSourceMismatch", err)
	}
}

// TestVectorSourceBad: a bad source in the options is refused at Open, and
// a damaged recorded one makes Open fail with ErrCorrupt.
func TestVectorSourceBad(t *testing.T) {
	for _, s := range []VectorSource{
		{Model: "m"},
		{Provider: "p\x00", Model: "m"},
		{Provider: "p", Dimensions: -1},
		{Provider: "p", Dimensions: 1 << 20},
	} {
		if _, err := Open("", &Options{VectorSource: s}); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("%+v: %v, want ErrInvalidOptions", s, err)
		}
	}
	for _, v := range []string{"", "{", `{"provider":""}`, `{"provider":"p","dimensions":-3}`} {
		dir := t.TempDir()
		db := openDisk(t, dir, nil)
		if err := db.Update(ctxb, func(tx *Tx) error { return tx.Set(vectorSourceKey, []byte(v)) }); err != nil {
			t.Fatal(err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		if db, err := Open(dir, nil); !errors.Is(err, ErrCorrupt) {
			if err == nil {
				db.Close()
			}
			t.Errorf("recorded %q: Open %v, want ErrCorrupt", v, err)
		}
	}
}
