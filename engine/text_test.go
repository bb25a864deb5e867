package engine

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

// textRecords puts n records whose text names their number ("note 17
// about topic-3") into space, and returns their ids by number.
func textRecords(t *testing.T, db *DB, space string, from, n int) map[int]string {
	t.Helper()
	vecs := randVecs(uint64(from+1), n, 8)
	ids := map[int]string{}
	err := db.Update(ctxb, func(tx *Tx) error {
		for i := range n {
			num := from + i
			id, err := tx.PutRecord(vscope, space, Record{
				Text:    fmt.Sprintf("note %d about topic-%d", num, num%7),
				Context: fmt.Sprintf("question q%d", num),
				Vector:  vecs[i],
			})
			if err != nil {
				return err
			}
			ids[num] = id
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

// findText asserts that a search for a record's number finds it first.
func findText(t *testing.T, db *DB, space string, ids map[int]string, what string) {
	t.Helper()
	for num, id := range ids {
		for _, q := range []string{fmt.Sprint(num), fmt.Sprintf("q%d", num)} {
			hits, err := db.SearchText(ctxb, vscope, q, 3, &SearchOptions{Space: space})
			if err != nil || len(hits) == 0 || hits[0].ID != id {
				t.Fatalf("%s: search %q: %+v, %v; want %s", what, q, hits, err, id)
			}
		}
	}
}

func TestSearchTextSpacesAndPersistence(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 20} // HNSW partitions, so snapshots
	db := openDisk(t, dir, opts)
	mem := textRecords(t, db, "mem", 0, 40)
	msg := textRecords(t, db, "msg", 1000, 30)
	def := textRecords(t, db, "", 2000, 5)
	findText(t, db, "mem", mem, "fresh")
	findText(t, db, "msg", msg, "fresh")
	findText(t, db, "", def, "fresh")
	// Spaces do not see each other.
	if hits, err := db.SearchText(ctxb, vscope, "1005", 5, &SearchOptions{Space: "mem"}); err != nil || len(hits) != 0 {
		t.Fatalf("text search of mem for a msg record = %+v, %v; want no hits and no error", hits, err)
	}
	if hits, err := db.Search(ctxb, vscope, randVecs(1001, 1, 8)[0], 40, &SearchOptions{Space: "mem"}); err != nil || len(hits) != 40 {
		t.Fatalf("vector search of mem: %d hits, %v; want 40", len(hits), err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	// Index snapshots are files under Dir(); a PostgreSQL store has none
	// (the reopen below then rebuilds from the records).
	if n := len(snapFiles(t, dir)); !kvtest.Postgres() && n != 2 {
		t.Fatalf("%d snapshot files, want 2 (mem and msg)", n)
	}

	// Reopen: snapshot plus replay of what came after.
	db = openDisk(t, dir, opts)
	for k, v := range textRecords(t, db, "mem", 40, 5) {
		mem[k] = v
	}
	err := db.Update(ctxb, func(tx *Tx) error { return tx.DeleteRecord(vscope, "mem", mem[7]) })
	if err != nil {
		t.Fatal(err)
	}
	gone := mem[7]
	delete(mem, 7)
	db.skipFinalSnapshot = true
	db.Close()

	db = openDisk(t, dir, opts)
	findText(t, db, "mem", mem, "snapshot + replay")
	findText(t, db, "msg", msg, "snapshot + replay")
	if hits, err := db.SearchText(ctxb, vscope, "note 7 topic-0", 50, &SearchOptions{Space: "mem"}); err != nil || len(hits) == 0 || containsID(hits, gone) {
		t.Fatalf("search after replay = %+v, %v; want the live records and not the deleted %s", hits, err, gone)
	}
	db.Close()

	// A corrupt snapshot means a rebuild from the records.
	for _, f := range snapFiles(t, dir) {
		b, _ := os.ReadFile(f)
		b[len(b)-3] ^= 0xFF
		os.WriteFile(f, b, 0o600)
	}
	db = openDisk(t, dir, opts)
	defer db.Close()
	findText(t, db, "mem", mem, "rebuild")
	findText(t, db, "msg", msg, "rebuild")
}

func containsID(hits []Hit, id string) bool {
	for _, h := range hits {
		if h.ID == id {
			return true
		}
	}
	return false
}

func TestSearchTextContextWeighsHalf(t *testing.T) {
	db := openMemDB(t)
	vec := randVecs(3, 3, 8)
	var inText, inContext string
	err := db.Update(ctxb, func(tx *Tx) error {
		var err error
		if inText, err = tx.PutRecord(vscope, "", Record{Text: "the pottery class", Vector: vec[0]}); err != nil {
			return err
		}
		if inContext, err = tx.PutRecord(vscope, "", Record{Text: "it was fun", Context: "how was the pottery class", Vector: vec[1]}); err != nil {
			return err
		}
		_, err = tx.PutRecord(vscope, "", Record{Text: "unrelated words here", Vector: vec[2]})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	hits, err := db.SearchText(ctxb, vscope, "pottery", 5, nil)
	if err != nil || len(hits) != 2 || hits[0].ID != inText || hits[1].ID != inContext || hits[1].Score >= hits[0].Score {
		t.Fatalf("hits %+v, %v", hits, err)
	}
	r, err := func() (r Record, err error) {
		err = db.View(ctxb, func(tx *Tx) error {
			r, err = tx.GetRecord(vscope, "", inContext, &GetRecordOptions{SkipVector: true})
			return err
		})
		return
	}()
	if err != nil || r.Context != "how was the pottery class" || r.Vector != nil {
		t.Fatalf("record %+v, %v", r, err)
	}
}

func TestSpaceAndExpiryErrors(t *testing.T) {
	db := openMemDB(t)
	v := randVecs(4, 1, 8)[0]
	err := db.Update(ctxb, func(tx *Tx) error {
		for _, space := range []string{"UPPER", "with space", "x\x00", "a-b", string(make([]byte, MaxSpaceLength+1))} {
			if _, err := tx.PutRecord(vscope, space, Record{Text: "x", Vector: v}); !errors.Is(err, ErrInvalidRecord) {
				return fmt.Errorf("space %q: %v", space, err)
			}
		}
		if _, err := tx.PutRecord(vscope, "ok_1", Record{Text: "x", Vector: v, ExpiresAt: time.Now().Add(-time.Second)}); !errors.Is(err, ErrInvalidRecord) {
			return fmt.Errorf("expired record: %v", err)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := db.SearchText(ctxb, vscope, "x", 0, nil); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("k 0: %v", err)
	}
	if hits, err := db.SearchText(ctxb, vscope, "the and of", 5, nil); err != nil || len(hits) != 0 {
		t.Fatalf("stop words only: %+v, %v", hits, err)
	}
}

func TestRecordExpires(t *testing.T) {
	if testing.Short() {
		t.Skip("waits 2 s for a record to expire")
	}
	db := openMemDB(t)
	v := randVecs(5, 1, 8)[0]
	var id string
	err := db.Update(ctxb, func(tx *Tx) (err error) {
		id, err = tx.PutRecord(vscope, "", Record{Text: "short lived", Vector: v, ExpiresAt: time.Now().Add(1100 * time.Millisecond)})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if hits, err := db.SearchText(ctxb, vscope, "short lived", 1, nil); err != nil || len(hits) != 1 {
		t.Fatalf("before expiry: %+v, %v; want one hit", hits, err)
	}
	time.Sleep(2100 * time.Millisecond)
	if hits, err := db.SearchText(ctxb, vscope, "short lived", 1, nil); err != nil || len(hits) != 0 {
		t.Fatalf("text search after expiry = %+v, %v; want no hits and no error", hits, err)
	}
	if hits, err := db.Search(ctxb, vscope, v, 1, nil); err != nil || len(hits) != 0 {
		t.Fatalf("vector search after expiry = %+v, %v; want no hits and no error", hits, err)
	}
	err = db.View(ctxb, func(tx *Tx) error { _, err := tx.GetRecord(vscope, "", id, nil); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("read after expiry: %v", err)
	}
}

func openMemDB(t *testing.T) *DB {
	t.Helper()
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestSearchTextSynonyms checks that SearchOptions.Synonyms expands the
// query ("automobile" finds "car") and that without it nothing changes.
func TestSearchTextSynonyms(t *testing.T) {
	db := openMemDB(t)
	vecs := randVecs(77, 2, 8)
	var carID string
	err := db.Update(ctxb, func(tx *Tx) error {
		var err error
		if carID, err = tx.PutRecord(vscope, "mem", Record{Text: "Alice drives a red car", Vector: vecs[0]}); err != nil {
			return err
		}
		_, err = tx.PutRecord(vscope, "mem", Record{Text: "Bob plays chess", Vector: vecs[1]})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		synonyms bool
		want     int
	}{{false, 0}, {true, 1}} {
		hits, err := db.SearchText(ctxb, vscope, "What automobile does she own?", 5, &SearchOptions{Space: "mem", Synonyms: c.synonyms})
		if err != nil || len(hits) != c.want || c.want == 1 && hits[0].ID != carID {
			t.Errorf("synonyms %v: %+v, %v; want %d hit(s)", c.synonyms, hits, err, c.want)
		}
	}
	if hits, err := db.SearchText(ctxb, vscope, "the of", 5, &SearchOptions{Space: "mem", Synonyms: true}); err != nil || len(hits) != 0 {
		t.Errorf("stop words only: %+v, %v", hits, err)
	}
}
