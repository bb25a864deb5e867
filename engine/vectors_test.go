package engine

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/kv/kvtest"
)

var ctxb = context.Background()

func randVecs(seed uint64, n, dim int) [][]float32 {
	rng := rand.New(rand.NewPCG(seed, seed))
	centres := make([][]float32, 20)
	for i := range centres {
		centres[i] = make([]float32, dim)
		for j := range centres[i] {
			centres[i][j] = float32(rng.NormFloat64())
		}
	}
	out := make([][]float32, n)
	for i := range out {
		c := centres[rng.IntN(len(centres))]
		out[i] = make([]float32, dim)
		for j := range out[i] {
			out[i][j] = c[j] + float32(rng.NormFloat64())
		}
	}
	return out
}

func cosine(a, b []float32) float64 {
	var d, na, nb float64
	for i := range a {
		d += float64(a[i]) * float64(b[i])
		na += float64(a[i]) * float64(a[i])
		nb += float64(b[i]) * float64(b[i])
	}
	return d / math.Sqrt(na*nb)
}

// bruteTop returns the ids of the k stored vectors nearest to q.
func bruteTop(stored map[string][]float32, q []float32, k int) []string {
	type sc struct {
		id string
		s  float64
	}
	var all []sc
	for id, v := range stored {
		all = append(all, sc{id, cosine(q, v)})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].s > all[j].s || (all[i].s == all[j].s && all[i].id < all[j].id) })
	var out []string
	for _, x := range all[:min(k, len(all))] {
		out = append(out, x.id)
	}
	return out
}

func put(t testing.TB, db *DB, scope Scope, vecs [][]float32) map[string][]float32 {
	t.Helper()
	stored := map[string][]float32{}
	for start := 0; start < len(vecs); start += 200 {
		err := db.Update(ctxb, func(tx *Tx) error {
			for i := start; i < min(start+200, len(vecs)); i++ {
				id, err := tx.PutRecord(scope, "", Record{Text: fmt.Sprint("text ", i), Vector: vecs[i], Metadata: map[string]string{"i": fmt.Sprint(i)}})
				if err != nil {
					return err
				}
				stored[id] = vecs[i]
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	return stored
}

func searchRecall(t testing.TB, db *DB, scope Scope, stored map[string][]float32, queries [][]float32, k int) float64 {
	t.Helper()
	var sum float64
	for _, q := range queries {
		hits, err := db.Search(ctxb, scope, q, k, nil)
		if err != nil {
			t.Fatal(err)
		}
		want := map[string]bool{}
		for _, id := range bruteTop(stored, q, k) {
			want[id] = true
		}
		got := 0
		for _, h := range hits {
			if _, ok := stored[h.ID]; !ok {
				t.Fatalf("hit %s is not a record of this partition", h.ID)
			}
			if want[h.ID] {
				got++
			}
		}
		sum += float64(got) / float64(len(want))
	}
	return sum / float64(len(queries))
}

var vscope = Scope{Tenant: "acme", User: "alice"}

func TestSearchExactPartition(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecs := randVecs(1, 300, 16)
	stored := put(t, db, vscope, vecs[:250])
	if r := searchRecall(t, db, vscope, stored, vecs[250:], 10); r != 1 {
		t.Fatalf("exact partition recall = %v, want 1", r)
	}
	hits, _ := db.Search(ctxb, vscope, vecs[7], 1, nil)
	if len(hits) != 1 || hits[0].Text != "text 7" || hits[0].Metadata["i"] != "7" || hits[0].Score < 0.999 {
		t.Fatalf("search for a stored vector = %+v", hits)
	}
	// Delete, then the record is gone from search and storage.
	id := hits[0].ID
	if err := db.Update(ctxb, func(tx *Tx) error { return tx.DeleteRecord(vscope, "", id) }); err != nil {
		t.Fatal(err)
	}
	hits, _ = db.Search(ctxb, vscope, vecs[7], 1, nil)
	if len(hits) == 1 && hits[0].ID == id {
		t.Fatal("deleted record still found")
	}
	// A filter restricts results.
	hits, _ = db.Search(ctxb, vscope, vecs[0], 5, &SearchOptions{Filter: func(rid string) bool { return rid == id }})
	if len(hits) != 0 {
		t.Fatalf("filter admitting only a deleted id returned %v", hits)
	}
}

func TestSearchErrors(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put(t, db, vscope, randVecs(2, 5, 8))
	err = db.Update(ctxb, func(tx *Tx) error {
		_, err := tx.PutRecord(vscope, "", Record{Vector: make([]float32, 9)})
		return err
	})
	if !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("wrong dimension: %v", err)
	}
	for _, rec := range []Record{
		{Vector: nil},
		{Vector: []float32{float32(math.NaN()), 0, 0, 0, 0, 0, 0, 0}},
		{Vector: make([]float32, 8), Text: "\xff"},
		{Vector: make([]float32, 8), ID: "not-a-ulid"},
		{Vector: make([]float32, 8), Metadata: map[string]string{"": "x"}},
	} {
		err := db.Update(ctxb, func(tx *Tx) error { _, err := tx.PutRecord(vscope, "", rec); return err })
		if !errors.Is(err, ErrInvalidRecord) && !errors.Is(err, ErrDimensionMismatch) {
			t.Errorf("PutRecord(%+v) = %v", rec, err)
		}
	}
	if _, err := db.Search(ctxb, vscope, make([]float32, 3), 5, nil); !errors.Is(err, ErrDimensionMismatch) {
		t.Fatalf("short query: %v", err)
	}
	if _, err := db.Search(ctxb, Scope{}, make([]float32, 8), 5, nil); !errors.Is(err, ErrInvalidScope) {
		t.Fatalf("no tenant: %v", err)
	}
	if hits, err := db.Search(ctxb, Scope{Tenant: "acme", User: "nobody"}, make([]float32, 8), 5, nil); err != nil || len(hits) != 0 {
		t.Fatalf("empty partition: %v, %v", hits, err)
	}
}

// TestRecordAtomicity: a record written in a transaction that fails is in
// neither the store nor the index.
func TestRecordAtomicity(t *testing.T) {
	db, err := Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecs := randVecs(3, 3, 8)
	var id string
	boom := errors.New("boom")
	err = db.Update(ctxb, func(tx *Tx) error {
		var err error
		if id, err = tx.PutRecord(vscope, "", Record{Vector: vecs[0]}); err != nil {
			return err
		}
		return boom
	})
	if err != boom {
		t.Fatal(err)
	}
	put(t, db, vscope, vecs[1:])
	hits, _ := db.Search(ctxb, vscope, vecs[0], 3, nil)
	for _, h := range hits {
		if h.ID == id {
			t.Fatal("a rolled-back record is searchable")
		}
	}
	err = db.View(ctxb, func(tx *Tx) error { _, err := tx.GetRecord(vscope, "", id, nil); return err })
	if !errors.Is(err, ErrNotFound) {
		t.Fatalf("rolled-back record: %v", err)
	}
}

// TestPartitionIsolation: random records across tenants, users and shared
// partitions; every search returns only its own partition's records.
func TestPartitionIsolation(t *testing.T) {
	db, err := Open("", &Options{ExactThreshold: 40})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	rng := rand.New(rand.NewPCG(9, 9))
	scopes := []Scope{
		{Tenant: "a", User: "u"}, {Tenant: "a", User: "u2"}, {Tenant: "a"},
		{Tenant: "ab", User: "u"}, {Tenant: "ab"}, {Tenant: "b", User: "a"},
	}
	owner := map[string]Scope{}
	vecs := randVecs(4, 600, 8)
	for i, v := range vecs {
		sc := scopes[rng.IntN(len(scopes))]
		err := db.Update(ctxb, func(tx *Tx) error {
			id, err := tx.PutRecord(sc, "", Record{Vector: v})
			owner[id] = sc
			return err
		})
		if err != nil {
			t.Fatal(err)
		}
		if i%50 == 0 {
			for _, q := range scopes {
				hits, err := db.Search(ctxb, q, vecs[rng.IntN(len(vecs))], 20, nil)
				if err != nil {
					t.Fatal(err)
				}
				for _, h := range hits {
					if owner[h.ID] != q {
						t.Fatalf("search in %+v returned a record of %+v", q, owner[h.ID])
					}
				}
			}
		}
	}
}

func TestPromotionToHNSW(t *testing.T) {
	db, err := Open("", &Options{ExactThreshold: 100})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	vecs := randVecs(5, 1100, 24)
	stored := put(t, db, vscope, vecs[:1000])
	p, _ := db.getPartition(ctxb, vscope.Prefix(LevelUser))
	p.mu.RLock()
	isHNSW := p.mu.hnsw != nil
	p.mu.RUnlock()
	if !isHNSW {
		t.Fatal("partition of 1000 records with threshold 100 is not HNSW")
	}
	r := searchRecall(t, db, vscope, stored, vecs[1000:], 10)
	t.Logf("recall@10 after promotion: %.4f", r)
	if r < 0.95 {
		t.Fatalf("recall@10 = %.4f, want >= 0.95", r)
	}
}

func openDisk(t *testing.T, dir string, opts *Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatal(err)
	}
	return db
}

func snapFiles(t testing.TB, dir string) []string {
	t.Helper()
	files, _ := filepath.Glob(filepath.Join(dir, snapDir, "*.snap"))
	return files
}

// TestSnapshotReplayAndRecovery: a snapshot at Close, more writes without
// one (a crash), then reopen replays them; a corrupt snapshot means a
// rebuild with every stored vector still found first for itself.
func TestSnapshotReplayAndRecovery(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 100}
	// 600 vectors in the snapshot, 200 replayed after it, 100 queries; a
	// third of that under -race, still above ExactThreshold (HNSW).
	unit := 100
	if raceEnabled {
		unit = 35
	}
	vecs := randVecs(6, 9*unit, 16)

	db := openDisk(t, dir, opts)
	stored := put(t, db, vscope, vecs[:6*unit])
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if len(snapFiles(t, dir)) != 1 {
		t.Fatalf("snapshot files after Close: %v", snapFiles(t, dir))
	}

	db = openDisk(t, dir, opts)
	for id, v := range put(t, db, vscope, vecs[6*unit:8*unit]) {
		stored[id] = v
	}
	db.skipFinalSnapshot = true // as if the process died
	db.Close()

	check := func(name string, sound bool) {
		logs := &logRecorder{}
		o := *opts
		o.Logger = slog.New(logs)
		db := openDisk(t, dir, &o)
		defer db.Close()
		for id, v := range stored {
			hits, err := db.Search(ctxb, vscope, v, 1, nil)
			if err != nil || len(hits) != 1 || hits[0].ID != id {
				t.Fatalf("%s: stored vector %s not found first: %+v, %v", name, id, hits, err)
			}
		}
		if r := searchRecall(t, db, vscope, stored, vecs[8*unit:], 10); r < 0.95 {
			t.Fatalf("%s: recall@10 = %.4f", name, r)
		}
		// A sound snapshot is loaded, not thrown away for a rebuild.
		if rebuilt := logs.count("engram: vector snapshot unusable; rebuilding from records"); sound && rebuilt != 0 {
			t.Fatalf("%s: a sound snapshot was rebuilt: %v", name, logs.lines())
		} else if !sound && rebuilt == 0 && name != "missing snapshot" {
			t.Fatalf("%s: a bad snapshot was not reported", name)
		}
	}
	check("snapshot + replay", true)

	for _, f := range snapFiles(t, dir) {
		b, _ := os.ReadFile(f)
		b[len(b)/2] ^= 0xFF
		os.WriteFile(f, b, 0o600)
	}
	check("corrupt snapshot", false)
	for _, f := range snapFiles(t, dir) {
		os.WriteFile(f, []byte("garbage"), 0o600)
	}
	check("garbage snapshot", false)
	for _, f := range snapFiles(t, dir) {
		os.Remove(f)
	}
	check("missing snapshot", false)
}

// TestEraseDropsVectorsAndSnapshots: erasing a user or a tenant drops the
// snapshot files of every partition under it, named spaces included, and
// no other.
func TestEraseDropsVectorsAndSnapshots(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 50}
	db := openDisk(t, dir, opts)
	vecs := randVecs(7, 200, 8)
	alice, bob := Scope{Tenant: "acme", User: "alice"}, Scope{Tenant: "acme", User: "bob"}
	put(t, db, alice, vecs[:100])
	putIn(t, db, alice, "mem", vecs[:100])
	putIn(t, db, alice, "msg", vecs[100:])
	put(t, db, bob, vecs[100:])
	putIn(t, db, bob, "mem", vecs[100:])
	putIn(t, db, Scope{Tenant: "acme"}, "mem", vecs[:100]) // shared by the tenant
	keep := put(t, db, Scope{Tenant: "other", User: "alice"}, vecs[:100])
	putIn(t, db, Scope{Tenant: "other", User: "alice"}, "mem", vecs[:100])
	db.Close()
	if n := len(snapFiles(t, dir)); n != 8 {
		t.Fatalf("%d snapshot files, want 8", n)
	}
	db = openDisk(t, dir, opts)
	defer db.Close()
	if _, err := db.ErasePrefix(ctxb, alice.Prefix(LevelUser), nil); err != nil {
		t.Fatal(err)
	}
	if hits, err := db.Search(ctxb, alice, vecs[0], 5, nil); err != nil || len(hits) != 0 {
		t.Fatalf("search of an erased user = %d hits, %v; want none and no error", len(hits), err)
	}
	if n := len(snapFiles(t, dir)); n != 5 {
		t.Fatalf("%d snapshot files after erasing a user with two spaces, want 5", n)
	}
	if _, err := db.ErasePrefix(ctxb, Scope{Tenant: "acme"}.Prefix(LevelTenant), nil); err != nil {
		t.Fatal(err)
	}
	if n := len(snapFiles(t, dir)); n != 2 {
		t.Fatalf("%d snapshot files after erasing the tenant, want 2", n)
	}
	if r := searchRecall(t, db, Scope{Tenant: "other", User: "alice"}, keep, vecs[:20], 5); r < 0.95 {
		t.Fatalf("other tenant's recall %.3f", r)
	}
}

// putIn stores one record per vector in a named space.
func putIn(t testing.TB, db *DB, scope Scope, space string, vecs [][]float32) {
	t.Helper()
	err := db.Update(ctxb, func(tx *Tx) error {
		for i, v := range vecs {
			if _, err := tx.PutRecord(scope, space, Record{Text: fmt.Sprint("text ", i), Vector: v}); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestEncryptedSnapshot(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	dir := t.TempDir()
	key := bytes.Repeat([]byte{9}, 32)
	opts := &Options{ExactThreshold: 20, EncryptionKey: key}
	db := openDisk(t, dir, opts)
	vecs := randVecs(8, 100, 8)
	stored := put(t, db, vscope, vecs)
	db.Close()
	files := snapFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("snapshot files: %v", files)
	}
	raw, _ := os.ReadFile(files[0])
	// No stored vector's normalised bytes appear in the file.
	for _, v := range vecs[:10] {
		n, _ := index.Normalize(nil, v)
		var b []byte
		for _, f := range n[:4] {
			b = binary.LittleEndian.AppendUint32(b, math.Float32bits(f))
		}
		if bytes.Contains(raw, b) {
			t.Fatal("snapshot of an encrypted store holds a vector in the clear")
		}
	}
	db = openDisk(t, dir, opts)
	defer db.Close()
	if r := searchRecall(t, db, vscope, stored, vecs[:10], 5); r < 0.95 {
		t.Fatalf("recall after reopening an encrypted store: %.3f", r)
	}
}

func FuzzDecodeRecord(f *testing.F) {
	f.Add(encodeRecord(&Record{Text: "hi", Vector: []float32{1, 2}, Metadata: map[string]string{"k": "v"}, Time: time.Unix(5, 0)}))
	f.Add(encodeRecord(&Record{}))
	f.Add(encodeRecord(&Record{Text: "answer", Context: "question", Vector: []float32{3}}))
	// Format 1, without Context: v2's bytes less the empty context.
	v1 := encodeRecord(&Record{Text: "t", Vector: []float32{1}})
	v1 = append(append([]byte{recordFormatV1}, v1[1:1+8+1+4+2]...), v1[1+8+1+4+2+1:]...)
	if r, err := decodeRecord(v1); err != nil || r.Text != "t" {
		f.Fatalf("format 1 record: %+v, %v", r, err)
	}
	f.Add(v1)
	f.Add([]byte{recordFormat})
	f.Fuzz(func(t *testing.T, b []byte) {
		r, err := decodeRecord(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		again, err := decodeRecord(encodeRecord(&r))
		if err != nil || fmt.Sprint(again) != fmt.Sprint(r) {
			t.Fatalf("round trip: %v\n%+v\n%+v", err, r, again)
		}
	})
}

// FuzzDecodeSnapshot feeds mutations of a real snapshot payload to its
// decoder, which must fail with ErrCorrupt or yield an index of its
// dimension; what decodes round-trips: encoding it and decoding again
// gives an equal snapshot and the same bytes. The seed decodes to what
// was encoded.
func FuzzDecodeSnapshot(f *testing.F) {
	// Few, short and sparse (M 2): the fuzzer's minimizer stalled the
	// fuzzing for a minute at a time on a 2 KB payload (golang/go#51484).
	h, err := index.NewHNSW(4, &index.HNSWOptions{M: 2, EfConstruction: 8})
	if err != nil {
		f.Fatal(err)
	}
	lex := index.NewBM25(nil)
	snap := &snapshotData{mark: ulid.Make(), dim: 4, hnsw: h, lex: lex}
	for i, v := range randVecs(3, 6, 4) {
		if err := h.Add(uint64(i), v); err != nil {
			f.Fatal(err)
		}
		lex.AddFields(uint64(i), fmt.Sprintf("note %d about item %d", i, 7*i), "")
		snap.keys = append(snap.keys, ulid.Make())
	}
	prefix := vscope.Prefix(LevelUser)
	payload, err := encodeSnapshot(snap, prefix)
	if err != nil {
		f.Fatal(err)
	}
	got, err := decodeSnapshot(payload, prefix)
	if err != nil {
		f.Fatalf("a sound snapshot: %v", err)
	}
	if got.mark != snap.mark || got.dim != snap.dim || !slices.Equal(got.keys, snap.keys) ||
		got.hnsw.Len() != h.Len() || got.lex.Len() != lex.Len() {
		f.Fatalf("a sound snapshot decodes to mark %v dim %d keys %d hnsw %d bm25 %d; want %v %d %d %d %d",
			got.mark, got.dim, len(got.keys), got.hnsw.Len(), got.lex.Len(), snap.mark, snap.dim, len(snap.keys), h.Len(), lex.Len())
	}
	if again, err := encodeSnapshot(got, prefix); err != nil || !bytes.Equal(again, payload) {
		f.Fatalf("a sound snapshot does not re-encode to itself (%v)", err)
	}
	f.Logf("seed payload: %d bytes", len(payload))
	f.Add(payload)
	f.Add(payload[:len(payload)/2])
	f.Fuzz(func(t *testing.T, b []byte) {
		if len(b) > 2<<10 {
			return // big inputs only slow the minimizer
		}
		snap, err := decodeSnapshot(b, prefix)
		if err != nil {
			// The index sections' errors come back as index.ErrCorrupt;
			// loadIndex rebuilds on any error, so either class will do.
			if !errors.Is(err, ErrCorrupt) && !errors.Is(err, index.ErrCorrupt) {
				t.Fatalf("error %v wraps neither ErrCorrupt nor index.ErrCorrupt", err)
			}
			return
		}
		if snap.hnsw.Dim() != snap.dim {
			t.Fatalf("index of dimension %d in a snapshot of %d", snap.hnsw.Dim(), snap.dim)
		}
		enc, err := encodeSnapshot(snap, prefix)
		if err != nil {
			t.Fatalf("encode a decoded snapshot: %v", err)
		}
		again, err := decodeSnapshot(enc, prefix)
		if err != nil {
			t.Fatalf("re-encoded snapshot does not decode: %v", err)
		}
		if again.mark != snap.mark || again.dim != snap.dim || !slices.Equal(again.keys, snap.keys) ||
			again.hnsw.Len() != snap.hnsw.Len() || again.hnsw.Deleted() != snap.hnsw.Deleted() || again.lex.Len() != snap.lex.Len() {
			t.Fatalf("round trip changed the snapshot")
		}
		if enc2, err := encodeSnapshot(again, prefix); err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("encode is not stable (%v)", err)
		}
	})
}

// TestConcurrentWritesSearchesSnapshots writes records from several
// goroutines while others search and the snapshotter runs over and over;
// after a reopen (snapshot plus replay, no final snapshot) every record is
// found by its own vector.
func TestConcurrentWritesSearchesSnapshots(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 100, Durability: Async}
	db := openDisk(t, dir, opts)
	// Hold some commits back from the index for a moment, so snapshots
	// land between a commit and its apply (where a careless mark would
	// lose the change at replay).
	var slow atomic.Int64
	db.beforeApply = func() {
		if slow.Add(1)%3 == 0 {
			time.Sleep(time.Millisecond)
		}
	}
	const writers, each = 3, 150
	vecs := randVecs(13, writers*each, 16)
	ids := make([]string, len(vecs))
	stop := make(chan struct{})
	var bg sync.WaitGroup
	bg.Go(func() { // searcher
		for i := 0; ; i++ {
			select {
			case <-stop:
				return
			default:
			}
			if _, err := db.Search(ctxb, vscope, vecs[i%len(vecs)], 5, nil); err != nil {
				t.Error(err)
				return
			}
		}
	})
	// The snapshotter writes files under Dir(); a PostgreSQL store has
	// none, and snapshotAll would write them under the working directory.
	bg.Go(func() { // snapshotter, far more often than in production
		for !kvtest.Postgres() {
			select {
			case <-stop:
				return
			default:
			}
			db.snapshotAll(ctxb, 1)
		}
	})
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := w * each; i < (w+1)*each; i++ {
				err := db.Update(ctxb, func(tx *Tx) error {
					id, err := tx.PutRecord(vscope, "", Record{Vector: vecs[i]})
					ids[i] = id
					return err
				})
				if err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	close(stop)
	bg.Wait()
	db.skipFinalSnapshot = true
	db.Close()

	db = openDisk(t, dir, opts)
	defer db.Close()
	missing := 0
	for i, v := range vecs {
		hits, err := db.Search(ctxb, vscope, v, 1, &SearchOptions{Ef: 200})
		if err != nil {
			t.Fatal(err)
		}
		if len(hits) != 1 || hits[0].ID != ids[i] {
			missing++
		}
	}
	if missing > 0 {
		t.Fatalf("%d of %d records not found by their own vector after reopening", missing, len(vecs))
	}
}

// TestSnapshotMarkWaitsForApply builds the interleaving a careless mark
// gets wrong: A commits and is held before the index applies it, B commits
// and applies, a snapshot is taken, then A applies. After a crash (no final
// snapshot) the reopened store must still find A: the snapshot either
// waited for A or marked below it.
func TestSnapshotMarkWaitsForApply(t *testing.T) {
	dir := t.TempDir()
	opts := &Options{ExactThreshold: 10}
	db := openDisk(t, dir, opts)
	vecs := randVecs(14, 40, 8)
	put(t, db, vscope, vecs[:30]) // an HNSW partition
	p, err := db.getPartition(ctxb, vscope.Prefix(LevelUser))
	if err != nil {
		t.Fatal(err)
	}

	held, release := make(chan struct{}), make(chan struct{})
	var first atomic.Bool
	db.beforeApply = func() {
		if first.CompareAndSwap(false, true) { // hold A only
			close(held)
			<-release
		}
	}
	var idA string
	aDone := make(chan error)
	go func() {
		aDone <- db.Update(ctxb, func(tx *Tx) error {
			var err error
			idA, err = tx.PutRecord(vscope, "", Record{Vector: vecs[30]})
			return err
		})
	}()
	<-held
	put(t, db, vscope, vecs[31:32]) // B: commits and applies past A
	snapDone := make(chan error)
	go func() { snapDone <- db.snapshot(ctxb, p) }()
	select {
	case err := <-snapDone: // a snapshot that did not wait for A
		if err != nil {
			t.Fatal(err)
		}
		close(release)
	case <-time.After(100 * time.Millisecond): // it waits, as it should
		close(release)
		if err := <-snapDone; err != nil {
			t.Fatal(err)
		}
	}
	if err := <-aDone; err != nil {
		t.Fatal(err)
	}
	db.beforeApply = nil
	db.skipFinalSnapshot = true
	db.Close()

	db = openDisk(t, dir, opts)
	defer db.Close()
	hits, err := db.Search(ctxb, vscope, vecs[30], 1, &SearchOptions{Ef: 100})
	if err != nil || len(hits) != 1 || hits[0].ID != idA {
		t.Fatalf("record A lost across the snapshot: %+v, %v", hits, err)
	}
}

// logRecorder is a slog.Handler that keeps every message it is given.
type logRecorder struct {
	mu   sync.Mutex
	msgs []string
}

func (l *logRecorder) Enabled(context.Context, slog.Level) bool { return true }

func (l *logRecorder) Handle(_ context.Context, r slog.Record) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	line := r.Message
	r.Attrs(func(a slog.Attr) bool {
		line += " " + a.String()
		return true
	})
	l.msgs = append(l.msgs, line)
	return nil
}

func (l *logRecorder) WithAttrs([]slog.Attr) slog.Handler { return l }
func (l *logRecorder) WithGroup(string) slog.Handler      { return l }

func (l *logRecorder) count(msg string) int {
	l.mu.Lock()
	defer l.mu.Unlock()
	n := 0
	for _, m := range l.msgs {
		if strings.HasPrefix(m, msg) {
			n++
		}
	}
	return n
}

func (l *logRecorder) lines() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Clone(l.msgs)
}

func TestPartitionBase(t *testing.T) {
	tenant := Scope{Tenant: "acme"}.Prefix(LevelTenant)
	user := Scope{Tenant: "acme", User: "alice"}.Prefix(LevelUser)
	session := Scope{Tenant: "acme", User: "alice", Session: "s1"}.Prefix(LevelSession)
	for _, c := range []struct{ key, want []byte }{
		{tenant, tenant},
		{Key(tenant, NSSpace, []byte("mem"), []byte{sep}), tenant},
		{user, user},
		{Key(user, NSSpace, []byte("mem"), []byte{sep}), user},
		{session, user},
		{[]byte{tagTenant, 'x'}, []byte{tagTenant, 'x'}},
	} {
		if got := partitionBase(c.key); !bytes.Equal(got, c.want) {
			t.Errorf("partitionBase(%q) = %q, want %q", c.key, got, c.want)
		}
	}
}

// TestOldSnapshotsRemoved: files of the version 1 layout, which nothing
// reads or erases any more, are deleted at open; current ones are kept.
func TestOldSnapshotsRemoved(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	dir := t.TempDir()
	db := openDisk(t, dir, &Options{ExactThreshold: 10})
	put(t, db, vscope, randVecs(8, 20, 4))
	db.Close()
	old := filepath.Join(dir, snapDir, "0123456789abcdef01234567-0123456789abcdef01234567.snap")
	if err := os.WriteFile(old, []byte("old"), 0o600); err != nil {
		t.Fatal(err)
	}
	db = openDisk(t, dir, nil)
	db.Close()
	if _, err := os.Stat(old); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("old snapshot file kept: %v", err)
	}
	if n := len(snapFiles(t, dir)); n != 1 {
		t.Fatalf("%d snapshot files, want the current one", n)
	}
}

// TestSnapshotterPaces checks that the background snapshotter reports each
// partition it snapshots to Options.Pace, which may hold it back.
func TestSnapshotterPaces(t *testing.T) {
	if kvtest.Postgres() {
		t.Skip("the snapshotter writes files; a PostgreSQL store has none")
	}
	paced := make(chan time.Duration, 16)
	db, err := Open(t.TempDir(), &Options{
		ExactThreshold:   8,
		SnapshotInterval: time.Millisecond,
		SnapshotAfter:    1,
		Pace: func(ctx context.Context, d time.Duration) {
			select {
			case paced <- d:
			default:
			}
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	put(t, db, vscope, randVecs(7, 64, 8))
	select {
	case d := <-paced:
		if d <= 0 {
			t.Errorf("paced a snapshot that took %v", d)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("the snapshotter never called Pace")
	}
}
