package kv

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/engramdb/engram/kv/kvtest"
)

var faultExhaustive = flag.Bool("fault.exhaustive", false,
	"TestFaultCorruption: damage every file kind at many more offsets (slow)")

var faultLog = flag.Bool("fault.log", false,
	"TestFaultCorruption: log the outcome of every case")

var faultOnly = flag.String("fault.only", "",
	"TestFaultCorruption: damage only files of this kind (.sst, .vlog, .mem, MANIFEST, KEYREGISTRY)")

// corpusStore is a store with known contents, copied as it was on disk
// while open (as after kill -9): tables, the manifest, the key registry, a
// write-ahead log holding the last writes and a value log holding the large
// values.
type corpusStore struct {
	dir   string
	key   []byte
	model map[string][]byte
	files map[string]corpusFile // the files of dir, held to copy fast
}

// corpusFile is a file's data up to its zero tail, and its size.
type corpusFile struct {
	data []byte
	size int64
}

// materialize writes the store's files into dir.
func (cs *corpusStore) materialize(t *testing.T, dir string) {
	t.Helper()
	for name, f := range cs.files {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, f.data, 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, f.size); err != nil {
			t.Fatal(err)
		}
	}
}

func buildCorpusStore(t *testing.T, key []byte) *corpusStore {
	t.Helper()
	ctx := context.Background()
	src := t.TempDir()
	opts := &Options{MemTableSize: 1 << 20, EncryptionKey: key}
	model := map[string][]byte{}
	value := func(i, n int) []byte {
		v := bytes.Repeat([]byte(fmt.Sprintf("value %06d|", i)), n/12+1)
		return v[:n]
	}
	write := func(db *DB, from, to, size int) {
		for i := from; i < to; i += 50 {
			err := db.Update(ctx, func(tx *Txn) error {
				for j := i; j < min(i+50, to); j++ {
					k := fmt.Sprintf("key/%06d", j)
					v := value(j, size)
					if err := tx.Set([]byte(k), v); err != nil {
						return err
					}
					model[k] = v
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
		}
	}
	big := func(db *DB, from, to int) {
		for i := from; i < to; i++ {
			k := fmt.Sprintf("big/%02d", i)
			v := value(i, 150<<10) // above the value threshold: the value log
			if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte(k), v) }); err != nil {
				t.Fatal(err)
			}
			model[k] = v
		}
	}
	db, err := Open(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	write(db, 0, 5000, 400) // about 2 MiB: flushed to tables
	big(db, 0, 3)
	if err := db.Update(ctx, func(tx *Txn) error {
		for j := 0; j < 5000; j += 97 {
			k := fmt.Sprintf("key/%06d", j)
			delete(model, k)
			if err := tx.Delete([]byte(k)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db, err = Open(src, opts)
	if err != nil {
		t.Fatal(err)
	}
	write(db, 5000, 5300, 300) // stays in the write-ahead log
	big(db, 3, 4)
	golden := t.TempDir()
	copyStore(t, src, golden)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	cs := &corpusStore{dir: golden, key: key, model: model, files: map[string]corpusFile{}}
	entries, err := os.ReadDir(golden)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		b, err := os.ReadFile(filepath.Join(golden, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		cs.files[e.Name()] = corpusFile{data: b[:dataEnd(b)], size: int64(len(b))}
	}
	return cs
}

// copyStore copies the files of a store, keeping preallocated zero tails
// sparse. The store may be open: a copy during which a compaction replaced
// tables is taken again.
func copyStore(t *testing.T, from, to string) {
	t.Helper()
	for range 50 {
		if copyOnce(t, from, to) {
			return
		}
	}
	t.Fatalf("copy %s: the files kept changing", from)
}

func copyOnce(t *testing.T, from, to string) bool {
	names := func() []string {
		entries, err := os.ReadDir(from)
		if err != nil {
			t.Fatal(err)
		}
		var out []string
		for _, e := range entries {
			if !e.IsDir() && e.Name() != "engram.lock" {
				out = append(out, e.Name())
			}
		}
		return out
	}
	before := names()
	for _, name := range before {
		b, err := os.ReadFile(filepath.Join(from, name))
		if errors.Is(err, os.ErrNotExist) {
			return false
		}
		if err != nil {
			t.Fatal(err)
		}
		end := dataEnd(b)
		p := filepath.Join(to, name)
		if err := os.WriteFile(p, b[:end], 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Truncate(p, int64(len(b))); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(names(), " ") != strings.Join(before, " ") {
		os.RemoveAll(to)
		if err := os.MkdirAll(to, 0o700); err != nil {
			t.Fatal(err)
		}
		return false
	}
	return true
}

// dataEnd returns the offset after the last non-zero byte of b.
func dataEnd(b []byte) int {
	const chunk = 64 << 10
	zeros := make([]byte, chunk)
	end := len(b)
	for end > 0 {
		start := max(0, end-chunk)
		if !bytes.Equal(b[start:end], zeros[:end-start]) {
			break
		}
		end = start
	}
	for end > 0 && b[end-1] == 0 {
		end--
	}
	return end
}

// damage is one change to one file.
type damage struct {
	file     string
	truncate bool
	off      int64
}

func (d damage) String() string {
	op := "flip"
	if d.truncate {
		op = "truncate"
	}
	return fmt.Sprintf("%s/%s@%d", d.file, op, d.off)
}

func (d damage) apply(t *testing.T, dir string) {
	t.Helper()
	p := filepath.Join(dir, d.file)
	if d.truncate {
		if err := os.Truncate(p, d.off); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.OpenFile(p, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	b := make([]byte, 1)
	if _, err := f.ReadAt(b, d.off); err != nil {
		t.Fatal(err)
	}
	b[0] ^= 0x5a
	if _, err := f.WriteAt(b, d.off); err != nil {
		t.Fatal(err)
	}
}

// damages lists the cases for one file: truncations and byte flips at
// offsets spread over its data, its start and its end (where table footers
// and log tails are). The default list is short; -fault.exhaustive adds
// offsets at every 64th of the file, and more at its ends.
func damages(file string, size, end int64) []damage {
	fr := func(num, den int64) int64 { return end * num / den }
	flips := []int64{21, fr(1, 2), end - 1, end - 6}
	// 8: a manifest cut to its magic number names no table at all.
	truncs := []int64{8, fr(1, 2), end - 5}
	if *faultExhaustive {
		flips = append(flips, 0, 5, fr(1, 5), fr(4, 5), end-12, end+64)
		truncs = append(truncs, 0, 1, 21, fr(1, 3), end-1, end-9)
		for i := int64(1); i < 64; i++ {
			flips = append(flips, fr(i, 64))
			truncs = append(truncs, fr(i, 64)+1)
		}
	}
	seen := map[damage]bool{}
	var out []damage
	add := func(d damage) {
		if d.off < 0 || d.off >= size || seen[d] {
			return
		}
		seen[d] = true
		out = append(out, d)
	}
	for _, o := range flips {
		add(damage{file: file, off: o})
	}
	for _, o := range truncs {
		add(damage{file: file, truncate: true, off: o})
	}
	return out
}

// typedOpenError reports whether err is one of this package's errors, as
// opposed to an untyped failure.
func typedOpenError(err error) bool {
	for _, s := range []error{ErrCorrupt, ErrEncryptionKey} {
		if errors.Is(err, s) {
			return true
		}
	}
	return false
}

// TestFaultCorruption damages each kind of file of a real store (tables,
// value log, write-ahead log, manifest, key registry) by truncation and by
// flipping a byte at several offsets, then opens the store and reads
// everything back. Each case must end in a typed error (ErrCorrupt, or
// ErrEncryptionKey for a damaged key registry) at Open or at the read of
// the damaged data, or in every key with its exact value: never a panic,
// never a key silently missing or altered. -fault.exhaustive runs many more
// offsets; -fault.only=.sst (or .vlog, .mem, MANIFEST, KEYREGISTRY) one
// kind; -fault.log logs every case.
func TestFaultCorruption(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's files on disk")
	for _, enc := range []bool{false, true} {
		if enc && (testing.Short() || raceEnabled) && !*faultExhaustive {
			t.Log("encrypted store skipped under -short and -race (-fault.exhaustive runs it)")
			continue
		}
		name := "plain"
		var key []byte
		if enc {
			name, key = "encrypted", bytes.Repeat([]byte{7}, 32)
		}
		t.Run(name, func(t *testing.T) {
			cs := buildCorpusStore(t, key)
			outcomes := map[string]int{}
			kinds := map[string]int{}
			for _, d := range corpusDamages(t, cs.dir, enc) {
				kind := filepath.Ext(d.file)
				if kind == "" {
					kind = d.file
				}
				kinds[kind]++
				outcome := runDamage(t, cs, d)
				outcomes[kind+" "+outcome]++
			}
			var lines []string
			for k, n := range outcomes {
				lines = append(lines, fmt.Sprintf("%s: %d", k, n))
			}
			sort.Strings(lines)
			t.Logf("%d cases by file kind %v; outcomes:\n  %s", sum(kinds), kinds, strings.Join(lines, "\n  "))
		})
	}
}

func sum(m map[string]int) int {
	n := 0
	for _, v := range m {
		n += v
	}
	return n
}

// corpusDamages lists the cases for the files of the store: two live
// tables, the write-ahead log, the value logs, the manifest and the key
// registry. The encrypted store, whose readers differ only for tables and
// logs, gets one table and the newest logs (with -fault.exhaustive, all).
func corpusDamages(t *testing.T, dir string, enc bool) []damage {
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	live := liveTables(t, dir)
	var out []damage
	tables, vlogs := 0, 0
	wantTables, wantVlogs := 2, 2
	if enc && !*faultExhaustive {
		wantTables, wantVlogs = 1, 1
	}
	// Newest first, so that the newest value log is always among them.
	for i := len(entries) - 1; i >= 0; i-- {
		name := entries[i].Name()
		if *faultOnly != "" && filepath.Ext(name) != *faultOnly && name != *faultOnly {
			continue
		}
		switch ext := filepath.Ext(name); {
		case ext == ".sst":
			// A table a compaction replaced is deleted at open: damage
			// there is harmless and proves nothing.
			if !live[name] || tables == wantTables {
				continue
			}
			tables++
		case ext == ".vlog":
			if vlogs == wantVlogs {
				continue
			}
			vlogs++
		case ext == ".mem":
		case name == "MANIFEST" || name == "KEYREGISTRY":
			if enc && !*faultExhaustive {
				continue
			}
		default:
			continue
		}
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if end := int64(dataEnd(b)); end > 0 {
			out = append(out, damages(name, int64(len(b)), end)...)
		}
	}
	for _, want := range []string{".sst", ".mem", ".vlog"} {
		if *faultOnly != "" {
			break
		}
		found := false
		for _, d := range out {
			found = found || filepath.Ext(d.file) == want
		}
		if !found {
			t.Fatalf("the corpus store has no %s file with data", want)
		}
	}
	return out
}

// liveTables returns the file names of the tables the store's manifest
// names.
func liveTables(t *testing.T, dir string) map[string]bool {
	f, err := os.Open(filepath.Join(dir, "MANIFEST"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	mf, _, err := badger.ReplayManifestFile(f, 0, badger.DefaultOptions(dir).WithLogger(nil))
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for id := range mf.Tables {
		out[table.IDToFilename(id)] = true
	}
	return out
}

// runDamage copies the corpus store, applies d, opens and reads it, and
// returns the outcome: "open error", "read error" or "intact".
func runDamage(t *testing.T, cs *corpusStore, d damage) (outcome string) {
	t.Helper()
	dir := t.TempDir()
	cs.materialize(t, dir)
	d.apply(t, dir)
	defer func() {
		if p := recover(); p != nil {
			t.Errorf("%v: panic: %v", d, p)
			outcome = "panic"
		}
	}()
	db, err := Open(dir, &Options{MemTableSize: 1 << 20, EncryptionKey: cs.key})
	if err != nil {
		if !typedOpenError(err) {
			t.Errorf("%v: Open = %v; want a typed error", d, err)
			return "untyped error"
		}
		switch {
		case errors.Is(err, ErrCorrupt) && !namesFile(err, d.file):
			t.Logf("%v: Open = %v (names another file than %s)", d, err, d.file)
		case *faultLog:
			t.Logf("%v: Open = %v", d, err)
		}
		return "open error"
	}
	defer db.Close()
	got, readErr := readAll(db, cs.model)
	if readErr != nil {
		if !errors.Is(readErr, ErrCorrupt) {
			t.Errorf("%v: read = %v; want ErrCorrupt", d, readErr)
			return "untyped error"
		}
		return "read error"
	}
	if diff := diffModel(cs.model, got); diff != "" {
		t.Errorf("%v: opened and read without an error, but %s", d, diff)
		return "silent damage"
	}
	if *faultLog {
		t.Logf("%v: intact", d)
	}
	return "intact"
}

func namesFile(err error, file string) bool {
	return strings.Contains(err.Error(), file)
}

// readAll reads every key by iteration and by Get. The first error ends it.
func readAll(db *DB, model map[string][]byte) (map[string][]byte, error) {
	got := map[string][]byte{}
	err := db.View(context.Background(), func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			v, err := it.Value(nil)
			if err != nil {
				return err
			}
			got[string(it.Key())] = v
		}
		for k := range model {
			v, err := tx.Get([]byte(k))
			if errors.Is(err, ErrNotFound) {
				continue // diffModel reports it
			}
			if err != nil {
				return err
			}
			if !bytes.Equal(v, got[k]) {
				return fmt.Errorf("Get(%q) and the iterator disagree", k)
			}
		}
		return nil
	})
	return got, err
}

func diffModel(want, got map[string][]byte) string {
	var missing, altered, extra int
	var first string
	for k, v := range want {
		g, ok := got[k]
		switch {
		case !ok:
			missing++
		case !bytes.Equal(g, v):
			altered++
		default:
			continue
		}
		if first == "" {
			first = k
		}
	}
	for k := range got {
		if _, ok := want[k]; !ok {
			extra++
			if first == "" {
				first = k
			}
		}
	}
	if missing+altered+extra == 0 {
		return ""
	}
	return fmt.Sprintf("%d keys missing, %d altered, %d extra (first %q)", missing, altered, extra, first)
}
