package kv

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// zeroRange writes zeros over [from, to) of a file.
func zeroRange(t *testing.T, path string, from, to int64) {
	t.Helper()
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	if _, err := f.WriteAt(make([]byte, to-from), from); err != nil {
		t.Fatal(err)
	}
}

// unclosedStore writes six transactions, each with a value above the
// value threshold and twenty small ones, and returns a copy of the store's
// files taken while it was open: what a kill leaves.
func unclosedStore(t *testing.T) string {
	t.Helper()
	src := t.TempDir()
	db, err := Open(src, &Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 6 {
		big := bytes.Repeat([]byte{byte('A' + i)}, 150<<10) // above the value threshold
		if err := db.Update(t.Context(), func(tx *Txn) error {
			if err := tx.Set([]byte(fmt.Sprintf("big/%d", i)), big); err != nil {
				return err
			}
			for j := range 20 {
				if err := tx.Set([]byte(fmt.Sprintf("small/%d/%02d", i, j)), []byte("value")); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	base := t.TempDir()
	copyStore(t, src, base)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	return base
}

// TestFaultZeroedLogRange zeroes a range in the middle of a write-ahead
// log (.mem) and of the newest value log (.vlog) of a store that was not
// closed, with whole records after it. Badger's replay stops at the first
// record it cannot read and cuts the log there, so the writes after the
// range would be dropped without a word; and zeros are what a crash leaves
// at the end of a log, so the range must be told from a tail by what
// follows it. Open must refuse with ErrCorrupt naming the file.
func TestFaultZeroedLogRange(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's files on disk")
	base := unclosedStore(t)
	mems := memFiles(t, base)
	vlogs, _ := filepath.Glob(filepath.Join(base, "*.vlog"))
	if len(mems) == 0 || len(vlogs) == 0 {
		t.Fatalf("the store has logs %v and %v", mems, vlogs)
	}
	newestVlog := filepath.Base(vlogs[len(vlogs)-1])
	for _, tc := range []struct {
		name, file string
		// from and to pick the range from the record ends of the file.
		from, to func(ends []int64) int64
	}{
		{"whole records of the .mem", mems[len(mems)-1],
			func(e []int64) int64 { return e[len(e)/3] }, func(e []int64) int64 { return e[len(e)/3+2] }},
		{"the middle of a .mem record onwards", mems[len(mems)-1],
			func(e []int64) int64 { return e[len(e)/3] + 3 }, func(e []int64) int64 { return e[len(e)/3+3] }},
		{"a whole record of the .vlog", newestVlog,
			func(e []int64) int64 { return e[0] }, func(e []int64) int64 { return e[1] }},
		{"part of a .vlog record", newestVlog,
			func(e []int64) int64 { return e[1] + 100 }, func(e []int64) int64 { return e[1] + 5000 }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, base, dir)
			p := filepath.Join(dir, tc.file)
			ends := recordEnds(t, p)
			if len(ends) < 6 {
				t.Fatalf("%s holds %d records", tc.file, len(ends))
			}
			from, to := tc.from(ends), tc.to(ends)
			if to >= ends[len(ends)-1] {
				t.Fatalf("no whole record after the range [%d, %d) of %s", from, to, tc.file)
			}
			zeroRange(t, p, from, to)
			db, err := Open(dir, &Options{MemTableSize: 1 << 20})
			if err == nil {
				db.Close()
				t.Fatalf("Open succeeded with [%d, %d) of %s zeroed and records after it", from, to, tc.file)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), tc.file) {
				t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, tc.file)
			}
		})
	}
}

// TestFaultTornLastRecord damages the newest .mem and .vlog the way a kill
// in the middle of writing a record of the last transaction does. Badger copies a
// record into its memory-mapped log with Go's copy, and for a long record
// that stores the unaligned head (the header) last, so a record cut short
// can start with zeros and hold data after them. Nothing after it was
// acknowledged, and Badger's replay stops there: Open must succeed with
// every earlier transaction, as Badger would. (CI met this shape after a
// SIGKILL in TestFaultWALLost: "bad record at offset 1030675, with data
// after it", the data 13 bytes on, where the 32-byte aligned stores began.)
func TestFaultTornLastRecord(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's files on disk")
	base := unclosedStore(t)
	mems := memFiles(t, base)
	vlogs, _ := filepath.Glob(filepath.Join(base, "*.vlog"))
	newestVlog := filepath.Base(vlogs[len(vlogs)-1])
	for _, tc := range []struct {
		name, file string
		// tail: also zero the second half of the record (the copy was
		// cut in its middle).
		tail bool
	}{
		{"head of the last .mem record", mems[len(mems)-1], false},
		{"head and tail of the last .mem record", mems[len(mems)-1], true},
		{"head of the last .vlog record", newestVlog, false},
		{"head and tail of the last .vlog record", newestVlog, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, base, dir)
			p := filepath.Join(dir, tc.file)
			ends := recordEnds(t, p)
			if len(ends) < 2 {
				t.Fatalf("%s holds %d records", tc.file, len(ends))
			}
			// The longest of the last transaction's records is torn, and
			// the records after it were never written.
			k := len(ends) - 2
			for i := len(ends) - 3; i >= 0 && i >= len(ends)-22; i-- {
				if ends[i+1]-ends[i] > ends[k+1]-ends[k] {
					k = i
				}
			}
			from, to := ends[k], ends[k+1]
			if to-from < 24 {
				t.Fatalf("the longest last record of %s is %d bytes", tc.file, to-from)
			}
			zeroRange(t, p, to, ends[len(ends)-1])
			zeroRange(t, p, from, from+13)
			if tc.tail {
				zeroRange(t, p, (from+to)/2, to)
			}
			db, err := Open(dir, &Options{MemTableSize: 1 << 20})
			if err != nil {
				t.Fatalf("Open = %v; a record torn at the end of %s is what a kill leaves", err, tc.file)
			}
			defer db.Close()
			if err := db.View(t.Context(), func(tx *Txn) error {
				for i := range 5 {
					if _, err := tx.Get([]byte(fmt.Sprintf("small/%d/00", i))); err != nil {
						return fmt.Errorf("small/%d/00: %w", i, err)
					}
				}
				return nil
			}); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// TestFaultEmptyNewLog: Badger creates a write-ahead log, then sizes it;
// a kill between the two leaves the newest .mem empty (CI met "00002.mem:
// 0 bytes, shorter than a log header" in TestFaultCrashDuringWrite). No
// write can be in it, and Badger starts it afresh: Open must succeed with
// every transaction before it. An empty .mem that the store is known to
// have written (the newest on record) lost its writes: ErrCorrupt.
func TestFaultEmptyNewLog(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's files on disk")
	base := unclosedStore(t)
	mems := memFiles(t, base)
	newest := int(logID(mems[len(mems)-1]))
	t.Run("created, not sized", func(t *testing.T) {
		dir := t.TempDir()
		copyStore(t, base, dir)
		if err := os.WriteFile(filepath.Join(dir, memName(newest+1)), nil, 0o600); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, &Options{MemTableSize: 1 << 20})
		if err != nil {
			t.Fatalf("Open = %v; an empty log newer than any written is what a kill leaves", err)
		}
		defer db.Close()
		if err := db.View(t.Context(), func(tx *Txn) error {
			_, err := tx.Get([]byte("small/5/19"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
	t.Run("written, then emptied", func(t *testing.T) {
		dir := t.TempDir()
		copyStore(t, base, dir)
		if err := os.Truncate(filepath.Join(dir, memName(newest)), 0); err != nil {
			t.Fatal(err)
		}
		db, err := Open(dir, &Options{MemTableSize: 1 << 20})
		if err == nil {
			db.Close()
			t.Fatal("Open succeeded with the newest written log emptied")
		}
		if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), memName(newest)) {
			t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, memName(newest))
		}
	})
}
