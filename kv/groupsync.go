package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
)

// Group commit.
//
// With [Sync] durability Badger is opened without SyncWrites, and the
// fsync is done here, after the commit, once for every commit that
// finished before it started. Badger's own SyncWrites syncs the
// write-ahead log once per transaction, inside its single writer
// goroutine and before the transaction becomes visible: commits from many
// clients queue for one fsync each, and every new transaction, reads
// included, waits for the commits ahead of it (Badger's read watermark)
// and so for their fsyncs. Here a commit becomes visible as soon as it is
// in the log (in the page cache), reads never wait for the disk, and one
// fsync acknowledges a whole group of concurrent commits. Update still
// returns only after its commit is on disk, so the promise of [Sync] is
// unchanged: an acknowledged write survives a crash of the process or of
// the machine.
//
// A write is visible to other transactions for up to one fsync before its
// Update returns. A crash in that gap loses it, and its writer was never
// told it succeeded; a transaction that read it and wrote is later in the
// log and is synced no earlier, so Badger's replay, which stops at the
// first torn record, keeps no write that depends on a lost one.
//
// Badger's Sync flushes only the current write-ahead log and the current
// value-log file. A log that rotated between a commit and the fsync meant
// for it would be left out, so after each Sync the syncer looks for a
// rotation (the next file number exists, or the one it knew is gone) and
// then fsyncs every log file in the directory.

// syncer makes committed transactions durable in groups. The zero value is
// not usable; see newSyncer.
type syncer struct {
	// syncLive flushes the current logs (Badger's Sync); fsync flushes one
	// file. Tests stand in others.
	syncLive func() error
	fsync    func(path string) error
	dir      string

	mu   sync.Mutex
	cond sync.Cond
	// committed counts commits that asked for a sync; every one numbered
	// up to synced is on disk. running is set while one caller syncs for
	// all.
	committed, synced uint64
	running           bool
	// failed is the first failed fsync's error: after it the kernel may
	// have dropped the dirty pages it could not write, so no later fsync
	// can prove earlier commits durable, and every later sync fails too.
	failed error
	syncs  uint64
	// rescan makes the next sync fsync every log file (see reset).
	rescan bool

	// mem and vlog are the newest write-ahead log and value-log file
	// numbers seen; only the syncing caller touches them.
	mem, vlog int
}

func newSyncer(dir string, syncLive func() error) *syncer {
	s := &syncer{syncLive: syncLive, fsync: fsyncFile, dir: dir}
	s.cond.L = &s.mu
	s.mem, s.vlog = newestLogs(dir)
	return s
}

// wait returns once a commit that finished before the call is on disk. One
// caller at a time syncs, for every commit that finished before it
// started; the others wait for it and at most one more.
func (s *syncer) wait() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.committed++
	ticket := s.committed
	for s.synced < ticket {
		if s.failed != nil {
			return s.failed
		}
		if s.running {
			s.cond.Wait()
			continue
		}
		s.running = true
		upTo, all := s.committed, s.rescan
		s.rescan = false
		s.mu.Unlock()
		err := s.syncLogs(all)
		s.mu.Lock()
		s.running = false
		s.syncs++
		if err != nil {
			s.failed = fmt.Errorf("kv: sync: %w (commits since the last successful sync may be lost; writes are refused until the store is reopened)", err)
		} else {
			s.synced = upTo
		}
		s.cond.Broadcast()
	}
	return nil
}

// stats returns how many calls waited for a sync and how many syncs ran.
func (s *syncer) stats() (commits, syncs uint64) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.committed, s.syncs
}

// err returns the sticky error of a failed sync, or nil.
func (s *syncer) err() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.failed
}

// syncLogs flushes the current logs, then every log file if all is set or
// one rotated since the last call. A rotated write-ahead log stays until
// its memtable is flushed to a table, which Badger syncs; a file gone
// meanwhile needs nothing. Only the caller that set running calls it.
func (s *syncer) syncLogs(all bool) error {
	if err := s.syncLive(); err != nil {
		return err
	}
	if s.dir == "" {
		return nil
	}
	if !all && !s.rotated(memName(s.mem), memName(s.mem+1)) && !s.rotated(vlogName(s.vlog), vlogName(s.vlog+1)) {
		return nil
	}
	return s.syncAll()
}

// syncAll fsyncs every write-ahead log and value-log file in the directory
// and notes the newest of each.
func (s *syncer) syncAll() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		if _, ok := logNumber(e.Name()); !ok {
			continue
		}
		if err := s.fsync(filepath.Join(s.dir, e.Name())); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	s.mem, s.vlog = newestLogs(s.dir)
	return nil
}

// rotated reports whether the log file cur is gone or next exists.
func (s *syncer) rotated(cur, next string) bool {
	if _, err := os.Lstat(filepath.Join(s.dir, cur)); err != nil {
		return true
	}
	_, err := os.Lstat(filepath.Join(s.dir, next))
	return err == nil
}

// reset makes the next sync fsync every log file: Badger was reopened (its
// file numbers may have started again), or a caller wants everything on
// disk.
func (s *syncer) reset() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.rescan = true
}

// Badger's log file names: the write-ahead log of a memtable is
// %05d.mem, a value-log file %06d.vlog, numbered up by one at each
// rotation.
func memName(n int) string  { return fmt.Sprintf("%05d.mem", n) }
func vlogName(n int) string { return fmt.Sprintf("%06d.vlog", n) }

// logNumber returns the number of a write-ahead log or value-log file
// name, and whether the name is one.
func logNumber(name string) (int, bool) {
	base, ok := strings.CutSuffix(name, ".mem")
	if !ok {
		if base, ok = strings.CutSuffix(name, ".vlog"); !ok {
			return 0, false
		}
	}
	n, err := strconv.Atoi(base)
	return n, err == nil && n >= 0
}

// newestLogs returns the highest write-ahead log and value-log numbers in
// dir, -1 where there is none (or dir cannot be read: the next sync then
// looks at every file).
func newestLogs(dir string) (mem, vlog int) {
	mem, vlog = -1, -1
	if dir == "" {
		return mem, vlog
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		n, ok := logNumber(e.Name())
		switch {
		case !ok:
		case strings.HasSuffix(e.Name(), ".mem"):
			mem = max(mem, n)
		default:
			vlog = max(vlog, n)
		}
	}
	return mem, vlog
}

// fsyncFile flushes one file's data to disk, including the pages Badger
// wrote through its memory map of the file.
func fsyncFile(path string) error {
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	err = f.Sync()
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	return err
}
