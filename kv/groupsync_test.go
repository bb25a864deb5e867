package kv

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
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
	wg.Go(func() { errs <- s.wait() })
	waitFor(t, "the first sync to start", func() bool { return calls.Load() == 1 })
	for range 9 {
		wg.Go(func() { errs <- s.wait() })
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
				if err := s.wait(); err != nil {
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
	boom := errors.New("EIO")
	fail := atomic.Bool{}
	s, _ := newTestSyncer("", func() error {
		if fail.Load() {
			return boom
		}
		return nil
	})
	if err := s.wait(); err != nil {
		t.Fatal(err)
	}
	fail.Store(true)
	if err := s.wait(); !errors.Is(err, boom) {
		t.Fatalf("wait after a failed sync = %v, want %v", err, boom)
	}
	fail.Store(false)
	if err := s.wait(); !errors.Is(err, boom) {
		t.Fatalf("a later wait = %v; want the sticky %v", err, boom)
	}

	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	db.syncer.syncLive = func() error { return boom }
	put := func(tx *Txn) error { return tx.Set([]byte("k"), []byte("v")) }
	if err := db.Update(ctx, put); !errors.Is(err, boom) {
		t.Fatalf("Update with a failing fsync = %v, want %v", err, boom)
	}
	if err := db.UpdateNoSync(ctx, put); !errors.Is(err, boom) {
		t.Fatalf("UpdateNoSync after a failed fsync = %v, want it refused", err)
	}
	if err := db.View(ctx, func(*Txn) error { return nil }); err != nil {
		t.Fatalf("View after a failed fsync = %v; reads go on", err)
	}
}

// TestGroupSyncRotation: Badger's Sync flushes the current logs only, so
// when a log rotated since the last sync every log file is synced.
func TestGroupSyncRotation(t *testing.T) {
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
	s, files := newTestSyncer(dir, func() error { return nil })
	step := func(name string, want ...string) {
		t.Helper()
		*files = nil
		if err := s.wait(); err != nil {
			t.Fatal(err)
		}
		got := slices.Clone(*files)
		slices.Sort(got)
		if !slices.Equal(got, want) {
			t.Errorf("%s: synced files %q, want %q", name, got, want)
		}
	}
	step("no rotation")
	touch("00002.mem")
	step("write-ahead log rotated", "000001.vlog", "00001.mem", "00002.mem")
	step("no rotation since")
	remove("00001.mem")
	step("an old log flushed")
	touch("00003.mem", "00004.mem")
	remove("00002.mem")
	remove("00003.mem")
	step("rotated twice, the known log flushed", "000001.vlog", "00004.mem")
	touch("000002.vlog")
	step("value log rotated", "000001.vlog", "000002.vlog", "00004.mem")
	s.reset()
	step("reset", "000001.vlog", "000002.vlog", "00004.mem")
	step("after reset")
}

// TestReadsDoNotWaitForSync holds a synced commit's fsync: the commit is
// visible to a new read, and an UpdateNoSync commits, before it returns.
func TestReadsDoNotWaitForSync(t *testing.T) {
	ctx := context.Background()
	db := openTest(t, t.TempDir(), nil)
	live := db.syncer.syncLive
	inSync, release := make(chan struct{}), make(chan struct{})
	var held atomic.Bool
	db.syncer.syncLive = func() error {
		if held.CompareAndSwap(false, true) {
			close(inSync)
			<-release
		}
		return live()
	}
	updated := make(chan error, 1)
	go func() {
		updated <- db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("a"), []byte("1")) })
	}()
	<-inSync
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			if err := db.View(ctx, func(tx *Txn) error {
				_, err := tx.Get([]byte("a"))
				return err
			}); err != nil {
				return err
			}
			return db.UpdateNoSync(ctx, func(tx *Txn) error { return tx.Set([]byte("b"), []byte("2")) })
		}()
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a read or an UpdateNoSync waited for another commit's fsync")
	}
	select {
	case err := <-updated:
		t.Fatalf("Update returned (%v) before its fsync", err)
	default:
	}
	close(release)
	if err := <-updated; err != nil {
		t.Fatal(err)
	}
}

// TestGroupCommitConcurrent runs synced Updates from many goroutines on a
// store whose small memtables rotate, and reads everything back after a
// reopen; the fsyncs must be fewer than the commits.
func TestGroupCommitConcurrent(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	db, err := Open(dir, &Options{MemTableSize: 1 << 20})
	if err != nil {
		t.Fatal(err)
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
	t.Logf("%d commits, %d syncs", commits, syncs)
	if commits != writers*each || syncs == 0 || syncs > commits {
		t.Errorf("SyncStats = %d commits, %d syncs", commits, syncs)
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
