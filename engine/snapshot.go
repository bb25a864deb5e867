package engine

import (
	"bytes"
	"context"
	"crypto/aes"
	"crypto/cipher"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/index"
	"github.com/engramdb/engram/kv"
)

// Snapshot file, version 2:
//
//	magic "ENGRSNAP" | version u32 | sealed u8 | payload length u64 |
//	payload | CRC-32C of payload u32
//
// The payload, AES-GCM sealed (nonce first) when the store is encrypted:
//
//	mark [16]byte (every log id at or below it is in the graph) |
//	prefix length u32 | prefix | dim u32 | keys u32 | keys × [16]byte
//	(index id → record id, zero for deleted) | HNSW length u64 | HNSW
//	encoding | BM25 length u64 | BM25 encoding
//
// The sections carry their lengths because their decoders read ahead;
// version 1 did not, so its BM25 section could never be read back and a
// version 1 file is rebuilt.
const (
	snapMagic   = "ENGRSNAP"
	snapVersion = 2
	snapDir     = "vectors"
)

var snapCRC = crc32.MakeTable(crc32.Castagnoli)

func numCPU() int { return runtime.GOMAXPROCS(0) }

// snapNames names snapshot files: keyed hashes (HMAC-SHA256) of a
// partition's tenant prefix, of the tenant or user prefix it belongs to
// (its base) and of its own prefix. No id appears in a file name, erasing
// a tenant or a user removes the files of all its partitions, named spaces
// included, by one pattern, and the key is a random salt of the store's
// own, kept in the store (encrypted with it, and in its backups): without
// it, a guessed id cannot be confirmed from a directory listing, and two
// stores name the same partition differently. Plain hashes, which anyone
// can compute from a guess, named the files before.
type snapNames struct {
	dir  string
	salt []byte
}

// snapNameBytes is how much of each HMAC a name keeps (32 hex digits);
// the unsalted layout kept 12 bytes, so the two never look alike.
const snapNameBytes = 16

// snapSaltKey holds the salt of the store's snapshot names.
var snapSaltKey = SystemKey(NSMeta, []byte("snapshot-name-salt"))

func (n snapNames) hash(b []byte) string {
	m := hmac.New(sha256.New, n.salt)
	m.Write(b)
	return hex.EncodeToString(m.Sum(nil)[:snapNameBytes])
}

// path returns the file of the partition prefix.
func (n snapNames) path(prefix []byte) string {
	return filepath.Join(n.dir, snapDir, n.tenantHash(prefix)+"-"+n.hash(partitionBase(prefix))+"-"+n.hash(prefix)+".snap")
}

// tenantHash hashes the tenant prefix of a key: tag, tenant, separator.
func (n snapNames) tenantHash(key []byte) string {
	if t, ok := tenantPrefixOf(key); ok {
		return n.hash(t)
	}
	return n.hash(key)
}

// isSnapName reports whether a file name is of the keyed layout.
func isSnapName(name string) bool {
	parts := strings.Split(strings.TrimSuffix(name, ".snap"), "-")
	if !strings.HasSuffix(name, ".snap") || len(parts) != 3 {
		return false
	}
	for _, p := range parts {
		if _, err := hex.DecodeString(p); err != nil || len(p) != 2*snapNameBytes {
			return false
		}
	}
	return true
}

// snapshotNames returns the namer of the store's snapshot files; with
// create, it makes the store's salt when there is none yet. Without one,
// ok is false: no snapshot was written under the keyed layout. The salt
// is made at the first snapshot, not at Open, so a new store stays empty
// for a restore.
func (db *DB) snapshotNames(ctx context.Context, create bool) (n snapNames, ok bool, err error) {
	n.dir = db.kv.Dir()
	if s := db.snapSalt.Load(); s != nil {
		n.salt = *s
		return n, true, nil
	}
	var salt []byte
	update := db.View
	if create {
		update = db.Update
	}
	err = update(ctx, func(tx *Tx) error {
		salt = nil
		b, err := tx.Get(snapSaltKey)
		switch {
		case err == nil:
			salt = b
			return nil
		case !errors.Is(err, ErrNotFound) || !create:
			return err
		}
		// A concurrent first snapshot conflicts here and reads ours.
		salt = make([]byte, 32)
		if _, err := rand.Read(salt); err != nil {
			return err
		}
		return tx.Set(snapSaltKey, salt)
	})
	if errors.Is(err, ErrNotFound) {
		return n, false, nil
	}
	if err != nil {
		return n, false, fmt.Errorf("snapshot name salt: %w", err)
	}
	db.snapSalt.Store(&salt)
	n.salt = salt
	return n, true, nil
}

// partitionBase returns the tenant or user prefix a key belongs to: the
// tenant prefix when a namespace byte follows it (or nothing does), else
// the user prefix.
func partitionBase(key []byte) []byte {
	if p, ok := partitionOf(key); ok {
		return p
	}
	return key
}

// removeSnapshotsUnder deletes the snapshot files of every partition under
// an erased prefix: all of a tenant's, all of a user's, or the one file of
// a partition. The caller holds db.snapMu.
func (db *DB) removeSnapshotsUnder(ctx context.Context, prefix []byte) error {
	names, ok, err := db.snapshotNames(ctx, false)
	if err != nil || !ok {
		return err // no salt: no snapshot was ever written
	}
	if len(partitionBase(prefix)) != len(prefix) {
		// A partition's own prefix (a named space): its one file.
		if err := os.Remove(names.path(prefix)); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
		return nil
	}
	pattern := names.tenantHash(prefix) + "-" + names.hash(prefix) + "-*.snap" // a user's
	if l, ok := prefixLevel(prefix); ok && l == LevelTenant {
		pattern = names.tenantHash(prefix) + "-*.snap" // a tenant's
	}
	files, err := filepath.Glob(filepath.Join(db.kv.Dir(), snapDir, pattern))
	if err != nil {
		return err
	}
	for _, f := range files {
		if err := os.Remove(f); err != nil && !errors.Is(err, fs.ErrNotExist) {
			return err
		}
	}
	return nil
}

// migrateSnapshots renames the snapshot files of the unsalted layout to
// their keyed names, so no rebuild follows an upgrade, and deletes the
// files no partition would read or erase any more: version 1 files, and
// files that are not sound snapshots of this store.
func (db *DB) migrateSnapshots(ctx context.Context) {
	files, _ := filepath.Glob(filepath.Join(db.kv.Dir(), snapDir, "*.snap"))
	for _, f := range files {
		if isSnapName(filepath.Base(f)) {
			continue
		}
		prefix, err := db.snapshotFilePrefix(f)
		if err != nil {
			_ = os.Remove(f)
			continue
		}
		names, _, err := db.snapshotNames(ctx, true)
		if err != nil {
			db.logger.Warn("engram: cannot rename old snapshot files; next open tries again", "err", err)
			return
		}
		to := names.path(prefix)
		if _, err := os.Stat(to); err == nil {
			_ = os.Remove(f) // a keyed one exists: it is newer
			continue
		}
		if err := os.Rename(f, to); err != nil {
			_ = os.Remove(f)
		}
	}
}

// snapshotFilePrefix returns the partition prefix a sound snapshot file
// names in its payload.
func (db *DB) snapshotFilePrefix(path string) ([]byte, error) {
	raw, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	payload, err := db.openSnapshot(raw)
	if err != nil {
		return nil, err
	}
	const at = 16 + 4 // after the mark and the prefix length
	if len(payload) < at {
		return nil, fmt.Errorf("%w: snapshot prefix", ErrCorrupt)
	}
	n := binary.LittleEndian.Uint32(payload[16:])
	if uint64(n) > uint64(len(payload)-at) || !isTenantKey(payload[at:at+int(n)]) {
		return nil, fmt.Errorf("%w: snapshot prefix", ErrCorrupt)
	}
	return bytes.Clone(payload[at : at+int(n)]), nil
}

// loadPartition fills a new partition: from its snapshot and the log after
// it when the snapshot is sound, otherwise by a rebuild from the records.
func (db *DB) loadPartition(ctx context.Context, p *partition) error {
	err := db.loadIndex(ctx, p)
	if err == nil {
		// New log ids must sort after every one this partition has seen.
		db.raiseIDFloor(p.mu.lastLog)
		p.resizeLocked() // no one else sees p until it is loaded
	}
	return err
}

func (db *DB) loadIndex(ctx context.Context, p *partition) error {
	p.db = db
	p.mu.ids = map[ulid.ULID]uint64{}
	if db.kv.Dir() != "" || db.kv.Postgres() {
		file, err := db.loadSnapshot(ctx, p)
		switch {
		case err == nil:
			return nil
		case errors.Is(err, fs.ErrNotExist):
		default:
			db.logger.Warn("engram: vector snapshot unusable; rebuilding from records",
				"file", file, "err", err)
			p.mu.ids = map[ulid.ULID]uint64{}
			p.mu.keys, p.mu.hnsw, p.mu.flat, p.mu.lex, p.mu.dim, p.mu.lastLog = nil, nil, nil, nil, 0, ulid.ULID{}
		}
	}
	return db.rebuild(ctx, p)
}

// rebuild indexes every record of the partition.
func (db *DB) rebuild(ctx context.Context, p *partition) error {
	var vecs [][]float32
	lex := index.NewBM25(nil)
	p.mu.lex = lex
	err := db.View(ctx, func(tx *Tx) error {
		recPrefix := Key(p.prefix, NSRecord)
		it := tx.NewIterator(IterOptions{Prefix: recPrefix})
		defer it.Close()
		var val []byte
		for it.Seek(nil); it.Valid(); it.Next() {
			id := idAfter(recPrefix, it.Key())
			var err error
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			r, err := decodeRecord(val)
			if err != nil {
				return fmt.Errorf("rebuild %x: %w", id, err)
			}
			if p.mu.dim == 0 {
				p.mu.dim = len(r.Vector)
			}
			if len(r.Vector) != p.mu.dim {
				continue
			}
			ix := uint64(len(p.mu.keys))
			p.mu.ids[id] = ix
			p.mu.keys = append(p.mu.keys, id)
			vecs = append(vecs, r.Vector)
			lex.AddFields(ix, r.Text, r.Context)
		}
		last, err := lastLogID(tx, p.prefix)
		p.mu.lastLog = last
		return err
	})
	if err != nil {
		return err
	}
	if len(vecs) > db.exactThreshold {
		h, err := index.NewHNSW(p.mu.dim, &db.hnswOpts)
		if err != nil {
			return err
		}
		ids := make([]uint64, len(vecs))
		for i := range ids {
			ids[i] = uint64(i)
		}
		parallelAdd(h, ids, func(ix uint64) []float32 { return vecs[ix] })
		p.mu.hnsw = h
		p.mu.dirty = len(vecs) // worth a snapshot
		return nil
	}
	if len(vecs) == 0 {
		return nil // the index is made with the first vector
	}
	f, err := index.NewFlat(p.mu.dim)
	if err != nil {
		return err
	}
	for i, v := range vecs {
		_ = f.Add(uint64(i), v)
	}
	p.mu.flat = f
	return nil
}

// lastLogID returns the newest log id of the partition.
func lastLogID(tx *Tx, prefix []byte) (ulid.ULID, error) {
	logPrefix := Key(prefix, NSVectorLog)
	it := tx.NewIterator(IterOptions{Prefix: logPrefix, Reverse: true, KeysOnly: true})
	defer it.Close()
	var id ulid.ULID
	if it.Seek(nil); it.Valid() {
		id = idAfter(logPrefix, it.Key())
	}
	return id, nil
}

// loadSnapshot reads the partition's snapshot and replays the log after
// its mark. Any problem is returned, with the file's name, so the caller
// rebuilds.
//
// The snapshot is read inside the transaction that replays the log: a
// snapshot of the partition written meanwhile, by the copy this load
// replaces (evicted, or taken over) while its snapshot was on its way,
// deletes the log it covers, and the transaction still sees that log
// when the file read is the older one.
func (db *DB) loadSnapshot(ctx context.Context, p *partition) (string, error) {
	file := "the store's snapshot key"
	if !db.kv.Postgres() {
		names, ok, err := db.snapshotNames(ctx, false)
		if err != nil {
			return "", err
		}
		if !ok {
			return "", fs.ErrNotExist // no snapshot was ever written
		}
		file = names.path(p.prefix)
	}
	// kv's View, not db.View: a partition without a snapshot is no
	// failure to count.
	err := db.kv.View(ctx, func(t *kv.Txn) error {
		tx := &Tx{t: t, db: db, ctx: ctx}
		var raw []byte
		var err error
		if db.kv.Postgres() {
			if raw, err = tx.Get(Key(p.prefix, NSSnapshot)); errors.Is(err, ErrNotFound) {
				err = fs.ErrNotExist
			}
		} else {
			raw, err = os.ReadFile(file)
		}
		if err != nil {
			return err
		}
		if db.snapshotRead != nil {
			db.snapshotRead()
		}
		return db.useSnapshot(tx, p, raw)
	})
	return file, err
}

// useSnapshot fills the partition from a snapshot and replays the log
// after its mark, in tx.
func (db *DB) useSnapshot(tx *Tx, p *partition, raw []byte) error {
	payload, err := db.openSnapshot(raw)
	if err != nil {
		return err
	}
	snap, err := decodeSnapshot(payload, p.prefix)
	if err != nil {
		return err
	}
	p.mu.dim, p.mu.hnsw, p.mu.lex, p.mu.keys, p.mu.lastLog = snap.dim, snap.hnsw, snap.lex, snap.keys, snap.mark
	for ix, id := range snap.keys {
		if id != (ulid.ULID{}) {
			p.mu.ids[id] = uint64(ix)
		}
	}
	return replay(tx, p, snap.mark)
}

// snapshotData is a decoded snapshot payload.
type snapshotData struct {
	mark ulid.ULID
	dim  int
	keys []ulid.ULID
	hnsw *index.HNSW
	lex  *index.BM25
}

// encodeSnapshot lays out a snapshot payload of the partition prefix.
func encodeSnapshot(snap *snapshotData, prefix []byte) ([]byte, error) {
	var buf bytes.Buffer
	buf.Write(snap.mark[:])
	_ = binary.Write(&buf, binary.LittleEndian, uint32(len(prefix)))
	buf.Write(prefix)
	_ = binary.Write(&buf, binary.LittleEndian, [2]uint32{uint32(snap.dim), uint32(len(snap.keys))})
	for _, k := range snap.keys {
		buf.Write(k[:])
	}
	// Each section is preceded by its length, patched in once written.
	section := func(encode func(io.Writer) error) error {
		at := buf.Len()
		buf.Write(make([]byte, 8))
		if err := encode(&buf); err != nil {
			return err
		}
		binary.LittleEndian.PutUint64(buf.Bytes()[at:], uint64(buf.Len()-at-8))
		return nil
	}
	if err := section(snap.hnsw.Encode); err != nil {
		return nil, err
	}
	if err := section(snap.lex.Encode); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// decodeSnapshot parses a snapshot payload of the partition prefix.
func decodeSnapshot(payload, prefix []byte) (*snapshotData, error) {
	r := bytes.NewReader(payload)
	var snap snapshotData
	var hdr struct{ PrefixLen uint32 }
	if _, err := io.ReadFull(r, snap.mark[:]); err != nil {
		return nil, fmt.Errorf("%w: snapshot mark", ErrCorrupt)
	}
	if err := binary.Read(r, binary.LittleEndian, &hdr); err != nil || int64(hdr.PrefixLen) > int64(r.Len()) {
		return nil, fmt.Errorf("%w: snapshot prefix", ErrCorrupt)
	}
	got := make([]byte, hdr.PrefixLen)
	_, _ = r.Read(got)
	if !bytes.Equal(got, prefix) {
		return nil, fmt.Errorf("%w: snapshot of another partition", ErrCorrupt)
	}
	var dims struct{ Dim, Keys uint32 }
	if err := binary.Read(r, binary.LittleEndian, &dims); err != nil || uint64(dims.Keys)*16 > uint64(r.Len()) {
		return nil, fmt.Errorf("%w: snapshot key table", ErrCorrupt)
	}
	snap.dim = int(dims.Dim)
	snap.keys = make([]ulid.ULID, dims.Keys)
	for i := range snap.keys {
		_, _ = r.Read(snap.keys[i][:])
	}
	section := func(name string) (*bytes.Reader, error) {
		var n uint64
		if err := binary.Read(r, binary.LittleEndian, &n); err != nil || n > uint64(r.Len()) {
			return nil, fmt.Errorf("%w: snapshot %s section", ErrCorrupt, name)
		}
		b := make([]byte, n)
		_, _ = r.Read(b)
		return bytes.NewReader(b), nil
	}
	sec, err := section("HNSW")
	if err != nil {
		return nil, err
	}
	if snap.hnsw, err = index.DecodeHNSW(sec); err != nil {
		return nil, err
	}
	if snap.hnsw.Dim() != snap.dim {
		return nil, fmt.Errorf("%w: snapshot dimension", ErrCorrupt)
	}
	if sec, err = section("BM25"); err != nil {
		return nil, err
	}
	if snap.lex, err = index.DecodeBM25(sec); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%w: %d bytes after the snapshot's sections", ErrCorrupt, r.Len())
	}
	return &snap, nil
}

// replay applies the partition's log entries after mark, as tx sees
// them. Applying one twice is harmless: a put replaces, a delete of a
// missing record does nothing.
func replay(tx *Tx, p *partition, mark ulid.ULID) error {
	logPrefix := Key(p.prefix, NSVectorLog)
	it := tx.NewIterator(IterOptions{Prefix: logPrefix})
	defer it.Close()
	start := NextID(mark)
	var val []byte
	for it.Seek(Key(p.prefix, NSVectorLog, start[:])); it.Valid(); it.Next() {
		var id ulid.ULID
		logID := idAfter(logPrefix, it.Key())
		var err error
		if val, err = it.Value(val[:0]); err != nil {
			return err
		}
		if len(val) != 17 {
			return fmt.Errorf("%w: vector log entry", ErrCorrupt)
		}
		copy(id[:], val[1:])
		var vec []float32
		var text, context string
		if val[0] == logPut {
			b, err := tx.Get(Key(p.prefix, NSRecord, id[:]))
			if errors.Is(err, ErrNotFound) {
				continue // deleted later; its delete entry follows
			}
			if err != nil {
				return err
			}
			r, err := decodeRecord(b)
			if err != nil {
				return err
			}
			vec, text, context = r.Vector, r.Text, r.Context
		}
		p.applyLocked(val[0], id, vec, text, context)
		p.mu.lastLog = logID
		p.mu.dirty++
	}
	return nil
}

// snapshot writes the partition's graph to its file if it changed, then
// drops the log entries the file covers.
func (db *DB) snapshot(ctx context.Context, p *partition) error {
	// With apply write-held no change is between taking its log id and
	// being applied, so lastLog is a true mark; holding mu for reading
	// keeps the graph and key table still while they are encoded.
	p.apply.Lock()
	p.mu.RLock()
	p.apply.Unlock()
	if p.mu.hnsw == nil || p.mu.dirty == 0 {
		p.mu.RUnlock()
		return nil
	}
	mark, dirty := p.mu.lastLog, p.mu.dirty
	lex := p.mu.lex
	if lex == nil {
		lex = index.NewBM25(nil)
	}
	payload, err := encodeSnapshot(&snapshotData{mark: mark, dim: p.mu.dim, keys: p.mu.keys, hnsw: p.mu.hnsw, lex: lex}, p.prefix)
	p.mu.RUnlock()
	if err != nil {
		return err
	}
	file, err := db.sealSnapshot(payload)
	if err != nil {
		return err
	}
	var written bool
	if db.kv.Postgres() {
		written, err = db.storeSnapshot(ctx, p, file)
	} else {
		written, err = db.writeSnapshotFile(ctx, p, file)
	}
	if err != nil || !written {
		return err // not written: the log it would cover stays
	}
	p.mu.Lock()
	p.mu.dirty -= dirty
	p.mu.Unlock()
	// The log up to the mark is now redundant.
	logPrefix := Key(p.prefix, NSVectorLog)
	end := append(bytes.Clone(logPrefix), NextID(mark).Bytes()...)
	for {
		var n int
		err := db.Update(ctx, func(tx *Tx) error {
			it := tx.NewIterator(IterOptions{Prefix: logPrefix, KeysOnly: true})
			var keys [][]byte
			for it.Seek(nil); it.Valid() && len(keys) < 512 && bytes.Compare(it.Key(), end) < 0; it.Next() {
				keys = append(keys, bytes.Clone(it.Key()))
			}
			it.Close()
			for _, k := range keys {
				if err := tx.Delete(k); err != nil {
					return err
				}
			}
			n = len(keys)
			return nil
		})
		if err != nil || n < 512 {
			return err
		}
	}
}

// writeSnapshotFile writes a Badger store's snapshot file, unless the
// partition was erased or evicted meanwhile; written says whether it did.
// Not written, the log the snapshot would cover must stay: the partition
// loaded in an evicted one's place replays it from the older snapshot.
func (db *DB) writeSnapshotFile(ctx context.Context, p *partition, file []byte) (written bool, err error) {
	names, _, err := db.snapshotNames(ctx, true)
	if err != nil {
		return false, err
	}
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	if p.erased.Load() {
		// Forgotten while it was being encoded: its vectors must not
		// reach the disk again. Evicted: the partition in its place
		// owns the file.
		return false, nil
	}
	return true, writeFileAtomic(names.path(p.prefix), file)
}

// storeSnapshot writes a PostgreSQL store's snapshot under the partition's
// NSSnapshot key: a write of the partition like any other, so the lease
// fences it, and a process that lost the partition cannot put an old
// snapshot over its new owner's.
func (db *DB) storeSnapshot(ctx context.Context, p *partition, file []byte) (written bool, err error) {
	db.snapMu.Lock()
	defer db.snapMu.Unlock()
	if p.erased.Load() || !db.Owns(p.prefix) {
		return false, nil // erased, or no longer (or never) this process's
	}
	err = db.kv.Update(ctx, func(tx *kv.Txn) error { return tx.Set(Key(p.prefix, NSSnapshot), file) })
	return err == nil, err
}

func (db *DB) sealSnapshot(payload []byte) ([]byte, error) {
	sealed := byte(0)
	if db.gcm != nil {
		nonce := make([]byte, db.gcm.NonceSize())
		if _, err := rand.Read(nonce); err != nil {
			return nil, err
		}
		payload = db.gcm.Seal(nonce, nonce, payload, []byte(snapMagic))
		sealed = 1
	}
	out := make([]byte, 0, len(payload)+25)
	out = append(out, snapMagic...)
	out = binary.LittleEndian.AppendUint32(out, snapVersion)
	out = append(out, sealed)
	out = binary.LittleEndian.AppendUint64(out, uint64(len(payload)))
	out = append(out, payload...)
	return binary.LittleEndian.AppendUint32(out, crc32.Checksum(payload, snapCRC)), nil
}

func (db *DB) openSnapshot(raw []byte) ([]byte, error) {
	const hdr = len(snapMagic) + 4 + 1 + 8
	if len(raw) < hdr+4 || string(raw[:len(snapMagic)]) != snapMagic {
		return nil, fmt.Errorf("%w: not a snapshot", ErrCorrupt)
	}
	if v := binary.LittleEndian.Uint32(raw[8:]); v != snapVersion {
		return nil, fmt.Errorf("%w: snapshot version %d", ErrCorrupt, v)
	}
	sealed := raw[12]
	n := binary.LittleEndian.Uint64(raw[13:])
	if n != uint64(len(raw)-hdr-4) {
		return nil, fmt.Errorf("%w: snapshot length", ErrCorrupt)
	}
	payload := raw[hdr : hdr+int(n)]
	if crc32.Checksum(payload, snapCRC) != binary.LittleEndian.Uint32(raw[hdr+int(n):]) {
		return nil, fmt.Errorf("%w: snapshot checksum", ErrCorrupt)
	}
	switch {
	case sealed == 1 && db.gcm != nil:
		ns := db.gcm.NonceSize()
		if len(payload) < ns {
			return nil, fmt.Errorf("%w: sealed snapshot", ErrCorrupt)
		}
		out, err := db.gcm.Open(nil, payload[:ns], payload[ns:], []byte(snapMagic))
		if err != nil {
			return nil, fmt.Errorf("%w: sealed snapshot: %v", ErrCorrupt, err)
		}
		return out, nil
	case sealed == 0 && db.gcm == nil:
		return payload, nil
	default:
		return nil, fmt.Errorf("%w: snapshot sealing does not match the store's encryption", ErrCorrupt)
	}
}

// newGCM returns the AEAD that seals snapshots of an encrypted store.
func newGCM(key []byte) (cipher.AEAD, error) {
	if len(key) == 0 {
		return nil, nil
	}
	// A key for snapshots derived from the store's, so the two uses of the
	// key never share a key stream.
	sum := sha256.Sum256(append([]byte("engram snapshot key\x00"), key...))
	block, err := aes.NewCipher(sum[:])
	if err != nil {
		return nil, err
	}
	return cipher.NewGCM(block)
}

// writeFileAtomic replaces path with data: a temporary file in the same
// directory, fsynced, renamed over path, and the directory fsynced.
func writeFileAtomic(path string, data []byte) error {
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	f, err := os.CreateTemp(dir, ".snap-*")
	if err != nil {
		return err
	}
	tmp := f.Name()
	_, err = f.Write(data)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp, path)
	}
	if err != nil {
		os.Remove(tmp)
		return fmt.Errorf("write snapshot: %w", err)
	}
	if d, err := os.Open(dir); err == nil {
		_ = d.Sync()
		d.Close()
	}
	return nil
}

// snapshotLoop writes snapshots of changed partitions in the background
// until stop is closed, which cancels a round in progress. A round ends
// within snapshotRoundTimeout: what it did not reach waits for the next.
func (db *DB) snapshotLoop(stop <-chan struct{}) {
	t := time.NewTicker(db.snapshotInterval)
	defer t.Stop()
	ctx, cancel := stopContext(stop)
	defer cancel()
	for {
		select {
		case <-stop:
			return
		case <-t.C:
			rctx, rcancel := context.WithTimeout(ctx, snapshotRoundTimeout)
			db.snapshotAll(rctx, db.snapshotAfter)
			rcancel()
		}
	}
}

// stopContext returns a context that ends when stop is closed or cancel is
// called, for a background loop whose rounds must end with it.
func stopContext(stop <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-stop:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

// snapshotRoundTimeout bounds one round of background snapshots, so that
// a store that stalls (issue 26) cannot keep the loop, and Close waiting
// for it, for ever.
const snapshotRoundTimeout = 5 * time.Minute

// snapshotAll snapshots every loaded HNSW partition with at least minDirty
// changes since its last snapshot.
func (db *DB) snapshotAll(ctx context.Context, minDirty int) {
	db.parts.Lock()
	parts := make([]*partition, 0, len(db.parts.m))
	for _, p := range db.parts.m {
		parts = append(parts, p)
	}
	db.parts.Unlock()
	for _, p := range parts {
		if ctx.Err() != nil {
			return // the rest waits for the next round
		}
		if !p.loaded.Load() {
			continue // still loading, or failed to
		}
		p.mu.RLock()
		due := p.mu.hnsw != nil && p.mu.dirty >= minDirty && p.mu.dirty > 0
		p.mu.RUnlock()
		if !due {
			continue
		}
		start := time.Now()
		if err := db.snapshot(ctx, p); err != nil {
			db.logger.Warn("engram: vector snapshot failed", "err", err)
		}
		if db.pace != nil {
			db.pace(ctx, time.Since(start))
		}
	}
}
