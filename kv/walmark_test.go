package kv

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// killedStore writes about 3 MiB in synced transactions into a store of
// 1 MiB memtables, so that the write-ahead log rotates several times, and
// returns a copy of its files taken while it is open (what kill -9
// leaves), the keys and values written, the .mem files of the copy in
// number order, and a copy of an older .mem file taken early on (its
// memtable has been flushed since).
func killedStore(t *testing.T) (dir string, model map[string][]byte, mems []string, early string) {
	t.Helper()
	src := t.TempDir()
	db, err := Open(src, &Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	model = map[string][]byte{}
	for i := range 60 {
		err := db.Update(context.Background(), func(tx *Txn) error {
			for j := range 25 {
				k := fmt.Sprintf("k/%04d/%02d", i, j)
				v := bytes.Repeat([]byte{byte('a' + (i+j)%26)}, 2<<10)
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
		if i == 5 {
			early = t.TempDir()
			copyStore(t, src, early)
		}
	}
	dir = t.TempDir()
	copyStore(t, src, dir)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return dir, model, memFiles(t, dir), early
}

func copyFile(t *testing.T, from, to string) {
	t.Helper()
	b, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, b, 0o600); err != nil {
		t.Fatal(err)
	}
}

func memFiles(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var mems []string
	for _, e := range entries {
		if strings.HasSuffix(e.Name(), ".mem") {
			mems = append(mems, e.Name())
		}
	}
	slices.SortFunc(mems, func(a, b string) int { return int(logID(a)) - int(logID(b)) })
	return mems
}

// recordEnds returns the offsets at which the whole records of a plain
// write-ahead log end.
func recordEnds(t *testing.T, path string) []int64 {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	r := bufio.NewReader(f)
	if _, err := r.Discard(logHeaderSize); err != nil {
		t.Fatal(err)
	}
	off := int64(logHeaderSize)
	var ends []int64
	var buf []byte
	for {
		_, n, _, status := readRecord(r, fi.Size()-off, &buf)
		if status != recordWhole {
			return ends
		}
		off += n
		ends = append(ends, off)
	}
}

// TestOpenRefusesLostWAL damages the write-ahead logs of a store that was
// not closed (a copy of its files taken while open) the ways that lose
// acknowledged writes without leaving a damaged record: the newest .mem
// deleted, every .mem deleted, the newest cut at a record boundary. Badger
// replays whatever .mem files it finds, so each opened silently with
// writes missing; Open must refuse with ErrCorrupt naming the file.
func TestOpenRefusesLostWAL(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's files on disk")
	base, model, mems, early := killedStore(t)
	newest := mems[len(mems)-1]
	old := memFiles(t, early)[0]
	if logID(old) >= logID(newest) {
		t.Fatalf("the write-ahead log did not rotate: %s, then %v", old, mems)
	}
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
		names  string
	}{
		// An older log can outlive its flush (an iterator holding its
		// memtable releases it later): Badger replays it again, harmlessly,
		// but it must not hide that the newest is gone.
		{"newest deleted, an older one left", func(t *testing.T, dir string) {
			copyFile(t, filepath.Join(early, old), filepath.Join(dir, old))
			for _, m := range mems {
				if err := os.Remove(filepath.Join(dir, m)); err != nil {
					t.Fatal(err)
				}
			}
		}, newest},
		{"all deleted", func(t *testing.T, dir string) {
			for _, m := range mems {
				if err := os.Remove(filepath.Join(dir, m)); err != nil {
					t.Fatal(err)
				}
			}
		}, newest},
		{"newest cut at a record boundary", func(t *testing.T, dir string) {
			p := filepath.Join(dir, newest)
			ends := recordEnds(t, p)
			if len(ends) < 2 {
				t.Fatalf("%s holds %d records", newest, len(ends))
			}
			if err := os.Truncate(p, ends[len(ends)/2]); err != nil {
				t.Fatal(err)
			}
		}, newest},
		{"newest cut to its data", func(t *testing.T, dir string) {
			p := filepath.Join(dir, newest)
			b, err := os.ReadFile(p)
			if err != nil {
				t.Fatal(err)
			}
			if err := os.Truncate(p, int64(dataEnd(b))); err != nil {
				t.Fatal(err)
			}
		}, newest},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, base, dir)
			tc.damage(t, dir)
			db, err := Open(dir, &Options{MemTableSize: 1 << 20})
			if err == nil {
				got, rerr := readAll(db, model)
				db.Close()
				t.Fatalf("Open succeeded (read: %v, %s)", rerr, diffModel(model, got))
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.names) {
				t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, tc.names)
			}
		})
	}
	t.Run("intact", func(t *testing.T) {
		dir := t.TempDir()
		copyStore(t, base, dir)
		db, err := Open(dir, &Options{MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		got, err := readAll(db, model)
		if err != nil {
			t.Fatal(err)
		}
		if d := diffModel(model, got); d != "" {
			t.Fatal(d)
		}
	})
}

// TestOpenWALMarkClosing: a kill during Close may leave no write-ahead
// log, because Close flushed them into tables; that is loss only when no
// table holds the newest version the record says Close was flushing.
func TestOpenWALMarkClosing(t *testing.T) {
	kvtest.SkipOnPostgres(t, "writes Badger's directory")
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	version := db.bdb.MaxVersion()
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		version uint64
		ok      bool
	}{{version, true}, {version + 1, false}} {
		m := walMark{state: walClosing, newest: 3, first: -1, version: tc.version}
		if err := writeWALMark(dir, &m); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, nil)
		if tc.ok {
			if err != nil {
				t.Fatalf("version %d in a table: Open = %v", tc.version, err)
			}
			db.Close()
			continue
		}
		if err == nil {
			db.Close()
			t.Fatalf("version %d in no table: Open succeeded", tc.version)
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), "00003.mem") {
			t.Fatalf("Open = %v; want ErrCorrupt naming 00003.mem", err)
		}
	}
}

// TestOpenWALMarkDamaged: a damaged record is refused, naming it.
func TestOpenWALMarkDamaged(t *testing.T) {
	kvtest.SkipOnPostgres(t, "writes Badger's directory")
	dir := t.TempDir()
	db, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, walMarkFile), []byte("engram-wal 1\nstate sideways\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	db, err = Open(dir, nil)
	if err == nil {
		db.Close()
		t.Fatal("Open succeeded")
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), walMarkFile) {
		t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, walMarkFile)
	}
}

func FuzzDecodeWALMark(f *testing.F) {
	f.Add([]byte("engram-wal 1\nstate open\nnewest 7\nfirst 7\nfilesize 2097152\nversion 0\nold 5 1234\n"))
	f.Add([]byte("engram-wal 1\nstate closing\nnewest 3\nfirst -1\nfilesize 0\nversion 99\n"))
	f.Add([]byte("engram-wal 2\nstate open\nnewest 9\nfirst 7\nfilesize 2097152\nversion 0\nbase 41\nmanifest 120 3735928559\nold 5 1234\nseen 8 60\nseen 9 75\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		m, err := decodeWALMark(b)
		if err != nil {
			return
		}
		again, err := decodeWALMark(m.encode())
		if err != nil {
			t.Fatalf("re-decode of %q: %v", m.encode(), err)
		}
		if !bytes.Equal(again.encode(), m.encode()) {
			t.Fatalf("round trip: %q, then %q", m.encode(), again.encode())
		}
	})
}

// TestOpenWALMarkAfterCompact: Compact's DropPrefix deletes the log of a
// memtable that held only the key it drops, so no table holds that log's
// version; a store killed after it (a copy taken while open) must open
// with its data, not be refused for a lost log.
func TestOpenWALMarkAfterCompact(t *testing.T) {
	kvtest.SkipOnPostgres(t, "reads Badger's directory")
	src := t.TempDir()
	db, err := Open(src, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(t.Context(), func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if db, err = Open(src, nil); err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.Compact(t.Context()); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	copyStore(t, src, dir)
	killed, err := Open(dir, nil)
	if err != nil {
		t.Fatalf("Open after a kill that followed Compact: %v", err)
	}
	defer killed.Close()
	if err := killed.View(t.Context(), func(tx *Txn) error {
		_, err := tx.Get([]byte("k"))
		return err
	}); err != nil {
		t.Fatal(err)
	}
}

// TestDecodeWALMarkFormats: a record of format 1, written by the version
// before the base and seen lines, is still read, as one without them, and
// a seen line is refused in it.
func TestDecodeWALMarkFormats(t *testing.T) {
	m, err := decodeWALMark([]byte("engram-wal 1\nstate open\nnewest 7\nfirst 6\nfilesize 2097152\nversion 0\nold 5 1234\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.state != walOpen || m.newest != 7 || m.first != 6 || m.fileSize != 2097152 || m.sizes[5] != 1234 || m.base != 0 || len(m.seen) != 0 {
		t.Fatalf("format 1 read as %+v", m)
	}
	if _, err := decodeWALMark([]byte("engram-wal 1\nstate open\nnewest 7\nfirst 6\nfilesize 2097152\nversion 0\nseen 7 10\n")); err == nil {
		t.Fatal("a seen line in a record of format 1 was accepted")
	}
	m, err = decodeWALMark([]byte("engram-wal 2\nstate open\nnewest 9\nfirst 7\nfilesize 2097152\nversion 0\nbase 41\nmanifest 120 99\nseen 8 60\n"))
	if err != nil {
		t.Fatal(err)
	}
	if m.base != 41 || m.manifest != 120 || m.manifestSum != 99 || m.seen[8] != 60 || len(m.seen) != 1 {
		t.Fatalf("format 2 read as %+v", m)
	}
	if got := string(m.encode()); !strings.HasPrefix(got, walMarkMagic+"\n") || !strings.Contains(got, "\nbase 41\n") || !strings.HasSuffix(got, "\nseen 8 60\n") {
		t.Fatalf("encoded as %q", got)
	}
	if _, err := decodeWALMark([]byte("engram-wal 2\nstate open\nnewest 9\nfirst 7\nfilesize 2097152\nversion 0\nbase 41\n")); err == nil {
		t.Fatal("a record of format 2 without its manifest line was accepted")
	}
}
