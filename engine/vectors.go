package engine

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/index"
)

// Vector search
//
// Records are indexed in partitions: one per (tenant, user) under the user
// prefix, and one shared partition per tenant under the tenant prefix. A
// partition holds an exact index (index.Flat) until it has more than
// Options.ExactThreshold vectors, then an HNSW graph. Badger is the source
// of truth: each PutRecord writes the record and a log entry
// (NSVectorLog, keyed by a time-ordered id) in the caller's transaction, and
// the in-memory index applies the change after the commit. Snapshots of a
// partition's graph carry the log id up to which they include every change;
// loading one replays the log after it. A missing or corrupt snapshot means
// a rebuild from the records, never lost data.

const (
	logPut    byte = 1
	logDelete byte = 2
)

// DefaultExactThreshold is the partition size up to which search is exact.
// Measured by BenchmarkCrossover at 384 dimensions, k 10: exact 33 µs
// against HNSW 48 µs at 1,000 vectors, 52 against 43 µs at 2,000, 98
// against 58 µs at 4,000. Up to 2,000 the graph would save little and lose
// exactness; past it HNSW wins by a growing margin.
const DefaultExactThreshold = 2000

// Hit is one search result.
type Hit struct {
	Record
	// Score is the cosine similarity to the query, in [-1, 1].
	Score float32
}

// SearchOptions tunes [DB.Search]. A nil *SearchOptions means defaults.
type SearchOptions struct {
	// Ef is the HNSW search breadth; zero means the index default (64).
	Ef int
	// Filter, when set, restricts results to records it accepts; it is
	// given the record's id and runs during the search.
	Filter func(id string) bool
	// Space names the record space searched within the scope's partition
	// (see [Tx.PutRecord]); empty is the default space.
	Space string
	// IDsOnly returns hits with only ID and Score set, without reading the
	// records: for a caller that fuses rankings first and reads only the
	// records it keeps. Such hits can name a record deleted or expired
	// since the index last changed.
	IDsOnly bool
	// Synonyms, for [DB.SearchText] only, adds WordNet synonyms of the
	// query's words at a lower weight ([index.ExpandQuery]), so "car"
	// also finds "automobile".
	Synonyms bool
}

// MaxSpaceLength is the longest record space name, in bytes.
const MaxSpaceLength = 32

// validateSpace checks a record space name: empty, or 1 to MaxSpaceLength
// bytes of lower-case ASCII letters, digits and '_'.
func validateSpace(space string) error {
	if len(space) > MaxSpaceLength {
		return fmt.Errorf("%w: space %q is longer than %d bytes", ErrInvalidRecord, space, MaxSpaceLength)
	}
	for i := 0; i < len(space); i++ {
		c := space[i]
		if (c < 'a' || c > 'z') && (c < '0' || c > '9') && c != '_' {
			return fmt.Errorf("%w: space %q may hold only a-z, 0-9 and _", ErrInvalidRecord, space)
		}
	}
	return nil
}

// recordPrefix returns the key prefix of a record space: the partition's
// prefix for the default space, else the partition's prefix, NSSpace, the
// space's name and a separator.
func recordPrefix(scope Scope, space string) ([]byte, error) {
	prefix, err := partitionFor(scope)
	if err != nil {
		return nil, err
	}
	if err := validateSpace(space); err != nil {
		return nil, err
	}
	if space == "" {
		return prefix, nil
	}
	return SpacePrefix(prefix, space), nil
}

// partitionFor returns the partition prefix a scope's records live in: the
// user prefix, or the tenant prefix when User is empty (shared).
// PartitionPrefix returns the key prefix of the partition that holds the
// scope's long-term data (records, vectors, the graph): the user's, or the
// tenant's shared partition when User is empty (and then Session must be
// too). Session and Agent do not select a partition.
func (s Scope) PartitionPrefix() ([]byte, error) {
	if s.User != "" {
		s.Session = ""
	}
	return partitionFor(s)
}

func partitionFor(scope Scope) ([]byte, error) {
	if scope.User == "" {
		if err := scope.Validate(LevelTenant); err != nil {
			return nil, err
		}
		if scope.Session != "" {
			return nil, fmt.Errorf("%w: a shared record has no Session", ErrInvalidScope)
		}
		return scope.Prefix(LevelTenant), nil
	}
	if err := scope.Validate(LevelUser); err != nil {
		return nil, err
	}
	return scope.Prefix(LevelUser), nil
}

// partition is the in-memory index of one partition.
type partition struct {
	prefix []byte
	db     *DB
	// erased is set when the partition's data is forgotten, so an
	// in-flight snapshot is not written.
	erased atomic.Bool

	load    sync.Once
	loadErr error
	// loaded is set once load succeeded: until then other goroutines (the
	// snapshotter) must not read the fields load fills without locks.
	loaded atomic.Bool
	// loadedAt is when load finished (Unix nanoseconds): a partition of
	// a PostgreSQL store that this process does not hold is loaded again
	// once it is older than foreignFresh.
	loadedAt atomic.Int64

	// pins counts the users of the partition (see acquire); rises only
	// under db.parts. elem is its entry in db.parts.lru, under db.parts.
	pins atomic.Int32
	elem *list.Element
	// acct is the partition's share of the cache's accounting.
	acct partAcct

	// apply is read-held by a writing transaction from the moment it takes
	// a log id until its change is applied (or abandoned), and write-held
	// briefly by a snapshot to read a mark: then every log id at or below
	// lastLog has been applied.
	apply sync.RWMutex

	mu struct {
		sync.RWMutex
		dim     int
		flat    *index.Flat
		hnsw    *index.HNSW
		lex     *index.BM25          // the records' text, under the same index ids
		keys    []ulid.ULID          // index id → record id; zero when deleted
		ids     map[ulid.ULID]uint64 // record id → index id
		lastLog ulid.ULID            // newest log id applied
		dirty   int                  // changes since the last snapshot
	}
}

// pendingOp is a change to apply to a partition after its commit.
type pendingOp struct {
	p      *partition
	op     byte
	id     ulid.ULID
	vector []float32
	text   string
	ctx    string // the record's Context
	logID  ulid.ULID
}

// PutRecord stores rec in a space of the partition of scope (its user, or
// the tenant's shared partition when User is empty) and returns its id. The
// record and its log entry commit with the transaction; the vector index
// takes the change right after the commit. A record with the id of an
// existing one replaces it. The first vector of a space sets its
// dimension; later ones must match ([ErrDimensionMismatch]). With
// [Options.VectorSource] set, a store whose vectors come from another
// source refuses the record ([ErrVectorSourceMismatch]).
//
// A space is a separate set of records with its own vector and text
// indexes (and its own dimension), erased with the partition: package
// memory keeps memories and message episodes in two spaces so that a
// search of one never wades through the other. A name is at most
// [MaxSpaceLength] bytes of a-z, 0-9 and _; "" is the default space.
func (tx *Tx) PutRecord(scope Scope, space string, rec Record) (string, error) {
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return "", err
	}
	if err := validateRecord(&rec); err != nil {
		return "", err
	}
	if err := tx.checkSource(); err != nil {
		return "", err
	}
	var ttl time.Duration
	if !rec.ExpiresAt.IsZero() {
		if ttl = time.Until(rec.ExpiresAt); ttl <= 0 {
			return "", fmt.Errorf("%w: record expired at %v", ErrInvalidRecord, rec.ExpiresAt)
		}
	}
	var id ulid.ULID
	if rec.ID != "" {
		if id, err = ulid.ParseStrict(rec.ID); err != nil {
			return "", fmt.Errorf("%w: id %q is not a ULID", ErrInvalidRecord, rec.ID)
		}
	}
	p, err := tx.partition(prefix)
	if err != nil {
		return "", err
	}
	p.mu.Lock()
	if p.mu.dim == 0 {
		p.mu.dim = len(rec.Vector) // reserved even if this transaction aborts
	}
	dim := p.mu.dim
	p.mu.Unlock()
	if len(rec.Vector) != dim {
		return "", fmt.Errorf("%w: vector of %d dimensions in a partition of %d", ErrDimensionMismatch, len(rec.Vector), dim)
	}
	now := time.Now()
	if rec.Time.IsZero() {
		rec.Time = now
	}
	if rec.ID == "" {
		id = tx.db.NewID(now)
		rec.ID = id.String()
	}
	tx.hold(p)
	logID := tx.db.NewID(now)
	if err := tx.SetTTL(Key(prefix, NSRecord, id[:]), encodeRecord(&rec), ttl); err != nil {
		return "", err
	}
	if err := tx.Set(Key(prefix, NSVectorLog, logID[:]), append([]byte{logPut}, id[:]...)); err != nil {
		return "", err
	}
	tx.pending = append(tx.pending, pendingOp{p: p, op: logPut, id: id, vector: rec.Vector, text: rec.Text, ctx: rec.Context, logID: logID})
	return rec.ID, nil
}

// DeleteRecord removes a record from a space of scope's partition ("" is
// the default space; see [Tx.PutRecord]); a missing record is not an error.
func (tx *Tx) DeleteRecord(scope Scope, space, id string) error {
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return err
	}
	rid, err := ulid.ParseStrict(id)
	if err != nil {
		return fmt.Errorf("%w: id %q is not a ULID", ErrInvalidRecord, id)
	}
	p, err := tx.partition(prefix)
	if err != nil {
		return err
	}
	tx.hold(p)
	logID := tx.db.NewID(time.Now())
	if err := tx.Delete(Key(prefix, NSRecord, rid[:])); err != nil {
		return err
	}
	if err := tx.Set(Key(prefix, NSVectorLog, logID[:]), append([]byte{logDelete}, rid[:]...)); err != nil {
		return err
	}
	tx.pending = append(tx.pending, pendingOp{p: p, op: logDelete, id: rid, logID: logID})
	return nil
}

// SetRecordMetadata sets the metadata key of the record id in a space of
// scope's partition to value, and leaves the rest of the record (text,
// vector, time, expiry) and the indexes as they are: metadata is not
// indexed, so no index changes and nothing is logged for the vector
// index. A missing record is [ErrNotFound]. Package memory stores a token
// count computed for an older record this way.
func (tx *Tx) SetRecordMetadata(scope Scope, space, id, key, value string) error {
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return err
	}
	rid, err := ulid.ParseStrict(id)
	if err != nil {
		return fmt.Errorf("%w: id %q is not a ULID", ErrNotFound, id)
	}
	if err := ValidateID(key); err != nil {
		return fmt.Errorf("%w: metadata key %w", ErrInvalidRecord, err)
	}
	if !utf8.ValidString(value) {
		return fmt.Errorf("%w: metadata %q is not valid UTF-8", ErrInvalidRecord, key)
	}
	k := Key(prefix, NSRecord, rid[:])
	b, err := tx.Get(k)
	if err != nil {
		return err
	}
	r, err := decodeRecord(b)
	if err != nil {
		return err
	}
	exp, err := tx.t.Expiry(k)
	if err != nil {
		return convert(err)
	}
	var ttl time.Duration
	if !exp.IsZero() {
		if ttl = time.Until(exp); ttl <= 0 {
			return fmt.Errorf("%w: record %s expired", ErrNotFound, id)
		}
	}
	if r.Metadata == nil {
		r.Metadata = map[string]string{}
	}
	r.Metadata[key] = value
	return tx.SetTTL(k, encodeRecord(&r), ttl)
}

// GetRecordOptions tunes [Tx.GetRecord]. A nil *GetRecordOptions means
// defaults: the whole record.
type GetRecordOptions struct {
	// SkipVector leaves the record's Vector nil, which saves decoding it:
	// for a caller that needs only the text and metadata.
	SkipVector bool
}

// GetRecord returns the record with id in a space of scope's partition (""
// is the default space; see [Tx.PutRecord]), or [ErrNotFound]. A nil opts
// means the whole record.
func (tx *Tx) GetRecord(scope Scope, space, id string, opts *GetRecordOptions) (Record, error) {
	var o GetRecordOptions
	if opts != nil {
		o = *opts
	}
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return Record{}, err
	}
	rid, err := ulid.ParseStrict(id)
	if err != nil {
		return Record{}, fmt.Errorf("%w: id %q is not a ULID", ErrNotFound, id)
	}
	b, err := tx.Get(Key(prefix, NSRecord, rid[:]))
	if err != nil {
		return Record{}, err
	}
	r, err := decodeRecordSkip(b, o.SkipVector)
	r.ID = id
	return r, err
}

// hold read-locks p's apply lock for the rest of the transaction, once.
func (tx *Tx) hold(p *partition) {
	for _, h := range tx.held {
		if h == p {
			return
		}
	}
	p.apply.RLock()
	tx.held = append(tx.held, p)
}

// finish applies the pending changes of a committed transaction (or drops
// them), then releases the partitions.
func (tx *Tx) finish(committed bool) {
	if committed && len(tx.pending) > 0 && tx.db.beforeApply != nil {
		tx.db.beforeApply()
	}
	if committed {
		for _, op := range tx.pending {
			op.p.applyOp(op)
		}
	}
	for _, p := range tx.held {
		p.apply.RUnlock()
	}
	for _, p := range tx.pinned {
		p.release()
	}
	if committed {
		for _, f := range tx.onCommit {
			f()
		}
	}
	grew := committed && len(tx.pending) > 0
	tx.pending, tx.held, tx.pinned, tx.onCommit = nil, nil, nil, nil
	if grew && tx.db.cache.resident.Load() > tx.db.cache.budget {
		tx.db.trim(tx.ctx, false)
	}
}

// applyOp applies one committed change to the in-memory index.
func (p *partition) applyOp(op pendingOp) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.applyLocked(op.op, op.id, op.vector, op.text, op.ctx)
	if op.logID.Compare(p.mu.lastLog) > 0 {
		p.mu.lastLog = op.logID
	}
	p.mu.dirty++
	p.db.promoteLocked(p)
	p.resizeLocked()
}

// applyLocked adds, replaces or removes one record's vector and text.
func (p *partition) applyLocked(op byte, id ulid.ULID, vec []float32, text, context string) {
	if old, ok := p.mu.ids[id]; ok {
		p.removeIndexLocked(old)
		delete(p.mu.ids, id)
		p.mu.keys[old] = ulid.ULID{}
	}
	if op != logPut || len(vec) != p.mu.dim {
		return
	}
	if p.mu.flat == nil && p.mu.hnsw == nil {
		f, err := index.NewFlat(p.mu.dim)
		if err != nil {
			return
		}
		p.mu.flat = f
	}
	ix := uint64(len(p.mu.keys))
	p.mu.keys = append(p.mu.keys, id)
	p.mu.ids[id] = ix
	if p.mu.lex == nil {
		p.mu.lex = index.NewBM25(nil)
	}
	p.mu.lex.AddFields(ix, text, context)
	// A vector that cannot be indexed (zero norm) stays stored and
	// unsearchable; validateRecord already rejected non-finite ones.
	if p.mu.hnsw != nil {
		_ = p.mu.hnsw.Add(ix, vec)
	} else {
		_ = p.mu.flat.Add(ix, vec)
	}
}

func (p *partition) removeIndexLocked(ix uint64) {
	if p.mu.lex != nil {
		p.mu.lex.Delete(ix)
	}
	switch {
	case p.mu.hnsw != nil:
		p.mu.hnsw.Delete(ix)
	case p.mu.flat != nil:
		p.mu.flat.Delete(ix)
	}
}

// promoteLocked moves a partition that outgrew the exact threshold to an
// HNSW graph, inserting in parallel.
func (db *DB) promoteLocked(p *partition) {
	if p.mu.hnsw != nil || p.mu.flat == nil || p.mu.flat.Len() <= db.exactThreshold {
		return
	}
	h, err := index.NewHNSW(p.mu.dim, &db.hnswOpts)
	if err != nil {
		// Unreachable: Open checked the options and validateRecord the
		// dimension, so the partition cannot be left exact for good.
		return
	}
	var ids []uint64
	for ix, id := range p.mu.keys {
		if id != (ulid.ULID{}) {
			ids = append(ids, uint64(ix))
		}
	}
	parallelAdd(h, ids, func(ix uint64) []float32 {
		v, _ := p.mu.flat.Vector(ix)
		return v
	})
	p.mu.hnsw, p.mu.flat = h, nil
}

// Search returns the k records of scope's partition nearest to q by cosine
// similarity, nearest first: exact in a small partition, HNSW in a large
// one. The scope names the partition as PutRecord does. A query of zero
// norm has no direction and matches nothing: no hits, no error.
func (db *DB) Search(ctx context.Context, scope Scope, q []float32, k int, opts *SearchOptions) ([]Hit, error) {
	var o SearchOptions
	if opts != nil {
		o = *opts
	}
	prefix, err := recordPrefix(scope, o.Space)
	if err != nil {
		return nil, err
	}
	if len(q) == 0 {
		return nil, fmt.Errorf("%w: empty query", ErrDimensionMismatch)
	}
	p, err := db.acquire(ctx, prefix)
	if err != nil {
		return nil, err
	}
	defer p.release()
	p.mu.RLock()
	if p.mu.dim == 0 {
		p.mu.RUnlock()
		return nil, nil
	}
	if len(q) != p.mu.dim {
		dim := p.mu.dim
		p.mu.RUnlock()
		return nil, fmt.Errorf("%w: query of %d dimensions in a partition of %d", ErrDimensionMismatch, len(q), dim)
	}
	if isZero(q) {
		// No direction, so similar to nothing: the hashing embedder's
		// vector for a text with no word ("?!"), which used to surface
		// as an error (issue 12). Records with such vectors are stored
		// but never indexed (applyLocked).
		p.mu.RUnlock()
		return nil, nil
	}
	io := &index.SearchOptions{Ef: o.Ef}
	if o.Filter != nil {
		keys := p.mu.keys
		io.Filter = func(ix uint64) bool { return o.Filter(keys[ix].String()) }
	}
	var res []index.Result
	switch {
	case p.mu.hnsw != nil:
		res, err = p.mu.hnsw.Search(q, k, io)
	case p.mu.flat != nil:
		res, err = p.mu.flat.Search(q, k, io)
	}
	ids := make([]ulid.ULID, len(res))
	for i, r := range res {
		ids[i] = p.mu.keys[r.ID]
	}
	p.mu.RUnlock()
	if err != nil {
		return nil, convertIndexError(err)
	}
	return db.readHits(ctx, prefix, ids, res, o.IDsOnly)
}

// readHits reads the records of a search's results. A record deleted or
// expired since the search is left out.
func (db *DB) readHits(ctx context.Context, prefix []byte, ids []ulid.ULID, res []index.Result, idsOnly bool) ([]Hit, error) {
	hits := make([]Hit, 0, len(res))
	if idsOnly {
		for i, id := range ids {
			hits = append(hits, Hit{Record: Record{ID: id.String()}, Score: res[i].Score})
		}
		return hits, nil
	}
	err := db.View(ctx, func(tx *Tx) error {
		if err := tx.prefetchHits(prefix, ids); err != nil {
			return err
		}
		for i, id := range ids {
			b, err := tx.Get(Key(prefix, NSRecord, id[:]))
			if errors.Is(err, ErrNotFound) {
				continue // deleted since the search
			}
			if err != nil {
				return err
			}
			r, err := decodeRecord(b)
			if err != nil {
				return err
			}
			r.ID = id.String()
			hits = append(hits, Hit{Record: r, Score: res[i].Score})
		}
		return nil
	})
	return hits, err
}

// isZero reports whether every component of v is zero.
func isZero(v []float32) bool {
	for _, f := range v {
		if f != 0 {
			return false
		}
	}
	return true
}

func convertIndexError(err error) error {
	switch {
	case errors.Is(err, index.ErrDimensionMismatch), errors.Is(err, index.ErrZeroVector):
		return fmt.Errorf("%w: %v", ErrDimensionMismatch, err)
	default:
		return err
	}
}

// parallelAdd inserts ids into h from all cores.
func parallelAdd(h *index.HNSW, ids []uint64, vec func(uint64) []float32) {
	workers := max(1, min(len(ids)/256, numCPU()))
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := w; i < len(ids); i += workers {
				_ = h.Add(ids[i], vec(ids[i]))
			}
		})
	}
	wg.Wait()
	h.ConnectOrphans() // concurrent inserts can leave a node unreachable
}

// ScanRecords calls fn with each record of a space of scope's partition (""
// is the default space; see [Tx.PutRecord]) whose id sorts after after (the
// zero ULID: from the first), in id order, until fn returns false or an
// error. Expired records are not visited.
func (tx *Tx) ScanRecords(scope Scope, space string, after ulid.ULID, fn func(Record) (bool, error)) error {
	prefix, err := recordPrefix(scope, space)
	if err != nil {
		return err
	}
	recPrefix := Key(prefix, NSRecord)
	it := tx.NewIterator(IterOptions{Prefix: recPrefix})
	defer it.Close()
	start := Key(prefix, NSRecord)
	if after != (ulid.ULID{}) {
		next := NextID(after)
		if next == (ulid.ULID{}) {
			return nil // nothing sorts after the largest id
		}
		start = append(start, next[:]...)
	}
	var val []byte
	for it.Seek(start); it.Valid(); it.Next() {
		id := idAfter(recPrefix, it.Key())
		if val, err = it.Value(val[:0]); err != nil {
			return err
		}
		r, err := decodeRecord(val)
		if err != nil {
			return fmt.Errorf("record %s: %w", id, err)
		}
		r.ID = id.String()
		if more, err := fn(r); err != nil || !more {
			return err
		}
	}
	return nil
}
