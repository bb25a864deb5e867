package kv

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgQueries holds the statements with the schema filled in.
type pgQueries struct {
	schema                         string
	get, getMany, upsert, del      string
	fwd, fwdOpen, rev, revOpen     string
	fwdKeys, fwdOpenKeys           string
	revKeys, revOpenKeys           string
	fence, take, heartbeat         string
	beginUpdate, beginView, commit string
	rollback                       string
}

func newPGQueries(schema string) pgQueries {
	q := pgQueries{schema: schema}
	live := `(expires_at = 0 OR expires_at > $2)`
	q.get = q.sql(`SELECT v, expires_at FROM {s}.kv WHERE k = $1 AND ` + live)
	q.getMany = q.sql(`SELECT k, v, expires_at FROM {s}.kv WHERE k = ANY($1::bytea[]) AND ` + live)
	q.upsert = q.sql(`INSERT INTO {s}.kv (k, v, expires_at) SELECT * FROM unnest($1::bytea[], $2::bytea[], $3::bigint[])
		ON CONFLICT (k) DO UPDATE SET v = excluded.v, expires_at = excluded.expires_at`)
	q.del = q.sql(`DELETE FROM {s}.kv WHERE k = ANY($1::bytea[])`)
	scan := func(cols, where, order string) string {
		return q.sql(`SELECT ` + cols + ` FROM {s}.kv WHERE ` + where + ` AND (expires_at = 0 OR expires_at > $3) ORDER BY k ` + order + ` LIMIT $4`)
	}
	// $1 lower bound (inclusive), $2 upper bound (exclusive), $3 now, $4 limit.
	q.fwd = scan("k, v, expires_at", "k >= $1 AND k < $2", "ASC")
	q.fwdOpen = scan("k, v, expires_at", "k >= $1 AND $2::bytea IS NULL", "ASC")
	q.rev = scan("k, v, expires_at", "k >= $1 AND k < $2", "DESC")
	q.revOpen = scan("k, v, expires_at", "k >= $1 AND $2::bytea IS NULL", "DESC")
	// Keys-only scans bring small values along (octet_length reads no
	// TOASTed value): a caller that reads the value of a key it met, as
	// the graph walk reads each index entry's validity, would otherwise
	// pay a round trip per key (128 of a Recall's 181 round trips on
	// bench/results/postgres.md's store).
	q.fwdKeys = scan(keysOnlyCols, "k >= $1 AND k < $2", "ASC")
	q.fwdOpenKeys = scan(keysOnlyCols, "k >= $1 AND $2::bytea IS NULL", "ASC")
	q.revKeys = scan(keysOnlyCols, "k >= $1 AND k < $2", "DESC")
	q.revOpenKeys = scan(keysOnlyCols, "k >= $1 AND $2::bytea IS NULL", "DESC")
	q.fence = q.sql(`SELECT {s}.fence($1::bytea[], $2::bigint[], $3)`)
	q.take = q.sql(`SELECT {s}.take($1, $2, $3, 0)`)
	q.heartbeat = q.sql(`INSERT INTO {s}.nodes (node, addr, seen) VALUES ($1, $2, now())
		ON CONFLICT (node) DO UPDATE SET addr = excluded.addr, seen = excluded.seen`)
	q.beginUpdate = `BEGIN ISOLATION LEVEL SERIALIZABLE`
	q.beginView = `BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY`
	q.commit = `COMMIT`
	q.rollback = `ROLLBACK`
	return q
}

// sql fills the schema into a statement.
func (q pgQueries) sql(s string) string { return strings.ReplaceAll(s, "{s}", q.schema) }

// pgWrite is a write not yet sent.
type pgWrite struct {
	val []byte // plaintext; nil with del
	exp uint64
	del bool
}

// pgRead is a value this transaction read, or wrote and sent.
type pgRead struct {
	val   []byte
	exp   uint64
	found bool
}

// pgTxn is a PostgreSQL transaction behind a [Txn]. Writes are kept until
// the next statement that must see them (a read that misses them, an
// iterator's page, the commit) and sent with it in one round trip; reads
// are cached, so a key read twice costs one round trip. BEGIN is sent with
// the first statement and COMMIT with the last writes.
type pgTxn struct {
	s      *pgStore
	ctx    context.Context
	conn   *pgxpool.Conn
	update bool
	begun  bool
	// err is the first failed statement: PostgreSQL aborts the
	// transaction, so every later call returns it.
	err     error
	pending map[string]pgWrite
	order   []string // pending keys in write order
	reads   map[string]pgRead
	// parts are the partitions written; last is the latest, to skip the
	// map for runs of writes to one partition.
	parts map[string]struct{}
	last  []byte
	// start is when the commit was sent: a lease it took lasts from then.
	start time.Time
	// count and size add up the writes, as Badger counts them against
	// its batch limits: past the store's limits a write is ErrTooLarge.
	count, size int64
}

// pgMaxKey is the longest key: Badger's limit, so that a key one backend
// takes the other takes too. (The primary-key index also refuses an entry
// over about 2.7 KB after compression: such a key fails at commit with
// ErrTooLarge, SQLSTATE 54000.)
const pgMaxKey = badgerMaxKey

func (s *pgStore) run(ctx context.Context, update bool, fn func(*Txn) error) (err error) {
	conn, err := s.pool.Acquire(ctx)
	if err != nil {
		return pgError(err)
	}
	t := &pgTxn{s: s, ctx: ctx, conn: conn, update: update, reads: map[string]pgRead{}}
	tx := &Txn{impl: t, update: update}
	committed := false
	outcome := Aborted
	defer func() {
		defer tx.end(outcome)
		tx.closeIterators()
		if t.begun && !committed {
			// A rollback on a broken connection fails; the pool drops it.
			ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			if _, rerr := conn.Exec(ctx, s.q.rollback); rerr != nil {
				conn.Conn().PgConn().Close(ctx)
			}
			cancel()
		}
		conn.Release()
	}()
	if err := fn(tx); err != nil {
		return err
	}
	if t.err != nil {
		return t.err // a failed statement fn did not return
	}
	tx.closeIterators()
	if !update || (len(t.pending) == 0 && len(t.parts) == 0 && !t.begun) {
		return nil // the deferred rollback ends a read-only transaction
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if err := t.commit(); err != nil {
		if !errors.Is(err, ErrConflict) {
			outcome = Unknown
		}
		return err
	}
	committed = true
	outcome = Committed
	return nil
}

// send runs the pending writes, after BEGIN when the transaction has not
// begun, then the queries add queues, in one round trip. It returns the
// results positioned at the first of add's queries; the caller closes
// them.
func (t *pgTxn) send(add func(b *pgx.Batch)) (pgx.BatchResults, int, error) {
	if t.err != nil {
		return nil, 0, t.err
	}
	b := &pgx.Batch{}
	lead := 0
	if !t.begun {
		if t.update {
			b.Queue(t.s.q.beginUpdate)
		} else {
			b.Queue(t.s.q.beginView)
		}
		lead++
		t.begun = true
	}
	lead += t.queueWrites(b)
	if add != nil {
		add(b)
	}
	br := t.conn.SendBatch(t.ctx, b)
	for i := 0; i < lead; i++ {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.err = pgError(err)
			return nil, 0, t.err
		}
	}
	return br, lead, nil
}

// queueWrites queues the pending writes (at most one upsert and one
// delete: a key written twice was kept once) and moves them to reads.
func (t *pgTxn) queueWrites(b *pgx.Batch) int {
	if len(t.pending) == 0 {
		return 0
	}
	var keys, vals [][]byte
	var exps []int64
	var dels [][]byte
	for _, k := range t.order {
		w, ok := t.pending[k]
		if !ok {
			continue
		}
		delete(t.pending, k) // a key in order twice is sent once
		key := []byte(k)
		if w.del {
			dels = append(dels, key)
			t.reads[k] = pgRead{}
			continue
		}
		v := w.val
		if t.s.seal != nil {
			v = t.s.seal.seal(key, w.val)
		}
		keys, vals, exps = append(keys, key), append(vals, v), append(exps, int64(w.exp))
		t.reads[k] = pgRead{val: w.val, exp: w.exp, found: true}
	}
	t.order = t.order[:0]
	n := 0
	if len(keys) > 0 {
		b.Queue(t.s.q.upsert, keys, vals, exps)
		n++
	}
	if len(dels) > 0 {
		b.Queue(t.s.q.del, dels)
		n++
	}
	return n
}

// lookup returns what this transaction knows of key without a round trip.
func (t *pgTxn) lookup(key []byte) (pgRead, bool) {
	r, ok := t.reads[string(key)]
	if w, pending := t.pending[string(key)]; pending {
		r, ok = pgRead{val: w.val, exp: w.exp, found: !w.del}, true
	}
	if ok && r.found && r.exp != 0 && int64(r.exp) <= time.Now().Unix() {
		r = pgRead{} // expired since it was written or read, as Badger
	}
	return r, ok
}

// read fetches key, through the cache.
func (t *pgTxn) read(key []byte) (pgRead, error) {
	if r, ok := t.lookup(key); ok {
		return r, nil
	}
	br, _, err := t.send(func(b *pgx.Batch) { b.Queue(t.s.q.get, key, time.Now().Unix()) })
	if err != nil {
		return pgRead{}, err
	}
	defer br.Close()
	var raw []byte
	var exp int64
	r := pgRead{}
	switch err := br.QueryRow().Scan(&raw, &exp); {
	case errors.Is(err, pgx.ErrNoRows):
	case err != nil:
		t.err = pgError(err)
		return pgRead{}, t.err
	default:
		v, err := t.open(key, raw)
		if err != nil {
			return pgRead{}, err
		}
		r = pgRead{val: v, exp: uint64(exp), found: true}
	}
	t.reads[string(key)] = r
	return r, nil
}

// plainSize is the plaintext length of a value stored in that many
// bytes: less the sealer's nonce and tag when values are sealed.
func (s *pgStore) plainSize(stored int64) int64 {
	if s.seal == nil {
		return stored
	}
	return max(stored-int64(s.seal.overhead()), 0)
}

// open returns a stored value's plaintext.
func (t *pgTxn) open(key, raw []byte) ([]byte, error) {
	if t.s.seal == nil {
		return raw, nil
	}
	return t.s.seal.open(key, raw)
}

func (t *pgTxn) get(key, dst []byte) ([]byte, error) {
	r, err := t.read(key)
	if err != nil {
		return nil, err
	}
	if !r.found {
		return nil, ErrNotFound
	}
	return append(dst, r.val...), nil
}

func (t *pgTxn) getFunc(key []byte, fn func(value []byte) error) error {
	r, err := t.read(key)
	if err != nil {
		return err
	}
	if !r.found {
		return ErrNotFound
	}
	return fn(r.val)
}

func (t *pgTxn) has(key []byte) (bool, error) {
	r, err := t.read(key)
	return r.found, err
}

func (t *pgTxn) expiry(key []byte) (time.Time, error) {
	r, err := t.read(key)
	if err != nil {
		return time.Time{}, err
	}
	if !r.found {
		return time.Time{}, ErrNotFound
	}
	return expiryTime(r.exp), nil
}

func (t *pgTxn) set(key, value []byte, expiresAt uint64) error {
	return t.write(key, pgWrite{val: clone(value), exp: expiresAt})
}

func (t *pgTxn) delete(key []byte) error {
	return t.write(key, pgWrite{del: true})
}

func (t *pgTxn) write(key []byte, w pgWrite) error {
	if t.err != nil {
		return t.err
	}
	if len(key) > pgMaxKey {
		return fmt.Errorf("%w: a key of %d bytes (the limit is %d)", ErrTooLarge, len(key), pgMaxKey)
	}
	count, size := t.count+1, t.size+int64(len(key)+len(w.val))+pgEntryOverhead
	if count > t.s.txnEntries || size > t.s.txnBytes {
		return fmt.Errorf("%w: the transaction's writes pass %d entries or %d bytes", ErrTooLarge, t.s.txnEntries, t.s.txnBytes)
	}
	t.count, t.size = count, size
	if t.pending == nil {
		t.pending = map[string]pgWrite{}
	}
	k := string(key)
	if _, ok := t.pending[k]; !ok {
		t.order = append(t.order, k)
	}
	t.pending[k] = w
	if f := t.s.opts.Partition; f != nil {
		if p, ok := f(key); ok && !bytes.Equal(p, t.last) {
			if t.parts == nil {
				t.parts = map[string]struct{}{}
			}
			t.parts[string(p)] = struct{}{}
			t.last = bytes.Clone(p)
		}
	}
	return nil
}

// maxBlindRetries bounds how often commit sends a blind transaction again
// after a serialization failure.
const maxBlindRetries = 16

// commit sends the last writes, the lease checks of the partitions written
// and COMMIT in one round trip.
//
// A transaction that sent nothing before its commit read nothing: its
// writes are blind. Badger never fails a blind write (a conflict is a key
// read that a concurrent commit wrote), but PostgreSQL fails a
// SERIALIZABLE update of a row a concurrent transaction updated first
// (SQLSTATE 40001), so two Sets of one key from two goroutines would see
// ErrConflict. A blind transaction is therefore sent again, as a new
// transaction that commits after the one it collided with: nothing it
// did depended on what it would have read, so that is the same as
// Badger's last writer wins.
func (t *pgTxn) commit() error {
	if t.begun {
		return t.commitOnce()
	}
	pending, order := maps.Clone(t.pending), slices.Clone(t.order)
	for attempt := 0; ; attempt++ {
		err := t.commitOnce()
		if err == nil || !errors.Is(err, ErrConflict) || attempt == maxBlindRetries {
			return err
		}
		if _, rerr := t.conn.Exec(t.ctx, t.s.q.rollback); rerr != nil {
			return err
		}
		t.begun, t.err = false, nil
		t.pending, t.order = maps.Clone(pending), slices.Clone(order)
		select {
		case <-t.ctx.Done():
			return err
		case <-time.After(time.Duration(rand.IntN(1<<attempt)+1) * time.Millisecond):
		}
	}
}

// commitOnce is one try of commit.
func (t *pgTxn) commitOnce() error {
	held, take, err := t.s.fencePlan(t.parts)
	if err != nil {
		return err
	}
	var heldParts [][]byte
	var heldEpochs []int64
	for p, e := range held {
		heldParts, heldEpochs = append(heldParts, []byte(p)), append(heldEpochs, int64(e))
	}
	ttl := t.s.opts.LeaseTTL.Seconds()
	t.start = t.s.now()
	br, _, err := t.send(func(b *pgx.Batch) {
		for _, p := range take {
			b.Queue(t.s.q.take, p, t.s.opts.Node, ttl)
		}
		if len(heldParts) > 0 {
			b.Queue(t.s.q.fence, heldParts, heldEpochs, t.s.opts.Node)
		}
		b.Queue(t.s.q.commit)
	})
	if err != nil {
		return t.s.countFence(err)
	}
	epochs := make([]uint64, len(take))
	for i := range take {
		var e int64
		if err := br.QueryRow().Scan(&e); err != nil {
			br.Close()
			t.err = t.s.heldError(err, take[i])
			return t.s.countFence(t.err)
		}
		epochs[i] = uint64(e)
	}
	if len(heldParts) > 0 {
		if _, err := br.Exec(); err != nil {
			br.Close()
			t.err = pgError(err)
			return t.s.countFence(t.err)
		}
	}
	tag, err := br.Exec()
	if err != nil {
		br.Close()
		t.err = pgError(err)
		return t.err
	}
	if tag.String() != "COMMIT" {
		// An aborted transaction answers COMMIT with ROLLBACK.
		br.Close()
		t.err = fmt.Errorf("%w: the transaction was rolled back (%s)", ErrConflict, tag)
		return t.err
	}
	closeBatch := br.Close
	if t.s.afterCommit != nil {
		closeBatch = func() error { return t.s.afterCommit(br) }
	}
	// Committed, whatever reading the rest of the batch's answer says: a
	// failure now only spoils the connection, which is dropped.
	if err := closeBatch(); err != nil {
		t.conn.Conn().PgConn().Close(context.Background())
	}
	for i, p := range take {
		t.s.took(p, epochs[i], t.start)
	}
	return nil
}

// heldError turns take's EN002 into a *LeaseHeldError.
func (s *pgStore) heldError(err error, part []byte) error {
	var pe *pgconn.PgError
	if errors.As(err, &pe) && pe.Code == heldSQLState {
		l := Lease{Partition: bytes.Clone(part), Node: pe.Message}
		if until, perr := time.Parse("2006-01-02 15:04:05.999999-07", pe.Detail); perr == nil {
			l.Expires = until
		}
		return &LeaseHeldError{Lease: l}
	}
	return pgError(err)
}

// countFence counts a fenced commit.
func (s *pgStore) countFence(err error) error {
	if errors.Is(err, ErrFenced) {
		s.stats.fenced.Add(1)
		// Some lease this node believes it holds is gone: find out which
		// now rather than at the next renewal.
		select {
		case s.renewNow <- struct{}{}:
		default:
		}
	}
	return err
}

func (t *pgTxn) iterator(opts IterOptions) iterImpl {
	page := opts.Prefetch
	if opts.KeysOnly {
		page = 256
	}
	return &pgIter{t: t, opts: opts, page: page, first: page}
}

// pgIter reads a prefix in pages, each one round trip (with the writes
// the transaction has not sent yet), growing from the prefetch size.
type pgIter struct {
	t    *pgTxn
	opts IterOptions
	page int
	rows []pgRow
	pos  int
	// more is set while a full page came back: there may be more rows.
	more bool
	// lo and hi bound the next page: lo inclusive, hi exclusive (nil:
	// none).
	lo, hi []byte
	err    error
	// first is the size of the first page after a seek; pageLo the lower
	// bound the rows held were read from (see covers).
	first  int
	pageLo []byte
	// seeks are the pages PrefetchSeeks read, by seek target.
	seeks map[string]pgSeekPage
}

type pgRow struct {
	k, v []byte
	exp  uint64
	null bool // KeysOnly: the value was not fetched
	// size is the value's length, read with the key by a keys-only scan.
	size int64
}

const maxPGPage = 4096

// keysOnlyInline is the largest stored value a keys-only scan brings
// along with its key, in stored bytes: sealed, a value carries the
// sealer's nonce and tag too.
const keysOnlyInline = 512

// keysOnlyCols are the columns of a keys-only scan: the key, its value
// when small, its expiry, and its value's stored length (for ValueSize;
// octet_length reads a TOASTed value's header, not the value).
var keysOnlyCols = fmt.Sprintf("k, CASE WHEN octet_length(v) <= %d THEN v END, expires_at, octet_length(v)", keysOnlyInline)

func (it *pgIter) seek(key []byte) {
	if it.covers(key) || it.seekPrefetched(key) {
		return
	}
	it.page = it.first // a seek starts small again: a walk seeks far and reads little
	p := it.opts.Prefix
	end := PrefixEnd(p)
	it.lo, it.hi = p, end
	// outside: the seek key lies before the prefix (forward) or past it
	// (reverse). Badger then lands on the nearest key in the direction,
	// wherever it is, and is not valid unless that key has the prefix:
	// so the first page here starts from the key itself, and a first row
	// without the prefix ends the iteration.
	outside := false
	if !it.opts.Reverse {
		if key != nil && bytes.Compare(key, p) > 0 {
			it.lo = key
		} else if key != nil && bytes.Compare(key, p) < 0 {
			it.lo, outside = key, true
		}
	} else if key != nil {
		// At or before key: below key's successor.
		succ := append(bytes.Clone(key), 0)
		if end == nil || bytes.Compare(succ, end) < 0 {
			it.hi = succ
		} else if bytes.Compare(key, end) >= 0 {
			it.hi, outside = succ, true
		}
	}
	it.rows, it.pos, it.more = nil, 0, true
	it.fetch()
	if outside && len(it.rows) > 0 && !bytes.HasPrefix(it.rows[0].k, p) {
		it.rows, it.more = it.rows[:0], false
	}
}

func (it *pgIter) fetch() {
	it.rows, it.pos = it.rows[:0], 0
	if !it.more || it.err != nil {
		return
	}
	if it.hi != nil && bytes.Compare(it.lo, it.hi) >= 0 {
		it.more = false
		return
	}
	q := it.t.s.q
	var sql string
	switch {
	case !it.opts.Reverse && !it.opts.KeysOnly:
		sql = pick(it.hi, q.fwd, q.fwdOpen)
	case !it.opts.Reverse:
		sql = pick(it.hi, q.fwdKeys, q.fwdOpenKeys)
	case !it.opts.KeysOnly:
		sql = pick(it.hi, q.rev, q.revOpen)
	default:
		sql = pick(it.hi, q.revKeys, q.revOpenKeys)
	}
	limit := it.page
	it.pageLo = append(it.pageLo[:0], it.lo...)
	br, _, err := it.t.send(func(b *pgx.Batch) { b.Queue(sql, it.lo, it.hi, time.Now().Unix(), limit) })
	if err != nil {
		it.err = err
		return
	}
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		it.err = pgError(err)
		it.t.err = it.err
		return
	}
	var exp, size int64
	dst := []any{nil, nil, &exp}
	if it.opts.KeysOnly {
		dst = append(dst, &size)
	}
	for rows.Next() {
		var r pgRow
		raw := rows.RawValues()
		r.k = bytes.Clone(raw[0])
		if raw[1] == nil {
			r.null = true
		} else if r.v, err = it.t.open(r.k, bytes.Clone(raw[1])); err != nil {
			it.err = err
			rows.Close()
			return
		}
		if err := rows.Scan(dst...); err != nil {
			it.err = pgError(err)
			it.t.err = it.err
			rows.Close()
			return
		}
		r.exp, r.size = uint64(exp), it.t.s.plainSize(size)
		it.rows = append(it.rows, r)
	}
	if err := rows.Err(); err != nil {
		it.err = pgError(err)
		it.t.err = it.err
		return
	}
	it.more = len(it.rows) == limit
	if it.page < maxPGPage {
		it.page = min(it.page*4, maxPGPage)
	}
	if n := len(it.rows); n > 0 {
		last := it.rows[n-1].k
		if it.opts.Reverse {
			it.hi = last
		} else {
			it.lo = append(bytes.Clone(last), 0)
		}
	}
}

// covers positions a forward iterator of a read-only transaction at key
// without a round trip when the rows it holds are every row from key to
// their last (or to the end of the range): the transaction sees one
// snapshot and writes nothing, so the rows are still what a new page would
// read. The graph walk seeks once per entity it expands, and entities
// often fall in the page an earlier seek read.
func (it *pgIter) covers(key []byte) bool {
	if it.t.update || it.opts.Reverse || it.err != nil || len(it.rows) == 0 || it.pageLo == nil {
		return false
	}
	target := it.seekTarget(key)
	if bytes.Compare(target, it.pageLo) < 0 {
		return false
	}
	if last := it.rows[len(it.rows)-1].k; bytes.Compare(target, last) > 0 {
		if it.more {
			return false // rows after the page's last are unread
		}
		it.pos = len(it.rows) // the page ran to the end of the range
		return true
	}
	it.pos, _ = slices.BinarySearchFunc(it.rows, target, func(r pgRow, t []byte) int { return bytes.Compare(r.k, t) })
	return true
}

func pick(hi []byte, bounded, open string) string {
	if hi != nil {
		return bounded
	}
	return open
}

func (it *pgIter) valid() bool { return it.err == nil && it.pos < len(it.rows) }

func (it *pgIter) next() {
	it.pos++
	if it.pos >= len(it.rows) && it.more {
		it.fetch()
	}
}

func (it *pgIter) key() []byte { return it.rows[it.pos].k }

func (it *pgIter) value(dst []byte) ([]byte, error) {
	if it.err != nil {
		return dst, it.err
	}
	r := it.rows[it.pos]
	if r.null {
		v, err := it.t.get(r.k, dst)
		if errors.Is(err, ErrNotFound) {
			return dst, fmt.Errorf("kv: key %q was deleted during iteration", r.k)
		}
		return v, err
	}
	return append(dst, r.v...), nil
}

func (it *pgIter) valueSize() int64 {
	r := it.rows[it.pos]
	if r.null {
		return r.size
	}
	return int64(len(r.v))
}

func (it *pgIter) expiresAt() time.Time { return expiryTime(it.rows[it.pos].exp) }

func (it *pgIter) close() { it.rows, it.seeks = nil, nil }
