package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// TestGetRecordFields: the fields and metadata values GetRecordFields
// reads are GetRecord's, for present and absent keys, a missing record
// and a bad id.
func TestGetRecordFields(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rec := Record{Text: "flight to Lisbon", Context: "where to?", Vector: []float32{1, 2, 3},
		Metadata: map[string]string{"memory": `{"id":"x"}`, "tokens": "o200k_base:4:16", "empty": ""},
		Time:     time.Unix(1700000000, 123).UTC()}
	var id string
	err = db.Update(ctxb, func(tx *Tx) (err error) {
		id, err = tx.PutRecord(vscope, "mem", rec)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	keys := []string{"tokens", "nope", "memory", "empty"}
	err = db.View(ctxb, func(tx *Tx) error {
		full, err := tx.GetRecord(vscope, "mem", id, nil)
		if err != nil {
			return err
		}
		vals := []string{"stale", "stale", "stale", "stale", "beyond"}
		r, err := tx.GetRecordFields(vscope, "mem", id, keys, vals)
		if err != nil {
			return err
		}
		if r.ID != id || r.Text != full.Text || !r.Time.Equal(full.Time) || r.Time.Location() != full.Time.Location() ||
			r.Vector != nil || r.Context != "" || r.Metadata != nil {
			t.Errorf("GetRecordFields = %+v, GetRecord = %+v", r, full)
		}
		for i, k := range keys {
			if vals[i] != full.Metadata[k] {
				t.Errorf("value of %q = %q, want %q", k, vals[i], full.Metadata[k])
			}
		}
		if vals[4] != "beyond" {
			t.Errorf("a value past len(keys) was written: %q", vals[4])
		}
		if _, err := tx.GetRecordFields(vscope, "mem", "01HZZZZZZZZZZZZZZZZZZZZZZZ", keys, vals); !errors.Is(err, ErrNotFound) {
			t.Errorf("missing record: %v", err)
		}
		if _, err := tx.GetRecordFields(vscope, "mem", "not-a-ulid", keys, vals); !errors.Is(err, ErrNotFound) {
			t.Errorf("bad id: %v", err)
		}
		if _, err := tx.GetRecordFields(vscope, "mem", id, keys, vals[:1]); !errors.Is(err, ErrInvalidRecord) {
			t.Errorf("short vals: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FuzzDecodeRecordFields: decodeRecordFields fails exactly when
// decodeRecord does, with ErrCorrupt, and otherwise gives its Text, Time
// and metadata values, "" for absent keys; the input is left unchanged.
func FuzzDecodeRecordFields(f *testing.F) {
	f.Add(encodeRecord(&Record{Text: "hi", Vector: []float32{1, 2}, Metadata: map[string]string{"k": "v", "tokens": "x:1:2"}, Time: time.Unix(5, 0)}))
	f.Add(encodeRecord(&Record{}))
	f.Add(encodeRecord(&Record{Text: "answer", Context: "question", Vector: []float32{3}, Metadata: map[string]string{"memory": "{}"}}))
	v1 := encodeRecord(&Record{Text: "t", Vector: []float32{1}})
	v1 = append(append([]byte{recordFormatV1}, v1[1:1+8+1+4+2]...), v1[1+8+1+4+2+1:]...)
	f.Add(v1)
	f.Add([]byte{recordFormat})
	keys := []string{"k", "memory", "tokens", ""}
	f.Fuzz(func(t *testing.T, b []byte) {
		want, werr := decodeRecord(b)
		in := string(b)
		vals := make([]string, len(keys))
		got, err := decodeRecordFields(b, keys, vals)
		if string(b) != in {
			t.Fatal("the input was changed")
		}
		if (err != nil) != (werr != nil) {
			t.Fatalf("decodeRecordFields error %v, decodeRecord error %v", err, werr)
		}
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			for i, v := range vals {
				if v != "" {
					t.Fatalf("value %d is %q after an error", i, v)
				}
			}
			return
		}
		if got.Text != want.Text || !got.Time.Equal(want.Time) || got.Time.Location() != want.Time.Location() {
			t.Fatalf("got %+v, want %+v", got, want)
		}
		for i, k := range keys {
			if vals[i] != want.Metadata[k] {
				t.Fatalf("value of %q = %q, want %q", k, vals[i], want.Metadata[k])
			}
		}
	})
}

// TestSetRecordMetadata: one metadata key changes; the text, vector, time,
// other metadata, expiry and the indexes do not. A missing record is
// ErrNotFound.
func TestSetRecordMetadata(t *testing.T) {
	db := openMemDB(t)
	exp := time.Now().Add(time.Hour)
	rec := Record{Text: "flight to Lisbon", Vector: []float32{1, 2, 3}, Metadata: map[string]string{"session": "s1"},
		Time: time.Unix(1700000000, 0).UTC(), ExpiresAt: exp}
	var id string
	if err := db.Update(ctxb, func(tx *Tx) (err error) {
		id, err = tx.PutRecord(vscope, "mem", rec)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Update(ctxb, func(tx *Tx) error {
		return tx.SetRecordMetadata(vscope, "mem", id, "tokens", "o200k_base:4:16")
	}); err != nil {
		t.Fatal(err)
	}
	err := db.View(ctxb, func(tx *Tx) error {
		r, err := tx.GetRecord(vscope, "mem", id, nil)
		if err != nil {
			return err
		}
		if r.Text != rec.Text || !r.Time.Equal(rec.Time) || len(r.Vector) != 3 || r.Vector[2] != 3 ||
			r.Metadata["session"] != "s1" || r.Metadata["tokens"] != "o200k_base:4:16" || len(r.Metadata) != 2 {
			t.Errorf("record after SetRecordMetadata: %+v", r)
		}
		p, _ := recordPrefix(vscope, "mem")
		got, err := tx.KV().Expiry(Key(p, NSRecord, ulid.MustParse(id).Bytes()))
		if err != nil || got.Sub(exp).Abs() > 2*time.Second {
			t.Errorf("expiry %v, %v; want about %v", got, err, exp)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := db.SearchText(ctxb, vscope, "Lisbon", 1, &SearchOptions{Space: "mem"}); err != nil || len(hits) != 1 || hits[0].ID != id {
		t.Errorf("text search after SetRecordMetadata: %+v, %v", hits, err)
	}
	if hits, err := db.Search(ctxb, vscope, rec.Vector, 1, &SearchOptions{Space: "mem"}); err != nil || len(hits) != 1 || hits[0].ID != id {
		t.Errorf("vector search after SetRecordMetadata: %+v, %v", hits, err)
	}
	err = db.Update(ctxb, func(tx *Tx) error {
		return tx.SetRecordMetadata(vscope, "mem", ulid.Make().String(), "tokens", "x")
	})
	if !errors.Is(err, ErrNotFound) {
		t.Errorf("missing record: %v, want ErrNotFound", err)
	}
}
