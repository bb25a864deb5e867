package kv

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"log/slog"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/pb"
	"google.golang.org/protobuf/proto"
)

// The write-ahead log record.
//
// Badger keeps the writes not yet in a table in write-ahead logs, one
// .mem file per memtable, numbered up by one at each rotation and deleted
// once the memtable is flushed to a table. It records nothing about them
// elsewhere: the manifest names only tables, the numbers start again at 1
// after a clean Close, and at open Badger replays whatever .mem files it
// finds. So a deleted .mem, or one cut at a record boundary, loses its
// writes without a trace (issue 26: 91 of 800 messages gone, and Open
// said nothing).
//
// walMarkFile records, outside Badger's files, what the logs of the
// store must be, and checkFiles compares it with the directory before
// Badger opens:
//
//   - while a session runs (and after it is killed) the newest .mem it is
//     known to have written: the one Badger created at open, and, with
//     Sync durability, each newer one the group syncer finds before it
//     acknowledges a commit written there. Badger writes only to its
//     newest log and deletes a log only after flushing it, and the newest
//     one is never flushed while the store is open, so a directory whose
//     newest .mem is older than the recorded one has lost that log;
//   - the first log of the session, the newest version the store held
//     before it (base), with Sync durability the newest version
//     committed when the syncer found each later log the newest (seen),
//     and the length and checksum of the manifest when the session began.
//     Badger flushes the logs oldest first, so a log of the session
//     missing below the newest one left was lost unless it was flushed:
//     then a table holds a version at least that new (or newer than an
//     older log left), or the manifest records as many flushes since the
//     session began (checkWALHole);
//   - the size Badger gives a .mem it creates (twice the memtable size,
//     and it never shrinks one it writes), and the sizes Badger cut the
//     logs it replayed at open to: a .mem of another size was cut short;
//   - while Close runs, the newest version the memtables held: Close
//     flushes them and deletes their logs, so a kill during Close may
//     leave none, and that is loss only if no table holds that version.
//
// What cannot be detected, and why:
//
//   - records zeroed at the end of the newest log, or a log cut and then
//     extended back to its size with zeros: a log is preallocated with
//     zeros, and a crash leaves the same shape (checkLog checks that
//     nothing but zeros, or one torn record, follows the last record);
//   - with Async durability, a deleted newest .mem while an older log of
//     the same session is left (nothing syncs, so nothing is told of the
//     rotations; the log Badger created at open is recorded), and a
//     deleted log below the newest whose predecessor is gone too, unless
//     it is the session's first (nothing records where its versions
//     begin). With Sync durability the second is missed only when the
//     syncer found the log before the commit that began it was in it, or
//     after the next log began (its seen bound is then an older version
//     or none);
//   - a deleted log of an earlier session that this one replayed and had
//     not flushed yet when it was killed: only the logs from the
//     session's first are checked for holes (the older ones for their
//     sizes);
//   - holes, after a kill between Badger's open and the record of the
//     session, or during a drop (Compact's flush, BulkLoad), which
//     deletes logs whose writes no table holds: the record checks no log
//     of the session until the drop is over (dropping);
//   - anything when walMarkFile is deleted along with the logs, or in a
//     store last opened by a version that did not write it: with no
//     record, Open checks nothing about the logs (a store written by such
//     a version and then opened by this one has a record from then on).
//     A record of format 1 has no base or seen lines: holes are found
//     from the logs left only;
//   - a log that was already flushed when it was deleted: its data is in
//     a table, and nothing is lost.
//
// The hole check trusts a table's newest version only to show a flush; a
// compaction may drop every write of a flushed log from the tables again
// (deletions that met what they delete), so when the versions say
// "not flushed" the manifest's flushes are counted too. Only if Badger
// also rewrote its manifest during the session (it does so after about
// 10,000 table deletions) could Open refuse a store that lost nothing,
// naming the log; deleting walMarkFile opens it, without the checks of
// the logs.
const walMarkFile = "ENGRAM-WAL"

// walState is the phase of the session walMarkFile describes.
type walState uint8

const (
	// walClosed: Close flushed every memtable; no log is expected.
	walClosed walState = iota
	// walClosing: Close began flushing, and may have deleted logs.
	walClosing
	// walOpen: a session runs, or was killed.
	walOpen
)

var walStates = [...]string{walClosed: "closed", walClosing: "closing", walOpen: "open"}

// walMark is the content of walMarkFile.
type walMark struct {
	state walState
	// newest is the number of the newest .mem known written (open,
	// closing); -1 for none.
	newest int
	// first is the number of the first .mem the session created; logs
	// from it on are fileSize bytes. -1 while Badger replays the logs of
	// an earlier session (open): it cuts them to their records.
	first    int
	fileSize int64
	// sizes are the sizes of the logs older than first, as Badger left
	// them after replaying them.
	sizes map[int]int64
	// version is the newest version the memtables held when Close began
	// (closing).
	version uint64
	// base is the newest version the store held when the session's first
	// log began (open): every write of the session's logs is newer. Zero
	// when not known (a record of format 1).
	base uint64
	// seen holds, for a log n of the session, the newest version
	// committed when the group syncer found n the newest log and no newer
	// one existed yet (open). Every version then was in a table or in a
	// log up to n, so once n is flushed a table holds one at least as new.
	seen map[int]uint64
	// manifest is the length of Badger's MANIFEST when the session began
	// (open) and manifestSum the CRC-32 (IEEE) of those bytes: Badger
	// only appends to it until it rewrites it, and the flushes of the
	// session are the records appended since (flushesSince).
	manifest    int64
	manifestSum uint32
}

// walMarkMagic starts walMarkFile: a name and a format version. Format 2
// added the base line and the seen lines; a record of format 1 (walMarkV1)
// is still read, as one with neither.
const (
	walMarkMagic = "engram-wal 2"
	walMarkV1    = "engram-wal 1"
)

func (m *walMark) encode() []byte {
	var b bytes.Buffer
	fmt.Fprintf(&b, "%s\nstate %s\nnewest %d\nfirst %d\nfilesize %d\nversion %d\nbase %d\nmanifest %d %d\n",
		walMarkMagic, walStates[m.state], m.newest, m.first, m.fileSize, m.version, m.base, m.manifest, m.manifestSum)
	for _, n := range slices.Sorted(maps.Keys(m.sizes)) {
		fmt.Fprintf(&b, "old %d %d\n", n, m.sizes[n])
	}
	for _, n := range slices.Sorted(maps.Keys(m.seen)) {
		fmt.Fprintf(&b, "seen %d %d\n", n, m.seen[n])
	}
	return b.Bytes()
}

// decodeWALMark parses walMarkFile (format 2, or 1); an error says what
// is wrong.
func decodeWALMark(b []byte) (walMark, error) {
	m := walMark{sizes: map[int]int64{}, seen: map[int]uint64{}}
	lines := strings.Split(strings.TrimSuffix(string(b), "\n"), "\n")
	head := 8
	if len(lines) > 0 && lines[0] == walMarkV1 {
		head = 6
	}
	if len(lines) < head || (lines[0] != walMarkMagic && lines[0] != walMarkV1) {
		return m, errors.New("not a write-ahead log record (no header, or another version)")
	}
	state := strings.TrimPrefix(lines[1], "state ")
	if i := slices.Index(walStates[:], state); i >= 0 && lines[1] != state {
		m.state = walState(i)
	} else {
		return m, fmt.Errorf("bad state line %q", lines[1])
	}
	var err error
	field := func(line, name string, bits int) int64 {
		v, ok := strings.CutPrefix(line, name+" ")
		if !ok {
			err = errors.Join(err, fmt.Errorf("want %s, found %q", name, line))
			return 0
		}
		n, perr := strconv.ParseInt(v, 10, bits)
		if perr != nil || n < -1 {
			err = errors.Join(err, fmt.Errorf("bad %s %q", name, v))
		}
		return n
	}
	m.newest = int(field(lines[2], "newest", 32))
	m.first = int(field(lines[3], "first", 32))
	m.fileSize = field(lines[4], "filesize", 64)
	var ok bool
	if m.version, ok = versionLine(lines[5], "version"); !ok {
		err = errors.Join(err, fmt.Errorf("bad version line %q", lines[5]))
	}
	if head == 8 {
		if m.base, ok = versionLine(lines[6], "base"); !ok {
			err = errors.Join(err, fmt.Errorf("bad base line %q", lines[6]))
		}
		if m.manifest, m.manifestSum, ok = manifestLine(lines[7]); !ok {
			err = errors.Join(err, fmt.Errorf("bad manifest line %q", lines[7]))
		}
	}
	for _, line := range lines[head:] {
		err = errors.Join(err, m.decodeLog(line, head == 8))
	}
	return m, err
}

// versionLine parses a line "name V", V a version.
func versionLine(line, name string) (uint64, bool) {
	v, ok := strings.CutPrefix(line, name+" ")
	n, err := strconv.ParseUint(v, 10, 64)
	return n, ok && err == nil && strconv.FormatUint(n, 10) == v
}

// manifestLine parses the line "manifest LENGTH CRC".
func manifestLine(line string) (length int64, sum uint32, ok bool) {
	f := strings.Fields(line)
	if len(f) != 3 || f[0] != "manifest" {
		return 0, 0, false
	}
	length, lerr := strconv.ParseInt(f[1], 10, 64)
	s, serr := strconv.ParseUint(f[2], 10, 32)
	return length, uint32(s), lerr == nil && serr == nil && length >= 0
}

// decodeLog parses a line about one log: "old N SIZE", or, in format 2
// (v2), "seen N VERSION".
func (m *walMark) decodeLog(line string, v2 bool) error {
	bad := fmt.Errorf("bad line %q", line)
	f := strings.Fields(line)
	if len(f) != 3 {
		return bad
	}
	n, err := strconv.Atoi(f[1])
	if err != nil || n < 0 {
		return bad
	}
	switch {
	case f[0] == "old":
		size, err := strconv.ParseInt(f[2], 10, 64)
		if err != nil || size < 0 {
			return bad
		}
		m.sizes[n] = size
	case f[0] == "seen" && v2:
		v, err := strconv.ParseUint(f[2], 10, 64)
		if err != nil {
			return bad
		}
		m.seen[n] = v
	default:
		return bad
	}
	return nil
}

// readWALMark reads dir's record; ok is false when there is none.
func readWALMark(dir string) (m walMark, ok bool, err error) {
	path := filepath.Join(dir, walMarkFile)
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return m, false, nil
	}
	if err != nil {
		return m, false, fmt.Errorf("kv: read %s: %w", path, err)
	}
	if m, err = decodeWALMark(b); err != nil {
		return m, false, corrupt(path, "%v (delete it to open the store without checking its write-ahead logs)", err)
	}
	return m, true, nil
}

// writeWALMark replaces dir's record atomically and durably: a temporary
// file, synced, renamed over it, then the directory synced.
func writeWALMark(dir string, m *walMark) error {
	path := filepath.Join(dir, walMarkFile)
	tmp := path + ".tmp"
	f, err := os.OpenFile(tmp, os.O_CREATE|os.O_WRONLY|os.O_TRUNC, 0o600)
	if err != nil {
		return fmt.Errorf("kv: write %s: %w", path, err)
	}
	_, err = f.Write(m.encode())
	if serr := f.Sync(); err == nil {
		err = serr
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err == nil {
		err = syncDir(dir)
	}
	if err != nil {
		_ = os.Remove(tmp)
		return fmt.Errorf("kv: write %s: %w", path, err)
	}
	return nil
}

// memLogs returns the numbers of the .mem files in dir, ascending, and
// their sizes.
func memLogs(dir string) ([]int, map[int]int64, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil, fmt.Errorf("kv: read directory: %w", err)
	}
	var nums []int
	sizes := map[int]int64{}
	for _, e := range entries {
		base, ok := strings.CutSuffix(e.Name(), ".mem")
		n, err := strconv.Atoi(base)
		if !ok || err != nil || n < 0 {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue // flushed and deleted meanwhile
		}
		nums = append(nums, n)
		sizes[n] = fi.Size()
	}
	slices.Sort(nums)
	return nums, sizes, nil
}

// checkWALMark compares the logs in dir with the record, before Badger
// opens: live is the newest version in a live table, wal the versions in
// the logs, and logs those of each log by number (checkFiles found them).
func checkWALMark(dir string, live uint64, wal versionRange, logs map[int]versionRange) error {
	m, ok, err := readWALMark(dir)
	if err != nil || !ok || m.state == walClosed {
		return err
	}
	nums, sizes, err := memLogs(dir)
	if err != nil {
		return err
	}
	newest := -1
	if len(nums) > 0 {
		newest = nums[len(nums)-1]
	}
	missing := filepath.Join(dir, memName(m.newest))
	if m.state == walClosing {
		if newest < m.newest && max(live, wal.max) < m.version {
			return corrupt(missing, "missing: Close did not finish, and the writes up to version %d it was flushing from this write-ahead log are in no table (newest: version %d)", m.version, max(live, wal.max))
		}
		return nil
	}
	if newest < m.newest {
		return corrupt(missing, "missing: the store was not closed (a crash or kill), and this write-ahead log held its latest writes (the newest log left is %s)", logLeft(newest))
	}
	for _, n := range nums {
		if sizes[n] == 0 && n > m.newest {
			continue // created and not yet sized by a killed session: see checkLog
		}
		want, ok := m.sizes[n]
		if m.first >= 0 && n >= m.first {
			want, ok = m.fileSize, true
		}
		if ok && m.first >= 0 && sizes[n] != want {
			return corrupt(filepath.Join(dir, memName(n)), "%d bytes, where Badger left %d: the write-ahead log was cut short (or extended), and writes at its end may be lost", sizes[n], want)
		}
	}
	return checkWALHole(dir, &m, live, nums, logs)
}

// checkWALHole looks, in a session that was not closed, for a log of the
// session missing below the newest log left (nums). Badger numbers the
// logs up by one, writes only to the newest, flushes them oldest first and
// deletes one only once it is flushed; a log below the newest was filled
// before the next began, so it holds writes. So if k, the newest missing,
// was flushed, so was every older one, and a table holds the versions of
// k; if it was not, its writes are lost, and no table holds a version of
// k or of a later log. walBound gives a version no newer than the newest
// in k: a table that new shows k flushed. Failing that, so do as many
// flushes in the manifest since the session began as there were logs
// before k's successor (those Badger replayed at open, then the
// session's).
func checkWALHole(dir string, m *walMark, live uint64, nums []int, logs map[int]versionRange) error {
	if m.first < 0 || len(nums) == 0 {
		return nil // no session is on record, or Badger may have replayed
	}
	k := -1
	for n := nums[len(nums)-1] - 1; n >= m.first; n-- {
		if _, found := slices.BinarySearch(nums, n); !found {
			k = n
			break
		}
	}
	if k < 0 {
		return nil
	}
	bound := walBound(m, k, nums, logs)
	if live >= bound {
		return nil
	}
	// A compaction may have dropped the writes of a flushed log from the
	// tables again (deletions that met what they delete): the flushes
	// Badger recorded in the manifest show it too. The logs it replayed
	// at open were flushed first, those of the session after them.
	if n, ok := flushesSince(dir, m.manifest, m.manifestSum); ok && n >= len(m.sizes)+k-m.first+1 {
		return nil
	}
	return corrupt(filepath.Join(dir, memName(k)), "missing: the store was not closed (a crash or kill), and this write-ahead log, older than %s, which is left, held writes from version %d on that are in no table (the newest in a table is version %d)", memName(nums[len(nums)-1]), bound, live)
}

// flushesSince counts the memtable flushes recorded in dir's manifest
// after its first length bytes, which must still have the CRC-32 sum;
// ok is false when they do not (Badger rewrote the manifest) or the
// manifest cannot be read. A flush is a change set of one change, a
// level-0 table's creation: a compaction's also deletes its input tables,
// and a rewrite creates every table at once. The count stops at the first
// damaged or torn record.
func flushesSince(dir string, length int64, sum uint32) (n int, ok bool) {
	b, err := os.ReadFile(filepath.Join(dir, badger.ManifestFilename))
	if err != nil || length < 8 || int64(len(b)) < length || crc32.ChecksumIEEE(b[:length]) != sum {
		return 0, false
	}
	castagnoli := crc32.MakeTable(crc32.Castagnoli)
	for rest := b[length:]; len(rest) >= 8; {
		size := binary.BigEndian.Uint32(rest[:4])
		if uint64(size) > uint64(len(rest)-8) {
			break
		}
		rec := rest[8 : 8+size]
		var cs pb.ManifestChangeSet
		if crc32.Checksum(rec, castagnoli) != binary.BigEndian.Uint32(rest[4:8]) || proto.Unmarshal(rec, &cs) != nil {
			break
		}
		if c := cs.GetChanges(); len(c) == 1 && c[0].GetOp() == pb.ManifestChange_CREATE && c[0].GetLevel() == 0 {
			n++
		}
		rest = rest[8+size:]
	}
	return n, true
}

// manifestPrefix returns the length of dir's manifest and the CRC-32 of
// its bytes (zeros when it cannot be read: flushesSince then finds no
// count).
func manifestPrefix(dir string) (length int64, sum uint32) {
	b, err := os.ReadFile(filepath.Join(dir, badger.ManifestFilename))
	if err != nil {
		return 0, 0
	}
	return int64(len(b)), crc32.ChecksumIEEE(b)
}

// walBound returns a version no newer than the newest in log k of the
// session, the largest of those known: the first after the session's
// base; the version seen when k or an older log was the newest (all then
// was in a table or in a log up to it); and the first after the newest
// version of an older log left (versions grow with the log number:
// Badger's writer applies commits in commit order, each in one log). The
// first or the last is newer than every version of the older logs when
// k is the session's first log or the one before k is left; the second
// is when the syncer saw k with a write in it.
func walBound(m *walMark, k int, nums []int, logs map[int]versionRange) uint64 {
	bound := m.base + 1
	for n, v := range m.seen {
		if n <= k {
			bound = max(bound, v)
		}
	}
	for _, n := range nums {
		if r := logs[n]; n < k && r.ok {
			bound = max(bound, r.max+1)
		}
	}
	return bound
}

func logLeft(n int) string {
	if n < 0 {
		return "none"
	}
	return memName(n)
}

// walMarker keeps dir's record up to date for an open DB. It is safe for
// concurrent use.
type walMarker struct {
	dir string
	mu  sync.Mutex
	m   walMark
	// version returns the newest version committed and applied: the read
	// timestamp of a new Badger transaction. (Badger's MaxVersion reads
	// the memtable's newest version without a lock while commits write
	// it, a data race.)
	version func() uint64
}

// beforeOpen, before Badger opens the store read-write, stops the size
// checks of a record left by a killed session: Badger is about to replay
// and cut the logs it left. It returns the marker that afterOpen
// completes.
func beforeOpen(dir string) (*walMarker, error) {
	wm := &walMarker{dir: dir}
	// A crash in writeWALMark may leave its temporary file.
	_ = os.Remove(filepath.Join(dir, walMarkFile+".tmp"))
	m, ok, err := readWALMark(dir)
	if err != nil {
		return nil, err
	}
	if ok && m.state == walOpen && m.first >= 0 {
		m.first, m.sizes = -1, nil
		if err := writeWALMark(dir, &m); err != nil {
			return nil, err
		}
	}
	return wm, nil
}

// afterOpen records the session Badger just opened (bdb): the log it
// created for its memtable, the sizes of the older logs it replayed, and
// the newest version before any write of the session. That log and the
// directory entry are synced first, so that the record never names a log
// the disk does not hold. After a drop (see dropping) it starts the record
// of the logs again the same way.
func (wm *walMarker) afterOpen(memTableSize int64, bdb *badger.DB) error {
	nums, sizes, err := memLogs(wm.dir)
	if err != nil {
		return err
	}
	if len(nums) == 0 {
		return fmt.Errorf("kv: open: Badger created no write-ahead log in %s", wm.dir)
	}
	first := nums[len(nums)-1]
	if err := fsyncFile(filepath.Join(wm.dir, memName(first))); err != nil {
		return fmt.Errorf("kv: open: sync %s: %w", memName(first), err)
	}
	delete(sizes, first)
	wm.mu.Lock()
	defer wm.mu.Unlock()
	wm.version = func() uint64 {
		txn := bdb.NewTransaction(false)
		defer txn.Discard()
		return txn.ReadTs()
	}
	wm.m = walMark{state: walOpen, newest: first, first: first, fileSize: 2 * memTableSize, sizes: sizes, base: bdb.MaxVersion()}
	wm.m.manifest, wm.m.manifestSum = manifestPrefix(wm.dir)
	return writeWALMark(wm.dir, &wm.m)
}

// rotated records that the log numbered n, the newest of mems (the
// logs, ascending), exists, has been synced, and holds commits about to
// be acknowledged (the group syncer calls it), with the newest version
// committed while n is still the newest log (see walMark.seen).
func (wm *walMarker) rotated(mems []int) error {
	if len(mems) == 0 {
		return nil
	}
	n := mems[len(mems)-1]
	wm.mu.Lock()
	defer wm.mu.Unlock()
	if wm.m.state != walOpen || n <= wm.m.newest {
		return nil
	}
	m := wm.m
	m.newest = n
	if m.first >= 0 && wm.version != nil {
		v := wm.version()
		// A log gone was flushed: its entry is needed no more.
		m.seen = map[int]uint64{}
		for k, sv := range wm.m.seen {
			if k >= mems[0] {
				m.seen[k] = sv
			}
		}
		// Read before the next log exists, v is no newer than n's writes.
		if _, err := os.Lstat(filepath.Join(wm.dir, memName(n+1))); errors.Is(err, os.ErrNotExist) {
			m.seen[n] = v
		}
	}
	if err := writeWALMark(wm.dir, &m); err != nil {
		return err
	}
	wm.m = m
	return nil
}

// dropping records, before Badger drops memtables without flushing them
// (DropAll, the drop of a StreamWriter, and DropPrefix, which flushes
// them without the dropped keys and deletes an empty one), that the logs
// of the session so far are not to be checked: they may go, and no table
// need hold their versions. afterOpen records the logs again after the
// drop.
func (wm *walMarker) dropping() error {
	wm.mu.Lock()
	defer wm.mu.Unlock()
	if wm.m.state != walOpen {
		return nil
	}
	m := wm.m
	m.first, m.sizes, m.seen, m.base, m.manifest, m.manifestSum = -1, nil, nil, 0, 0, 0
	if err := writeWALMark(wm.dir, &m); err != nil {
		return err
	}
	wm.m = m
	return nil
}

// closing records, before Badger's Close flushes the memtables and
// deletes their logs, the newest log and the newest version they hold.
func (wm *walMarker) closing(version uint64) error {
	nums, _, err := memLogs(wm.dir)
	if err != nil {
		wm.stop()
		return err
	}
	wm.mu.Lock()
	defer wm.mu.Unlock()
	wm.version = nil // Badger closes
	m := walMark{state: walClosing, newest: wm.m.newest, first: -1, version: version}
	if len(nums) > 0 {
		m.newest = max(m.newest, nums[len(nums)-1])
	}
	if err := writeWALMark(wm.dir, &m); err != nil {
		wm.m.state = walClosed // the caller removes the record
		return err
	}
	wm.m = m
	return nil
}

// stop makes the marker write nothing more and call Badger no more: the
// caller removes the record (closeBadgerLocked).
func (wm *walMarker) stop() {
	wm.mu.Lock()
	defer wm.mu.Unlock()
	wm.m.state, wm.version = walClosed, nil
}

// closed records that Badger closed: every memtable is in a table.
func (wm *walMarker) closed() error {
	wm.mu.Lock()
	defer wm.mu.Unlock()
	wm.m = walMark{state: walClosed, newest: -1, first: -1}
	return writeWALMark(wm.dir, &wm.m)
}

// closeBadgerLocked closes Badger, recording around it that Close may
// delete the logs; db.mu is held for writing. When the record cannot be
// written it is removed, so that the next Open does not take the logs
// Close flushes for lost ones.
//
// After a failed Restore Badger's loader may still be applying writes, and
// Badger's MaxVersion reads the memtable without a lock (a data race the
// race detector reports, in TestFailedRestoreLeavesOnlyClose): the record
// is removed instead, as when it cannot be written. Such a store holds a
// partial restore, to be restored again.
func (db *DB) closeBadgerLocked() error {
	if db.wal != nil && db.mu.restoreFailed {
		db.wal.stop()
		_ = os.Remove(filepath.Join(db.dir, walMarkFile))
		db.wal = nil
	}
	if db.wal != nil {
		if err := db.wal.closing(db.bdb.MaxVersion()); err != nil {
			_ = os.Remove(filepath.Join(db.dir, walMarkFile))
			db.wal = nil
		}
	}
	if err := db.bdb.Close(); err != nil {
		return err
	}
	if db.wal != nil {
		return db.wal.closed()
	}
	return nil
}

// removeUnsizedLogs removes the empty write-ahead logs a session killed
// between creating a log and sizing it leaves: no write can be in one,
// and Badger refuses to open a store that has one ("Create a new file").
// checkWALMark has refused, before, an empty log that held writes (one no
// newer than the newest on record).
func removeUnsizedLogs(dir string, log *slog.Logger) error {
	nums, sizes, err := memLogs(dir)
	if err != nil {
		return err
	}
	removed := false
	for _, n := range nums {
		if sizes[n] != 0 {
			continue
		}
		path := filepath.Join(dir, memName(n))
		if err := os.Remove(path); err != nil {
			return fmt.Errorf("kv: remove empty write-ahead log %s: %w", path, err)
		}
		removed = true
		if log != nil {
			log.Warn("kv: removed an empty write-ahead log that a kill left before Badger sized it (it holds no write)", "file", path)
		}
	}
	if removed {
		return syncDir(dir)
	}
	return nil
}
