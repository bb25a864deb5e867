package kv

import (
	"bufio"
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/dgraph-io/badger/v4"
	"github.com/dgraph-io/badger/v4/fb"
	"github.com/dgraph-io/badger/v4/options"
	"github.com/dgraph-io/badger/v4/pb"
	"github.com/dgraph-io/badger/v4/table"
	"github.com/dgraph-io/badger/v4/y"
	"github.com/dgraph-io/ristretto/v2"
	"github.com/dgraph-io/ristretto/v2/z"
	"google.golang.org/protobuf/proto"
)

// checkFiles validates, before Badger opens the store, every file Badger
// would trust blindly at open. Badger v4.9.6 opens tables in goroutines of
// its own, where a damaged table footer panics ("slice bounds out of range"
// in initIndex) or calls log.Fatalf (y.Check): neither can be recovered by
// the caller. A failed badger.Open also leaks its cache-monitor and
// allocator goroutines. So the checks come first, where nothing has
// started yet. checkFiles also replays the write-ahead logs as Badger
// would, because Badger stops at the first bad record and truncates the
// file there, silently dropping every later write; and it reads the
// manifest, because Badger deletes every table the manifest does not name.
//
// What it checks:
//   - KEYREGISTRY: opens with the key ([ErrEncryptionKey] for a wrong one),
//     and its data keys' checksums.
//   - MANIFEST: magic, version and every record's CRC; a torn last record
//     is tolerated only when no table on disk depends on it.
//   - each table the manifest names: present, footer and index in bounds,
//     index checksum, then every block's checksum (Badger's OnTableRead,
//     run here where a panic can be recovered).
//   - tables the manifest does not name: only those it deleted (a crash
//     came before the file's removal) and the outputs of a flush or a
//     compaction cut short by a crash, whose ids are above every id the
//     manifest ever named, may be left for Badger to delete.
//   - each memtable write-ahead log (.mem) and the newest value log
//     (.vlog): every record up to Badger's replay end is whole; after it
//     there may be one unfinished transaction and one torn record (a crash
//     in the middle of a write), then only zeros.
//
// It reads every table once, so Open costs a read of the store; see
// bench/results/checksums.md for the measurement.
func checkFiles(dir string, key []byte) (err error) {
	if dir == "" {
		return nil
	}
	defer func() {
		// The checks below call into Badger's table code with bounds
		// checked first; a panic left in it still must not escape Open.
		if p := recover(); p != nil {
			err = recovered(ErrCorrupt, dir, p) // panic.go
		}
	}()
	entries, err := os.ReadDir(dir)
	if err != nil {
		return fmt.Errorf("kv: read directory: %w", err)
	}
	ssts := map[uint64]string{}
	var mems, vlogs []string
	for _, e := range entries {
		name := e.Name()
		switch filepath.Ext(name) {
		case ".sst":
			if id, ok := table.ParseFileID(name); ok {
				ssts[id] = name
			}
		case ".mem":
			mems = append(mems, name)
		case ".vlog":
			vlogs = append(vlogs, name)
		}
	}

	kr, err := badger.OpenKeyRegistry(badger.KeyRegistryOptions{Dir: dir, ReadOnly: true, EncryptionKey: key})
	if err != nil {
		if err := openError(dir, err); errors.Is(err, ErrEncryptionKey) {
			// Badger cannot tell a wrong key from a damaged sanity check.
			return fmt.Errorf("%w (or its %s is damaged)", err, badger.KeyRegistryFileName)
		}
		// Badger's key-registry errors are a wrong key (above) or a
		// damaged file: a short read, a data key's checksum.
		return corrupt(filepath.Join(dir, badger.KeyRegistryFileName), "%v", err)
	}
	defer kr.Close()

	mf, err := checkManifest(dir, ssts)
	if err != nil {
		return err
	}
	maxLive, err := checkTables(dir, mf.tables, kr)
	if err != nil {
		return err
	}
	var wal versionRange
	logs := map[int]versionRange{}
	for _, name := range mems {
		r, err := checkLog(filepath.Join(dir, name), kr)
		if err != nil {
			return err
		}
		wal.add(r)
		if n, ok := logNumber(name); ok {
			logs[n] = r
		}
	}
	if err := checkOrphans(dir, mf, maxLive, wal, kr); err != nil {
		return err
	}
	if err := checkWALMark(dir, maxLive, wal, logs); err != nil { // walmark.go
		return err
	}
	for _, name := range vlogs {
		if err := checkLogHeader(filepath.Join(dir, name), kr); err != nil {
			return err
		}
	}
	// Badger replays only the newest value log (and truncates it at the
	// first bad record); older ones are read through value pointers, whose
	// checksums are verified at every read.
	sort.Slice(vlogs, func(i, j int) bool { return logID(vlogs[i]) < logID(vlogs[j]) })
	if n := len(vlogs); n > 0 {
		if _, err := checkLog(filepath.Join(dir, vlogs[n-1]), kr); err != nil {
			return err
		}
	}
	return nil
}

func logID(name string) uint64 {
	id, _ := strconv.ParseUint(strings.TrimSuffix(name, filepath.Ext(name)), 10, 64)
	return id
}

func corrupt(path, format string, args ...any) error {
	return fmt.Errorf("%w: %s: %s", ErrCorrupt, path, fmt.Sprintf(format, args...))
}

// manifestState is what checkManifest found.
type manifestState struct {
	tables     map[uint64]badger.TableManifest // the live tables
	orphans    map[uint64]string               // tables on disk it does not name
	maxCreated uint64                          // the highest table id it ever named
	compressed options.CompressionType         // how its newest table was compressed
}

// checkManifest replays the manifest and matches it with the tables on
// disk (ssts, by id).
func checkManifest(dir string, ssts map[uint64]string) (manifestState, error) {
	var st manifestState
	path := filepath.Join(dir, badger.ManifestFilename)
	f, err := os.Open(path)
	if errors.Is(err, os.ErrNotExist) {
		if len(ssts) > 0 {
			return st, corrupt(path, "missing, and %d table files exist", len(ssts))
		}
		return st, nil // a new store
	}
	if err != nil {
		return st, fmt.Errorf("kv: open manifest: %w", err)
	}
	defer f.Close()
	bo := badger.DefaultOptions(dir)
	bo.Logger = nil
	mf, end, err := badger.ReplayManifestFile(f, bo.ExternalMagicVersion, bo)
	if err != nil {
		return st, corrupt(path, "%v", err)
	}
	st.tables = mf.Tables
	for id := range mf.Tables {
		if _, ok := ssts[id]; !ok {
			return st, corrupt(path, "names table %s, which is missing", table.IDToFilename(id))
		}
	}
	deleted, err := manifestHistory(f, end, &st)
	if err != nil {
		return st, corrupt(path, "%v", err)
	}
	st.orphans = map[uint64]string{}
	for id, name := range ssts {
		// A table the manifest deleted is one whose removal a crash cut
		// short: Badger removes it.
		if _, ok := mf.Tables[id]; !ok && !deleted[id] {
			st.orphans[id] = name
		}
	}
	return st, nil
}

// checkOrphans decides about the tables the manifest does not name, which
// Badger deletes at open. That is right for the output of a flush or a
// compaction that a crash cut short before the manifest named it: a
// compaction's output holds no version newer than the live tables it was
// made from, and a flush's output holds versions still in a write-ahead
// log. A table with newer data than both was named by manifest records
// that are lost: deleting it would lose its data.
func checkOrphans(dir string, mf manifestState, maxLive uint64, wal versionRange, kr *badger.KeyRegistry) error {
	for id, name := range mf.orphans {
		path := filepath.Join(dir, name)
		v, ok := orphanVersion(path, mf, kr)
		switch {
		case !ok && id > mf.maxCreated:
			// Unreadable, and newer than anything the manifest named: a
			// table whose writing a crash cut short.
		case !ok:
			return corrupt(filepath.Join(dir, badger.ManifestFilename), "does not name table %s, which is older than tables it names (the manifest has lost records)", name)
		case v <= maxLive, wal.ok && v >= wal.min && v <= wal.max:
		default:
			return corrupt(filepath.Join(dir, badger.ManifestFilename), "does not name table %s, which holds data (version %d) found in no live table or write-ahead log (the manifest has lost records)", name, v)
		}
	}
	return nil
}

// orphanVersion returns the newest version in a table the manifest does
// not name, trying no encryption and then each data key of the registry
// (Badger numbers them from 1), with the compression of the manifest's
// newest table.
func orphanVersion(path string, mf manifestState, kr *badger.KeyRegistry) (uint64, bool) {
	cache := &indexCache{}
	defer cache.close()
	for k := uint64(0); k < 1<<16; k++ {
		dk, err := kr.DataKey(k)
		if err != nil {
			break
		}
		if k > 0 && dk == nil {
			break // a plain store has no keys
		}
		v, err := checkTable(path, badger.TableManifest{KeyID: k, Compression: mf.compressed}, dk, cache)
		if err == nil {
			return v, true
		}
	}
	return 0, false
}

// versionRange is the range of versions in write-ahead logs.
type versionRange struct {
	min, max uint64
	ok       bool
}

func (r *versionRange) add(o versionRange) {
	if !o.ok {
		return
	}
	if !r.ok {
		*r = o
		return
	}
	r.min, r.max = min(r.min, o.min), max(r.max, o.max)
}

// manifestHistory reads the manifest's records up to end (Badger has
// checked them), notes in st the highest table id ever created, the data
// keys and the newest compression, and returns the ids deleted.
func manifestHistory(f *os.File, end int64, st *manifestState) (deleted map[uint64]bool, err error) {
	deleted = map[uint64]bool{}
	st.compressed = options.Snappy // Badger's default
	r := bufio.NewReader(io.NewSectionReader(f, 0, end))
	if _, err := r.Discard(8); err != nil { // magic and versions
		return nil, err
	}
	var head [8]byte
	for {
		if _, err := io.ReadFull(r, head[:]); err != nil {
			if errors.Is(err, io.EOF) {
				return deleted, nil
			}
			return nil, err
		}
		n := binary.BigEndian.Uint32(head[:4])
		if int64(n) > end {
			return nil, fmt.Errorf("record of %d bytes", n)
		}
		buf := make([]byte, n)
		if _, err := io.ReadFull(r, buf); err != nil {
			return nil, err
		}
		var cs pb.ManifestChangeSet
		if err := proto.Unmarshal(buf, &cs); err != nil {
			return nil, err
		}
		for _, c := range cs.GetChanges() {
			switch c.GetOp() {
			case pb.ManifestChange_CREATE:
				if c.GetId() >= st.maxCreated {
					st.maxCreated = c.GetId()
					st.compressed = options.CompressionType(c.GetCompression())
				}
			case pb.ManifestChange_DELETE:
				deleted[c.GetId()] = true
			}
		}
	}
}

// checkTables verifies every table's footer, index and block checksums,
// and returns the newest version they hold.
func checkTables(dir string, tables map[uint64]badger.TableManifest, kr *badger.KeyRegistry) (maxVersion uint64, err error) {
	cache := &indexCache{}
	defer cache.close()
	ids := make([]uint64, 0, len(tables))
	for id := range tables {
		ids = append(ids, id)
	}
	sort.Slice(ids, func(i, j int) bool { return ids[i] < ids[j] })
	for _, id := range ids {
		tm := tables[id]
		path := table.NewFilename(id, dir)
		dk, err := kr.DataKey(tm.KeyID)
		if err != nil {
			return 0, corrupt(path, "its data key %d is not in %s: %v", tm.KeyID, badger.KeyRegistryFileName, err)
		}
		v, err := checkTable(path, tm, dk, cache)
		if err != nil {
			return 0, err
		}
		maxVersion = max(maxVersion, v)
	}
	return maxVersion, nil
}

// indexCache makes, when first needed, the index cache through which
// Badger reads an encrypted table's index (it panics without one).
type indexCache struct {
	c *ristretto.Cache[uint64, *fb.TableIndex]
}

func (ic *indexCache) get() (*ristretto.Cache[uint64, *fb.TableIndex], error) {
	if ic.c == nil {
		c, err := ristretto.NewCache(&ristretto.Config[uint64, *fb.TableIndex]{
			NumCounters: 1000, MaxCost: 1 << 20, BufferItems: 64,
		})
		if err != nil {
			return nil, fmt.Errorf("kv: index cache: %w", err)
		}
		ic.c = c
	}
	return ic.c, nil
}

func (ic *indexCache) close() {
	if ic.c != nil {
		ic.c.Close()
	}
}

// checkTable checks one table and returns the newest version it holds.
// The footer is read with every bound checked here, because Badger's own
// reader panics or exits on a bad one; then Badger opens the table with
// OnTableRead, which verifies every block.
func checkTable(path string, tm badger.TableManifest, dk *pb.DataKey, ic *indexCache) (version uint64, err error) {
	if err := checkFooter(path); err != nil {
		return 0, err
	}
	var cache *ristretto.Cache[uint64, *fb.TableIndex]
	if dk != nil {
		if cache, err = ic.get(); err != nil {
			return 0, err
		}
	}
	mf, err := z.OpenMmapFile(path, os.O_RDONLY, 0)
	if err != nil && !errors.Is(err, z.NewFile) {
		return 0, fmt.Errorf("kv: open table %s: %w", path, err)
	}
	defer func() {
		if p := recover(); p != nil {
			err = recovered(ErrCorrupt, path, p)
		}
	}()
	t, err := table.OpenTable(mf, table.Options{
		ReadOnly:    true,
		ChkMode:     options.OnTableRead,
		BlockSize:   badger.DefaultOptions("").BlockSize,
		Compression: tm.Compression,
		DataKey:     dk,
		IndexCache:  cache,
	})
	if err != nil {
		return 0, corrupt(path, "%v", err)
	}
	version = t.MaxVersion()
	return version, t.Close(-1)
}

// checkFooter checks what Badger's initIndex reads without checking: the
// checksum length, the checksum, the index length, and the index against
// its checksum.
func checkFooter(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kv: open table: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return fmt.Errorf("kv: stat table: %w", err)
	}
	size := fi.Size()
	read := func(off, n int64) ([]byte, error) {
		if off < 0 || n < 0 || off+n > size {
			return nil, corrupt(path, "table footer points outside the file (%d bytes at %d of %d)", n, off, size)
		}
		b := make([]byte, n)
		if _, err := f.ReadAt(b, off); err != nil {
			return nil, fmt.Errorf("kv: read table %s: %w", path, err)
		}
		return b, nil
	}
	pos := size - 4
	b, err := read(pos, 4)
	if err != nil {
		return err
	}
	chkLen := int64(binary.BigEndian.Uint32(b))
	pos -= chkLen
	if b, err = read(pos, chkLen); err != nil {
		return err
	}
	var chk pb.Checksum
	if err := proto.Unmarshal(b, &chk); err != nil {
		return corrupt(path, "table checksum: %v", err)
	}
	pos -= 4
	if b, err = read(pos, 4); err != nil {
		return err
	}
	indexLen := int64(binary.BigEndian.Uint32(b))
	pos -= indexLen
	if b, err = read(pos, indexLen); err != nil {
		return err
	}
	if err := y.VerifyChecksum(b, &chk); err != nil {
		return corrupt(path, "table index: %v", err)
	}
	return nil
}

// Badger's entry meta bits (value.go) that mark transactions in a log.
const (
	bitTxn    = 1 << 6
	bitFinTxn = 1 << 7
	// logHeaderSize is the key id and base IV at the start of every .mem
	// and .vlog file.
	logHeaderSize = 20
	maxKeySize    = 1 << 16
)

// checkLog replays a write-ahead log (.mem) or value log (.vlog) as Badger
// does (logFile.iterate): records are [header][key][value][crc32c], and
// Badger applies records up to the last whole transaction, then truncates
// the file. checkLog makes sure nothing after that point holds data other
// than what a crash leaves: one unfinished transaction, then at most one
// torn record, then zeros (files are preallocated with zeros, and a write
// cut short leaves the part of its record it did not store zero, the
// checksum or the header included: checkTornTail). It returns the range of
// the versions Badger will replay.
func checkLog(path string, kr *badger.KeyRegistry) (versions versionRange, err error) {
	f, err := os.Open(path)
	if err != nil {
		return versions, fmt.Errorf("kv: open log: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return versions, fmt.Errorf("kv: stat log: %w", err)
	}
	size := fi.Size()
	if size == 0 && strings.HasSuffix(path, ".mem") {
		// Badger creates a write-ahead log, then sizes it: a kill in
		// between leaves it empty, and Badger starts it afresh. Whether
		// it held writes is checkWALMark's to judge.
		return versions, nil
	}
	if size < logHeaderSize {
		// Badger creates a log at its full preallocated size, so even a
		// crash leaves at least the header's room.
		return versions, corrupt(path, "%d bytes, shorter than a log header", size)
	}
	r := bufio.NewReaderSize(f, 64<<10)
	var head [logHeaderSize]byte
	if _, err := io.ReadFull(r, head[:]); err != nil {
		return versions, fmt.Errorf("kv: read log %s: %w", path, err)
	}
	// Keys and values are encrypted with the log's data key when the store
	// is; the transaction marks Badger checks are inside them.
	dk, err := kr.DataKey(binary.BigEndian.Uint64(head[:8]))
	if err != nil {
		return versions, corrupt(path, "its data key is not in %s: %v", badger.KeyRegistryFileName, err)
	}
	decrypt := func(kv []byte, off int64) ([]byte, error) {
		if dk == nil {
			return kv, nil
		}
		iv := make([]byte, 16)
		copy(iv, head[8:])
		binary.BigEndian.PutUint32(iv[12:], uint32(off))
		return y.XORBlockAllocate(kv, dk.Data, iv)
	}
	off := int64(logHeaderSize)
	validEnd := off // Badger's replay end: after the last whole transaction
	var txnTs uint64
	inTxn, broken := false, false
	var buf []byte
	for {
		rec, n, consumed, status := readRecord(r, size-off, &buf)
		switch status {
		case recordTruncated:
			return versions, corrupt(path, "record at offset %d runs past the end of the file (truncated)", off)
		case recordDamaged:
			return versions, corrupt(path, "record at offset %d fails its checksum", off)
		case recordEnd:
			// The end of the written part, or a torn last record:
			// everything after its extent must be zeros.
			if _, err := r.Discard(int(n - consumed)); err != nil {
				return versions, fmt.Errorf("kv: read log %s: %w", path, err)
			}
			if at, err := firstNonZero(r); err != nil {
				return versions, fmt.Errorf("kv: read log %s: %w", path, err)
			} else if at >= 0 {
				return versions, checkTornTail(f, path, off, size)
			}
			return versions, nil
		}
		if broken {
			// Badger stopped replaying before this whole record.
			return versions, corrupt(path, "records after offset %d would not be replayed", validEnd)
		}
		kv, err := decrypt(append(rec.key, rec.value...), off)
		if err != nil {
			return versions, corrupt(path, "decrypt record at offset %d: %v", off, err)
		}
		key, value := kv[:len(rec.key)], kv[len(rec.key):]
		off += n
		switch {
		case rec.meta&bitTxn != 0:
			ts := keyTs(key)
			if inTxn && ts != txnTs {
				broken = true
				continue
			}
			inTxn, txnTs = true, ts
		case rec.meta&bitFinTxn != 0:
			ts, err := strconv.ParseUint(string(value), 10, 64)
			if err != nil || !inTxn || ts != txnTs {
				broken = true
				continue
			}
			inTxn = false
			validEnd = off
			versions.add(versionRange{min: ts, max: ts, ok: true})
		default:
			if inTxn {
				broken = true
				continue
			}
			validEnd = off
			if ts := keyTs(key); ts != 0 {
				versions.add(versionRange{min: ts, max: ts, ok: true})
			}
		}
	}
}

// checkTornTail judges a log whose replay ends at off with data after it.
// A kill in the middle of writing a record leaves it torn in any order of
// its bytes: Go's copy stores the unaligned head of a long record last, so
// a torn record can begin with zeros and hold data after them. That loses
// nothing acknowledged; what would be lost is a whole record after off,
// which only damage (a zeroed range, a lost page) leaves.
func checkTornTail(f *os.File, path string, off, size int64) error {
	at, err := findWholeRecord(f, off+1, size)
	switch {
	case errors.Is(err, errScanBudget):
		return corrupt(path, "bad record at offset %d, with data after it that cannot be told from a torn write", off)
	case err != nil:
		return fmt.Errorf("kv: read log %s: %w", path, err)
	case at >= 0:
		return corrupt(path, "bad record at offset %d, with data after it that would not be replayed (a whole record at offset %d)", off, at)
	}
	return nil
}

// errScanBudget stops findWholeRecord on data so unlike a log's that
// checking it would take too long.
var errScanBudget = errors.New("kv: scan budget spent")

// wholeRecordBudget bounds the bytes findWholeRecord hashes: a torn record
// is at most one record, and its candidates cost far less.
const wholeRecordBudget = 256 << 20

// findWholeRecord returns the offset of the first record in [from, size)
// of a log that Badger would replay if it read from there: a key of at
// least the 8 bytes of its version and at most maxKeySize, lengths inside
// the data, and a checksum that is not zero and matches. It returns -1 when
// there is none. A whole record's checksum is not zero, so it ends within
// 4 bytes of the last non-zero byte: candidates are bounded by that.
func findWholeRecord(f io.ReaderAt, from, size int64) (int64, error) {
	last, err := lastNonZero(f, from, size)
	if err != nil || last < 0 {
		return -1, err
	}
	end := min(size, last+5)
	r := bufio.NewReaderSize(io.NewSectionReader(f, from, end-from), 64<<10)
	var buf []byte
	budget := int64(wholeRecordBudget)
	for s := from; s < end; s++ {
		head, err := r.Peek(min(2+3*binary.MaxVarintLen64, int(end-s)))
		if err != nil && !errors.Is(err, io.EOF) {
			return -1, err
		}
		if len(head) > 2 && head[2] != 0 {
			hn, klen, vlen, ok := parseHeader(head)
			if total := int64(hn) + klen + vlen + 4; ok && klen >= 8 && klen <= maxKeySize && vlen <= end && s+total <= end {
				if budget -= total; budget < 0 {
					return -1, errScanBudget
				}
				if whole, err := isWholeRecord(f, s, head[:hn], int(klen+vlen), &buf); err != nil || whole {
					return s, err
				}
			}
		}
		if _, err := r.Discard(1); err != nil {
			return -1, err
		}
	}
	return -1, nil
}

// parseHeader reads a record header (meta, user meta, then the key length,
// value length and expiry as uvarints) from the start of b.
func parseHeader(b []byte) (hn int, klen, vlen int64, ok bool) {
	hn = 2
	var lens [3]uint64
	for i := range lens {
		v, n := binary.Uvarint(b[hn:])
		if n <= 0 {
			return 0, 0, 0, false
		}
		lens[i], hn = v, hn+n
	}
	if lens[0] > maxKeySize || lens[1] > 1<<40 {
		return 0, 0, 0, false
	}
	return hn, int64(lens[0]), int64(lens[1]), true
}

// isWholeRecord reports whether the record with header hdr at off has a
// checksum that is not zero and matches its n bytes of key and value.
func isWholeRecord(f io.ReaderAt, off int64, hdr []byte, n int, buf *[]byte) (bool, error) {
	if cap(*buf) < n+4 {
		*buf = make([]byte, n+4)
	}
	b := (*buf)[:n+4]
	if _, err := f.ReadAt(b, off+int64(len(hdr))); err != nil {
		return false, err
	}
	stored := binary.BigEndian.Uint32(b[n:])
	h := crc32.New(y.CastagnoliCrcTable)
	h.Write(hdr)
	h.Write(b[:n])
	return stored != 0 && h.Sum32() == stored, nil
}

// lastNonZero returns the offset of the last non-zero byte in [from, size)
// of f, or -1 when there is none. It reads backwards: the end of a
// preallocated log is zeros.
func lastNonZero(f io.ReaderAt, from, size int64) (int64, error) {
	buf := make([]byte, 64<<10)
	for end := size; end > from; {
		start := max(from, end-int64(len(buf)))
		b := buf[:end-start]
		if _, err := f.ReadAt(b, start); err != nil {
			return -1, err
		}
		if i := lastIndexNonZero(b); i >= 0 {
			return start + int64(i), nil
		}
		end = start
	}
	return -1, nil
}

func lastIndexNonZero(b []byte) int {
	for i := len(b) - 1; i >= 0; i-- {
		if b[i] != 0 {
			return i
		}
	}
	return -1
}

// checkLogHeader checks that a log starts with a header naming a known data
// key; Badger fails on a bad one with an error that names no file (after
// its goroutines have started).
func checkLogHeader(path string, kr *badger.KeyRegistry) error {
	f, err := os.Open(path)
	if err != nil {
		return fmt.Errorf("kv: open log: %w", err)
	}
	defer f.Close()
	var head [logHeaderSize]byte
	if n, err := io.ReadFull(f, head[:]); err != nil {
		return corrupt(path, "%d bytes, shorter than a log header", n)
	}
	if _, err := kr.DataKey(binary.BigEndian.Uint64(head[:8])); err != nil {
		return corrupt(path, "its data key is not in %s: %v", badger.KeyRegistryFileName, err)
	}
	return nil
}

// What readRecord found.
const (
	recordWhole     = iota
	recordEnd       // zeros, or a record cut short by a crash (its checksum is zero)
	recordDamaged   // a record whose checksum was written and does not match
	recordTruncated // a record with data that the end of the file cuts off
)

type logRecord struct {
	meta       byte
	key, value []byte
}

// readRecord reads one record of at most left bytes. It returns the record,
// the bytes it spans (for a bad record: as far as its header says, or what
// was read), the bytes it consumed from r, and what it found.
func readRecord(r *bufio.Reader, left int64, buf *[]byte) (rec logRecord, extent, consumed int64, status int) {
	var hdr [2 + 3*binary.MaxVarintLen64]byte
	hn := 0
	eof := false
	readByte := func() (byte, bool) {
		if int64(hn) >= left {
			eof = true
			return 0, false
		}
		if hn >= len(hdr) {
			return 0, false
		}
		c, err := r.ReadByte()
		if err != nil {
			eof = true
			return 0, false
		}
		hdr[hn] = c
		hn++
		return c, true
	}
	var lens [3]uint64
	ok := true
	for i := 0; i < 2 && ok; i++ {
		_, ok = readByte()
	}
	for i := 0; i < 3 && ok; i++ {
		var v uint64
		var s uint
		for {
			c, got := readByte()
			if !got || s > 63 {
				ok = false
				break
			}
			v |= uint64(c&0x7f) << s
			if c < 0x80 {
				break
			}
			s += 7
		}
		lens[i] = v
	}
	meta := hdr[0]
	if !ok {
		if eof && indexNonZero(hdr[:hn]) >= 0 {
			return logRecord{}, int64(hn), int64(hn), recordTruncated
		}
		return logRecord{}, int64(hn), int64(hn), recordEnd
	}
	klen, vlen := lens[0], lens[1]
	if klen > maxKeySize {
		// A write cut short leaves smaller lengths, never larger.
		return logRecord{}, int64(hn), int64(hn), recordDamaged
	}
	if vlen > uint64(left) || int64(hn)+int64(klen)+int64(vlen)+4 > left {
		// What is left of the file is this record's start: truncated,
		// unless it is all zeros.
		at, _ := firstNonZero(bufio.NewReader(io.LimitReader(r, left-int64(hn))))
		if indexNonZero(hdr[:hn]) >= 0 || at >= 0 {
			return logRecord{}, left, left, recordTruncated
		}
		return logRecord{}, left, left, recordEnd
	}
	total := int64(hn) + int64(klen) + int64(vlen) + 4
	kv := int(klen + vlen)
	if cap(*buf) < kv+4 {
		*buf = make([]byte, kv+4)
	}
	b := (*buf)[:kv+4]
	if n, err := io.ReadFull(r, b); err != nil {
		return logRecord{}, total, int64(hn + n), recordTruncated
	}
	h := crc32.New(y.CastagnoliCrcTable)
	h.Write(hdr[:hn])
	h.Write(b[:kv])
	switch stored := binary.BigEndian.Uint32(b[kv:]); {
	case meta == 0 && klen == 0 && vlen == 0 && lens[2] == 0:
		// Badger's zero entry ends a log.
		return logRecord{}, total, total, recordEnd
	case h.Sum32() == stored:
		return logRecord{meta: meta, key: b[:klen], value: b[klen:kv]}, total, total, recordWhole
	case stored == 0:
		return logRecord{}, total, total, recordEnd
	default:
		return logRecord{}, total, total, recordDamaged
	}
}

// firstNonZero returns the offset of the first non-zero byte left in r, or
// -1 when there is none. Preallocated logs are mostly zeros: whole chunks
// are compared at once.
func firstNonZero(r *bufio.Reader) (int64, error) {
	var off int64
	chunk := make([]byte, 64<<10)
	zeros := make([]byte, len(chunk))
	for {
		n, err := io.ReadFull(r, chunk)
		if !bytes.Equal(chunk[:n], zeros[:n]) {
			return off + int64(indexNonZero(chunk[:n])), nil
		}
		off += int64(n)
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return -1, nil
		}
		if err != nil {
			return 0, err
		}
	}
}

func indexNonZero(b []byte) int {
	for i, c := range b {
		if c != 0 {
			return i
		}
	}
	return -1
}

// keyTs returns the version Badger appends to a key in its logs (the last
// 8 bytes, big endian, inverted).
func keyTs(key []byte) uint64 {
	if len(key) <= 8 {
		return 0
	}
	return y.ParseTs(key)
}
