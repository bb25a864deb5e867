package kv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

// newTestSyncer returns a syncer over dir whose fsyncs of single files are
// recorded rather than done.
func newTestSyncer(dir string, syncLive func() error) (*syncer, *[]string) {
	s := newSyncer(dir, syncLive)
	var mu sync.Mutex
	var files []string
	s.fsync = func(path string) error {
		mu.Lock()
		defer mu.Unlock()
		files = append(files, filepath.Base(path))
		return nil
	}
	return s, &files
}

// waitFor polls cond for up to ten seconds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("timed out waiting for %s", what)
		}
	}
}

// TestGroupSyncShares holds the first sync on the disk while nine more
// commits arrive: they must all be served by one more sync, not nine.
func TestGroupSyncShares(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	release := make(chan struct{})
	var calls atomic.Int32
	s, _ := newTestSyncer("", func() error {
		if calls.Add(1) == 1 {
			<-release
		}
		return nil
	})
	var wg sync.WaitGroup
	errs := make(chan error, 10)
	wg.Go(func() { errs <- s.wait(false) })
	waitFor(t, "the first sync to start", func() bool { return calls.Load() == 1 })
	for range 9 {
		wg.Go(func() { errs <- s.wait(false) })
	}
	waitFor(t, "nine commits to wait", func() bool { c, _ := s.stats(); return c == 10 })
	close(release)
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	if commits, syncs := s.stats(); commits != 10 || syncs != 2 {
		t.Errorf("stats = %d commits, %d syncs; want 10 commits served by 2 syncs", commits, syncs)
	}
}

// TestGroupSyncCovers is a model test: writers append to a log and wait;
// a sync makes durable what the log held when the sync started. After
// wait returns, the writer's record must be durable, whatever the
// interleaving.
func TestGroupSyncCovers(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	var logLen, durable atomic.Int64
	s, _ := newTestSyncer("", func() error {
		n := logLen.Load()
		time.Sleep(50 * time.Microsecond) // the disk
		durable.Store(n)
		return nil
	})
	var wg sync.WaitGroup
	var bad atomic.Int64
	for range 16 {
		wg.Go(func() {
			for range 200 {
				mine := logLen.Add(1)
				if err := s.wait(false); err != nil {
					t.Error(err)
					return
				}
				if durable.Load() < mine {
					bad.Add(1)
				}
			}
		})
	}
	wg.Wait()
	if bad.Load() != 0 {
		t.Fatalf("%d waits returned before their record was synced", bad.Load())
	}
	commits, syncs := s.stats()
	t.Logf("%d commits, %d syncs", commits, syncs)
	if commits != 16*200 || syncs > commits {
		t.Errorf("stats = %d commits, %d syncs", commits, syncs)
	}
}

// TestGroupSyncFailureSticks: after a failed fsync no later sync can prove
// anything durable (the kernel may have dropped the pages), so every wait
// fails from then on, and the DB refuses writes.
func TestGroupSyncFailureSticks(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	boom := errors.New("EIO")
	fail := atomic.Bool{}
	s, _ := newTestSyncer("", func() error {
		if fail.Load() {
			return boom
		}
		return nil
	})
	if err := s.wait(false); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := s.wait(false); !errors.Is(err, boom) {
		t.Fatalf("wait after a failed sync = %v, want %v", err, boom)
	}
	fail.Store(false)
	if err := s.wait(false); !errors.Is(err, boom) {
		t.Fatalf("a later wait = %v; want the sticky %v", err, boom)
	}

	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	db.syncer.syncLive = func() error { return boom }
	put := func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }
	if err := db.Update(ctx, put); !errors.Is(err, boom) || !errors.Is(err, ErrNotDurable) {
		t.Fatalf("Update with a failing fsync = %v, want %v and ErrNotDurable", err, boom)
	}
	if err := db.View(ctx, func(tx *Txn) error { _, err := tx.Get([]byte("k")); return err }); err != nil {
		t.Fatalf("the commit whose fsync failed is not visible: %v", err)
	}
	if err := db.UpdateNoSync(ctx, put); !errors.Is(err, boom) {
		t.Fatalf("UpdateNoSync after a failed fsync = %v, want it refused", err)
	}
}

// TestGroupSyncOpenFailureDoesNotStick: a log file that cannot be opened
// (too many open files, say) fails that group's Updates with
// ErrNotDurable, but nothing was dropped: the next sync may succeed, and
// writes go on.
func TestGroupSyncOpenFailureDoesNotStick(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	if runtime.GOOS != "linux" {
		t.Skip("the syncer opens the log files itself only on Linux")
	}
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	emfile := fmt.Errorf("open: %w", syscall.EMFILE)
	var failing atomic.Bool
	failing.Store(true)
	db.syncer.fsync = func(path string) error {
		if failing.Load() {
			return emfile
		}
		return fsyncFile(path)
	}
	put := func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }
	if err := db.Update(ctx, put); !errors.Is(err, ErrNotDurable) || !errors.Is(err, syscall.EMFILE) {
		t.Fatalf("Update whose log could not be opened = %v, want ErrNotDurable", err)
	}
	failing.Store(false)
	if err := db.Update(ctx, put); err != nil {
		t.Fatalf("Update once the files open again = %v", err)
	}
	if err := db.View(ctx, func(*Txn) error { return nil }); err != nil {
		t.Fatalf("View after a failed fsync = %v; reads go on", err)
	}
}

// TestGroupSyncRotation: a sync of the current logs misses a log that
// rotated since the last sync, so then every log file is synced, value
// logs first, each kind oldest first, then the directory. With the files
// synced by path (Linux) the current ones are synced the same way, value
// log first; with Badger's Sync standing in (syncLive) only the rest is.
func TestGroupSyncRotation(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	for _, byPath := range []bool{true, false} {
		t.Run(fmt.Sprintf("by path %v", byPath), func(t *testing.T) {
			dir := t.TempDir()
			touch := func(names ...string) {
				for _, n := range names {
					if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
						t.Fatal(err)
					}
				}
			}
			remove := func(n string) {
				if err := os.Remove(filepath.Join(dir, n)); err != nil {
					t.Fatal(err)
				}
			}
			touch("00001.mem", "000001.vlog", "000001.sst", "MANIFEST")
			var live func() error
			if !byPath {
				live = func() error { return nil }
			}
			s, files := newTestSyncer(dir, live)
			d := filepath.Base(dir)
			step := func(name string, current []string, want ...string) {
				t.Helper()
				*files = nil
				if err := s.wait(true); err != nil {
					t.Fatal(err)
				}
				if byPath && len(want) == 0 {
					want = current
				}
				if !slices.Equal(*files, want) {
					t.Errorf("%s: synced files %q, want %q", name, *files, want)
				}
			}
			cur := func(vlog, mem string) []string { return []string{vlog, mem} }
			step("no rotation", cur("000001.vlog", "00001.mem"))
			touch("00002.mem")
			all := []string{"000001.vlog", "00001.mem", "00002.mem", d}
			if byPath {
				all = append(cur("000001.vlog", "00001.mem"), all...)
			}
			step("write-ahead log rotated", nil, all...)
			step("no rotation since", cur("000001.vlog", "00002.mem"))
			remove("00001.mem")
			step("an old log flushed", cur("000001.vlog", "00002.mem"))
			touch("00003.mem", "00004.mem")
			remove("00002.mem")
			remove("00003.mem")
			all = []string{"000001.vlog", "00004.mem", d}
			if byPath {
				all = append(cur("000001.vlog", "00002.mem"), all...) // tried; it is gone
			}
			step("rotated twice, the known log flushed", nil, all...)
			touch("000002.vlog", "00010.mem")
			all = []string{"000001.vlog", "000002.vlog", "00004.mem", "00010.mem", d}
			if byPath {
				all = append(cur("000001.vlog", "00004.mem"), all...)
			}
			step("both rotated", nil, all...)
			s.reset()
			step("reset", nil, "000001.vlog", "000002.vlog", "00004.mem", "00010.mem", d)
			step("after reset", cur("000002.vlog", "00010.mem"))
			*files = nil
			if err := s.wait(false); err != nil {
				t.Fatal(err)
			}
			if want := []string{"00010.mem"}; byPath && !slices.Equal(*files, want) {
				t.Errorf("no large value: synced files %q, want only the write-ahead log %q", *files, want)
			}
		})
	}
}

// TestReadsDoNotWaitForSync holds a synced commit's fsync and, while it
// is held, commits again (that commit then waits for a sync of its own):
// a new read sees the first commit, and an UpdateNoSync commits, before
// either synced Update returns. With Badger's Sync, which holds Badger's
// memtable lock through the fsync, the second commit's writer would queue
// for that lock and every read behind it.
func TestReadsDoNotWaitForSync(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the syncer calls Badger's Sync, which reads may wait for")
	}
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	inSync, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	db.syncer.fsync = func(path string) error {
		if held.CompareAndSwap(false, true) {
			close(inSync)
			<-release
		}
		return fsyncFile(path)
	}
	set := func(k, v string) func(*Txn) error {
		return func(tx *Txn) error { return tx.Set([]byte(k), []byte(v)) }
	}
	updated := make(chan error, 2)
	go func() { updated <- db.Update(ctx, set("a", "1")) }()
	<-inSync
	go func() { updated <- db.Update(ctx, set("b", "2")) }()
	waitFor(t, "the second commit to wait for its sync", func() bool { c, _ := db.SyncStats(); return c == 2 })
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if err := db.View(ctx, func(tx *Txn) error {
				for _, k := range []string{"a", "b"} {
					if _, err := tx.Get([]byte(k)); err != nil {
						return fmt.Errorf("get %s: %w", k, err)
					}
				}
				return nil
			}); err != nil {
				return err
			}
			return db.UpdateNoSync(ctx, set("c", "3"))
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		close(release)
		t.Fatal("a read or an UpdateNoSync waited for another commit's fsync")
	}
	select {
	case err := <-updated:
		t.Fatalf("a synced Update returned (%v) while its fsync was held", err)
	default:
	}
	close(release)
	for range 2 {
		if err := <-updated; err != nil {
			t.Fatal(err)
		}
	}
}

// TestGroupCommitConcurrent runs synced Updates from many goroutines on a
// store whose small memtables rotate, and reads everything back after a
// reopen; the fsyncs must be fewer than the commits.
func TestGroupCommitConcurrent(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its logs)")
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, &Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
	}
	var dirSyncs atomic.Int32 // syncAll ends with the directory
	db.syncer.fsync = func(path string) error {
		if path == dir {
			dirSyncs.Add(1)
		}
		return fsyncFile(path)
	}
	const writers, each = 16, 100
	val := make([]byte, 2<<10)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				key := []byte{byte(w), byte(i)}
				if err := db.Update(ctx, func(tx *Txn) error { return tx.Set(key, val) }); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	commits, syncs := db.SyncStats()
	t.Logf("%d commits, %d syncs, %d syncs of every log file", commits, syncs, dirSyncs.Load())
	if commits != writers*each || syncs == 0 || syncs >= commits {
		t.Errorf("SyncStats = %d commits, %d syncs; want fewer syncs than commits", commits, syncs)
	}
	if runtime.GOOS == "linux" && dirSyncs.Load() == 0 {
		t.Errorf("3 MiB through 1 MiB memtables, and no sync noticed a rotated log")
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	db = openTest(t, dir, nil)
	n := 0
	if err := db.View(ctx, func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if n != writers*each {
		t.Fatalf("read back %d keys, want %d", n, writers*each)
	}
}

// TestGroupSyncValueLog: a commit with a value large enough for Badger's
// value log has its sync include the value log; a commit of small values
// syncs the write-ahead log alone.
func TestGroupSyncValueLog(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its value log)")
	if runtime.GOOS != "linux" {
		t.Skip("elsewhere the syncer calls Badger's Sync, which syncs both")
	}
	ctx := context.Background()
	db := openTest(t, t.TempDir(), &Options{MemTableSize: 1 << 20}) // value threshold 100 KiB
	var synced []string
	db.syncer.fsync = func(path string) error {
		ext := filepath.Ext(path)
		if path == db.Dir() {
			ext = "dir"
		}
		synced = append(synced, ext)
		return fsyncFile(path)
	}
	for _, tt := range []struct {
		size int
		want []string
	}{
		{100, []string{".mem"}},
		{300 << 10, []string{".vlog", ".mem"}},
		{100, []string{".mem"}},
	} {
		synced = nil
		if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), make([]byte, tt.size)) }); err != nil {
			t.Fatal(err)
		}
		if slices.Contains(synced, "dir") { // a rotation: every file was synced
			continue
		}
		if !slices.Equal(synced, tt.want) {
			t.Errorf("a %d-byte value: synced %q, want %q", tt.size, synced, tt.want)
		}
	}
}

// TestGroupSyncRetryKeepsValueLog: when a group's sync fails to open its
// files, the next sync still includes the value log a commit of that
// group wrote to, and every file.
func TestGroupSyncRetryKeepsValueLog(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's group commit (fsync of its value log)")
	dir := t.TempDir()
	for _, n := range []string{"00001.mem", "000001.vlog"} {
		if err := os.WriteFile(filepath.Join(dir, n), nil, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	s, files := newTestSyncer(dir, nil)
	fail := true
	record := s.fsync
	s.fsync = func(path string) error {
		if fail {
			return syscall.EMFILE
		}
		return record(path)
	}
	if err := s.wait(true); !errors.Is(err, ErrNotDurable) {
		t.Fatalf("wait with files that do not open = %v, want ErrNotDurable", err)
	}
	fail = false
	*files = nil
	if err := s.wait(false); err != nil {
		t.Fatal(err)
	}
	if !slices.Contains(*files, "000001.vlog") {
		t.Errorf("the sync after a failed one synced %q: not the value log its group wrote", *files)
	}
}
