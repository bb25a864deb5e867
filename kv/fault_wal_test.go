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

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/engramdb/engram/kv/kvtest"
)

// killWriter runs the crash child (runCrashChild) on dir and kills it with
// SIGKILL once it has acknowledged n transactions; it returns the last
// acknowledged one.
func killWriter(t *testing.T, dir string, n int) int {
	t.Helper()
	return killWriterWhen(t, dir, nil, func(acked int) bool { return acked >= n })
}

// killWriterWhen runs the crash child on dir with env added to its
// environment and kills it with SIGKILL after the first acknowledgement
// for which done returns true; it returns the last acknowledged
// transaction.
func killWriterWhen(t *testing.T, dir string, env []string, done func(acked int) bool) int {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), env...), crashEnv+"="+dir)
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
		if !killed && done(i) {
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

// openAcked opens dir and checks that every transaction up to acked is
// there.
func openAcked(t *testing.T, dir string, acked int) {
	t.Helper()
	db, err := Open(dir, &Options{MemTableSize: 1 << 20})
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
}

// refusesDamaged copies base, damages the copy and checks that Open
// refuses it with ErrCorrupt naming want.
func refusesDamaged(t *testing.T, base string, damage func(t *testing.T, dir string), want string) {
	t.Helper()
	dir := t.TempDir()
	copyStore(t, base, dir)
	damage(t, dir)
	db, err := Open(dir, &Options{MemTableSize: 1 << 20})
	if err == nil {
		db.Close()
		t.Fatalf("Open succeeded after the write-ahead log %s was lost", want)
	}
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), want) {
		t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, want)
	}
	t.Logf("Open = %v", err)
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
		t.Run(tc.name, func(t *testing.T) { refusesDamaged(t, base, tc.damage, newest) })
	}
	t.Run("left alone", func(t *testing.T) { openAcked(t, base, acked) })
}

// TestFaultWALOlderLost kills writers of synced transactions and, in
// copies of what they left, deletes a write-ahead log that is not the
// newest: the log the store recorded while Badger had already started a
// newer one, and, with flushes held back so that several memtables are
// in their logs, the oldest of them or one in the middle. Badger replays
// the logs left and would open without the acknowledged writes of the
// deleted one; Open must refuse with ErrCorrupt naming it, and the copies
// left alone must open with every acknowledged transaction.
func TestFaultWALOlderLost(t *testing.T) {
	kvtest.SkipOnPostgres(t, "kills a child writing and damages Badger's files")
	remove := func(n int) func(t *testing.T, dir string) {
		return func(t *testing.T, dir string) {
			if err := os.Remove(filepath.Join(dir, memName(n))); err != nil {
				t.Fatal(err)
			}
		}
	}
	// The child is killed once, after rotations, or twice, the second
	// time while it writes the first log of its session.
	for _, tc := range []struct {
		name  string
		kills []int // the acknowledged transaction each kill waits for
	}{
		{"recorded log deleted, a newer one left", []int{250}},
		{"first log of a reopened session deleted, a newer one left", []int{100, 120}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			base := t.TempDir()
			acked := -1
			for _, n := range tc.kills {
				acked = killWriter(t, base, n)
			}
			mark, ok, err := readWALMark(base)
			if err != nil || !ok || mark.newest < 0 {
				t.Fatalf("the killed store recorded no newest log (%v, %v)", ok, err)
			}
			refusesDamaged(t, base, func(t *testing.T, dir string) {
				remove(mark.newest)(t, dir)
				// What a kill just after Badger created the next log
				// leaves, when no acknowledged commit is in it yet (kept
				// if there).
				next := filepath.Join(dir, memName(mark.newest+1))
				f, err := os.OpenFile(next, os.O_CREATE|os.O_WRONLY, 0o600)
				if err != nil {
					t.Fatal(err)
				}
				f.Close()
			}, memName(mark.newest))
			if mark.newest > mark.first {
				versionsGone(t, base, mark, acked)
			}
			openAcked(t, base, acked)
		})
	}
	// Level 0 takes two tables; the third flush writes its table and
	// waits, then the memtables queue in their logs, and the writer waits
	// once the newest is full: four logs, the oldest of them flushed (its
	// table named by the manifest), the next two not, then the newest.
	// With Async durability nothing syncs, so the record holds no version
	// seen at a rotation: the logs left show what is missing.
	for _, durability := range []Durability{Sync, Async} {
		t.Run("flushes held back, "+durability.String(), func(t *testing.T) {
			if durability == Async && (testing.Short() || raceEnabled) {
				t.Skip("a fifth child: .ci/run's fault step runs it without -race")
			}
			env := []string{crashHoldEnv + "=1"}
			if durability == Async {
				env = append(env, crashAsyncEnv+"=1")
			}
			heldBack(t, env, remove)
		})
	}
}

// versionsGone: a compaction can drop every write of a flushed log from
// the tables again (deletions that met what they delete), and the
// record's bound is then above every table. The manifest's flushes show
// the log was flushed, and a copy of base, killed after rotations
// (mark), must open with every acknowledged transaction.
func versionsGone(t *testing.T, base string, mark walMark, acked int) {
	t.Run("a flushed log's versions gone from the tables", func(t *testing.T) {
		dir := t.TempDir()
		copyStore(t, base, dir)
		gone := mark.newest - 1
		if _, err := os.Stat(filepath.Join(dir, memName(gone))); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("%s, flushed, is still there (%v)", memName(gone), err)
		}
		mark.seen[gone] = 1 << 40
		if err := writeWALMark(dir, &mark); err != nil {
			t.Fatal(err)
		}
		openAcked(t, dir, acked)
	})
}

// heldBack is TestFaultWALOlderLost with flushes held back: the child runs
// with env.
func heldBack(t *testing.T, env []string, remove func(int) func(*testing.T, string)) {
	base := t.TempDir()
	acked := killWriterWhen(t, base, env, func(int) bool {
		nums, _, err := memLogs(base)
		return err == nil && len(nums) >= 4
	})
	flushed, unflushed, orphans := logsFlushed(t, base)
	if orphans && len(unflushed) > 0 {
		// The kill came between a flush's table and its manifest record:
		// the oldest unflushed log's writes are in a table the manifest
		// does not name, and checkOrphans refuses its loss first.
		unflushed = unflushed[1:]
	}
	b, _ := os.ReadFile(filepath.Join(base, walMarkFile))
	t.Logf("flushed logs %v, unflushed %v, record %q", flushed, unflushed, b)
	// The newest log may hold no write yet (with Async durability the
	// kill can come before the commit that began it wrote there).
	nums, _, err := memLogs(base)
	if err != nil || len(unflushed) < 2 || nums[len(nums)-1] <= unflushed[1] {
		t.Fatalf("logs %v (%v), of which unflushed %v: want two unflushed below the newest", nums, err, unflushed)
	}
	t.Run("oldest unflushed deleted", func(t *testing.T) {
		refusesDamaged(t, base, remove(unflushed[0]), memName(unflushed[0]))
	})
	t.Run("middle deleted", func(t *testing.T) {
		refusesDamaged(t, base, remove(unflushed[1]), memName(unflushed[1]))
	})
	// Deleting a log whose table the manifest names loses nothing.
	for _, n := range flushed {
		t.Run("flushed "+memName(n)+" deleted", func(t *testing.T) {
			dir := t.TempDir()
			copyStore(t, base, dir)
			remove(n)(t, dir)
			openAcked(t, dir, acked)
		})
	}
	t.Run("left alone", func(t *testing.T) { openAcked(t, base, acked) })
}

// logsFlushed sorts the write-ahead logs of a store that is not open into
// those whose writes a live table holds and the others, ascending, and
// says whether a table is on disk that the manifest does not name.
func logsFlushed(t *testing.T, dir string) (flushed, unflushed []int, orphans bool) {
	t.Helper()
	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	defer kr.Close()
	ssts := map[uint64]string{}
	names, _ := filepath.Glob(filepath.Join(dir, "*.sst"))
	for _, name := range names {
		if id, ok := table.ParseFileID(filepath.Base(name)); ok {
			ssts[id] = filepath.Base(name)
		}
	}
	mf, err := checkManifest(dir, ssts)
	if err != nil {
		t.Fatal(err)
	}
	orphans = len(mf.orphans) > 0
	live, err := checkTables(dir, mf.tables, kr)
	if err != nil {
		t.Fatal(err)
	}
	nums, _, err := memLogs(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range nums {
		r, err := checkLog(filepath.Join(dir, memName(n)), kr)
		switch {
		case err != nil:
			t.Fatal(err)
		case r.ok && r.max <= live:
			flushed = append(flushed, n)
		case r.ok:
			unflushed = append(unflushed, n)
		}
	}
	return flushed, unflushed, orphans
}
