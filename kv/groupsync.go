package kv

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"slices"
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
// in the log, and one fsync acknowledges a whole group of concurrent
// commits. Update still returns only after its commit is on disk, so the
// promise of [Sync] is unchanged: an acknowledged write survives a crash
// of the process or of the machine.
//
// On Linux the syncer fsyncs Badger's log files by path (fdatasync: the
// pages Badger wrote through its memory maps are the file's pages), and
// takes none of Badger's locks: Badger's Sync holds its memtable lock for
// reading through the fsync, a commit arriving meanwhile queues for it
// for writing, and every read then queues behind that commit. Elsewhere,
// where an fsync of a mapped file may not reach the map's pages, it calls
// Badger's Sync.
//
// A write is visible to other transactions for up to one fsync before its
// Update returns, and a crash of the machine in that gap loses it; its
// writer was never told it succeeded. Files are synced oldest data first
// (value logs, then write-ahead logs in number order), so a later
// transaction that read such a write is usually lost with it, but the
// kernel may write pages back in any order before the fsync, so no
// promise is made for unacknowledged writes.
//
// A log that rotated between a commit and the fsync meant for it would be
// left out of a sync of the current files, so after each sync the syncer
// looks for a rotation (the next file number exists, or the one it knew
// is gone) and then fsyncs every log file and the directory.

// syncer makes committed transactions durable in groups. The zero value is
// not usable; see newSyncer.
type syncer struct {
	// syncLive flushes the current logs when set (Badger's Sync, where
	// files are not synced by path); fsync flushes one file. Tests stand
	// in others.
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
	// vlog makes the next sync include the value log: a commit since the
	// last one may have written a value there.
	vlog bool

	// mem and vlog are the newest write-ahead log and value-log file
	// numbers seen; only the syncing caller touches them.
	mem, vlogN int
	// files holds the current logs open, so that a sync need not open
	// them; a rotation closes them. Only the syncing caller, and close,
	// touch it.
	files map[string]*os.File
	// onRotate, when set, is told the write-ahead logs (their numbers,
	// ascending) after a sync of every file, before the commits it covered
	// are acknowledged (the record of walmark.go).
	onRotate func(mems []int) error
}

// newSyncer returns a syncer of the logs in dir. syncLive, when not nil,
// replaces the fsync by path of the current files.
func newSyncer(dir string, syncLive func() error) *syncer {
	s := &syncer{syncLive: syncLive, dir: dir, files: map[string]*os.File{}}
	s.fsync = s.fsyncOpen
	s.cond.L = &s.mu
	s.mem, s.vlogN = newestLogs(dir)
	return s
}

// fsyncError marks an error of the fsync itself, as opposed to one of
// finding or opening the files: only the first makes the failure sticky.
type fsyncError struct{ err error }

func (e *fsyncError) Error() string { return e.err.Error() }
func (e *fsyncError) Unwrap() error { return e.err }

// wait returns once a commit that finished before the call is on disk. One
// caller at a time syncs, for every commit that finished before it
// started; the others wait for it and at most one more. Its error wraps
// [ErrNotDurable]: the commit stays visible whatever happens here.
//
// vlog says whether the commit may have written to the value log (a large
// value); only then does a sync include it.
func (s *syncer) wait(vlog bool) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.vlog = s.vlog || vlog
	s.committed++
	ticket := s.committed
	for s.synced < ticket {
		if s.failed != nil {
			return fmt.Errorf("%w: %w", ErrNotDurable, s.failed)
		}
		if s.running {
			s.cond.Wait()
			continue
		}
		upTo, err := s.lead()
		if err == nil {
			s.synced = upTo
			continue
		}
		var fe *fsyncError
		if errors.As(err, &fe) {
			s.failed = fmt.Errorf("kv: sync: %w (writes are refused until the store is reopened)", err)
			continue
		}
		// The files could not be found or opened (too many open files,
		// say): nothing was dropped, and the next sync may succeed, but
		// this group was not shown durable.
		return fmt.Errorf("%w: kv: sync: %w", ErrNotDurable, err)
	}
	return nil
}

// lead syncs for every commit so far, with s.mu held on entry and on
// return (a panic included), and returns the commit count it covered.
func (s *syncer) lead() (upTo uint64, err error) {
	s.running = true
	upTo, all, vlog := s.committed, s.rescan, s.vlog
	s.rescan, s.vlog = false, false
	s.mu.Unlock()
	done := false
	defer func() {
		s.mu.Lock()
		s.running = false
		s.syncs++
		if err != nil || !done {
			// The group was not shown durable (or a panic unwinds):
			// whoever syncs next does it for them, value log and every
			// file included.
			s.vlog, s.rescan = true, true
		}
		s.cond.Broadcast()
	}()
	err = s.syncLogs(all, vlog)
	done = true
	return upTo, err
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

// syncLogs flushes the current logs (the value log only when vlog is
// set), then every log file if all is set or one rotated since the last
// call. A rotated write-ahead log stays until its memtable is flushed to a
// table, which Badger syncs; a file gone meanwhile needs nothing. Only the
// caller that set running calls it.
func (s *syncer) syncLogs(all, vlog bool) error {
	if s.syncLive != nil {
		if err := s.syncLive(); err != nil {
			return &fsyncError{err}
		}
	} else if s.dir != "" && !all {
		names := []string{memName(s.mem)}
		if vlog {
			names = []string{vlogName(s.vlogN), memName(s.mem)}
		}
		for _, name := range names {
			if err := s.fsync(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
				return err
			}
		}
	}
	if s.dir == "" {
		return nil
	}
	// The value log rotates only as a value is written to it, so it is
	// looked at only then.
	if !all && !s.rotated(memName(s.mem), memName(s.mem+1)) && (!vlog || !s.rotated(vlogName(s.vlogN), vlogName(s.vlogN+1))) {
		return nil
	}
	return s.syncAll()
}

// syncAll fsyncs every value-log file, then every write-ahead log, each in
// number order, then the directory (a new file's entry), and notes the
// newest of each.
func (s *syncer) syncAll() error {
	entries, err := os.ReadDir(s.dir)
	if err != nil {
		return err
	}
	s.closeFiles() // a rotated file may be gone: let it go
	defer s.closeFiles()
	var vlogs, mems []int
	for _, e := range entries {
		n, ok := logNumber(e.Name())
		switch {
		case !ok:
		case strings.HasSuffix(e.Name(), ".mem"):
			mems = append(mems, n)
		default:
			vlogs = append(vlogs, n)
		}
	}
	slices.Sort(vlogs)
	slices.Sort(mems)
	var names []string
	for _, n := range vlogs {
		names = append(names, vlogName(n))
	}
	for _, n := range mems {
		names = append(names, memName(n))
	}
	for _, name := range names {
		if err := s.fsync(filepath.Join(s.dir, name)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	if err := s.fsync(s.dir); err != nil && runtime.GOOS == "linux" {
		return err // elsewhere a directory may not open for a sync
	}
	s.mem, s.vlogN = -1, -1
	if len(mems) > 0 {
		s.mem = mems[len(mems)-1]
	}
	if len(vlogs) > 0 {
		s.vlogN = vlogs[len(vlogs)-1]
	}
	if s.onRotate != nil && s.mem >= 0 {
		return s.onRotate(mems)
	}
	return nil
}

// fsyncOpen is fsyncFile through the files kept open.
func (s *syncer) fsyncOpen(path string) error {
	f := s.files[path]
	if f == nil {
		var err error
		if f, err = os.Open(path); err != nil {
			return err
		}
		s.files[path] = f
	}
	if err := datasync(f); err != nil {
		return &fsyncError{err}
	}
	return nil
}

// closeFiles closes the files kept open.
func (s *syncer) closeFiles() {
	for path, f := range s.files {
		_ = f.Close()
		delete(s.files, path)
	}
}

// close closes the files kept open, for good or until the next sync; the
// caller holds the DB's lock for writing, so no sync runs.
func (s *syncer) close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.closeFiles()
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
// wrote through its memory map of the file; a directory's entries too. An
// error of the open is returned as is, one of the fsync as an
// *fsyncError.
func fsyncFile(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := datasync(f); err != nil {
		return &fsyncError{err}
	}
	return nil
}
