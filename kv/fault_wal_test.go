package kv

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// killWriter runs the crash child (runCrashChild) on dir and kills it with
// SIGKILL once it has acknowledged n transactions; it returns the last
// acknowledged one.
func killWriter(t *testing.T, dir string, n int) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	acked, killed := -1, false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		i, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ack "))
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("child: %s", sc.Text())
		}
		acked = i
		if !killed && i >= n {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatalf("the child stopped by itself after ack %d", acked)
	}
	return acked
}

// TestFaultWALLost kills a writer of synced transactions with SIGKILL,
// then, in copies of what it left, deletes its newest write-ahead log
// (.mem), or every one, or cuts the newest at a record boundary: Badger
// would replay what is left and open without the acknowledged writes in
// it. Open must refuse with ErrCorrupt naming the log, and the copy left
// alone must open with every acknowledged transaction.
func TestFaultWALLost(t *testing.T) {
	kvtest.SkipOnPostgres(t, "kills a child writing and damages Badger's files")
	base := t.TempDir()
	acked := killWriter(t, base, 250)
	nums, _, err := memLogs(base)
	if err != nil || len(nums) == 0 {
		t.Fatalf("the killed store has no write-ahead log (%v)", err)
	}
	// The newest log that holds an acknowledged write is the one the
	// store recorded. A kill just after Badger rotated leaves a newer log
	// with no acknowledged write in it (CI saw 00005.mem so): deleting
	// that one loses nothing, so it goes with the recorded one.
	mark, ok, err := readWALMark(base)
	if err != nil || !ok || mark.newest < 0 {
		t.Fatalf("the killed store recorded no newest log (%v, %v)", ok, err)
	}
	newest := memName(mark.newest)
	cases := []struct {
		name   string
		damage func(t *testing.T, dir string)
	}{
		{"newest deleted", func(t *testing.T, dir string) {
			for _, n := range nums {
				if n < mark.newest {
					continue
				}
				if err := os.Remove(filepath.Join(dir, memName(n))); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"every log deleted", func(t *testing.T, dir string) {
			for _, n := range nums {
				if err := os.Remove(filepath.Join(dir, memName(n))); err != nil {
					t.Fatal(err)
				}
			}
		}},
		{"newest cut at a record boundary", func(t *testing.T, dir string) {
			p := filepath.Join(dir, newest)
			ends := recordEnds(t, p)
			if len(ends) < 2 {
				t.Fatalf("%s holds %d records", newest, len(ends))
			}
			if err := os.Truncate(p, ends[len(ends)/2]); err != nil {
				t.Fatal(err)
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, base, dir)
			tc.damage(t, dir)
			db, err := Open(dir, &Options{MemTableSize: 1 << 20})
			if err == nil {
				db.Close()
				t.Fatalf("Open succeeded after the write-ahead log was damaged (%s)", tc.name)
			}
			if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), newest) {
				t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, newest)
			}
			t.Logf("Open = %v", err)
		})
	}
	t.Run("left alone", func(t *testing.T) {
		db, err := Open(base, &Options{MemTableSize: 1 << 20})
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		for i := 0; i <= acked; i++ {
			if err := db.View(t.Context(), func(tx *Txn) error {
				for j := range crashTxnKeys {
					if _, err := tx.Get(crashKey(i, j)); err != nil {
						return err
					}
				}
				return nil
			}); err != nil {
				t.Fatalf("acknowledged transaction %d: %v", i, err)
			}
		}
	})
}
