package kv

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"github.com/jackc/pgx/v5"
)

// prefetcher is a txnImpl that can read many keys ahead in one request.
// Badger is not one: its reads are local and cost no round trip.
type prefetcher interface {
	prefetch(keys [][]byte) error
}

// Prefetch reads the values of keys ahead, so that the Get, GetFunc, Has
// and Expiry calls on them that follow cost no request of their own. On
// PostgreSQL it sends one query for every key the transaction has neither
// read nor written (with the writes not yet sent) and keeps the values
// for the rest of the transaction, a missing key as missing; on Badger,
// whose reads are local, it does nothing. Empty keys are skipped. It is
// for a reader about to read many keys it knows (package engine's search
// hits, package memory's Recall): a Recall read 34 records one round trip
// at a time before it (see bench/results/postgres.md).
func (tx *Txn) Prefetch(keys [][]byte) error {
	p, ok := tx.impl.(prefetcher)
	if !ok || len(keys) == 0 {
		return nil
	}
	return p.prefetch(keys)
}

// Prefetches reports whether [Txn.Prefetch] does anything: a caller can
// skip collecting the keys when it does not.
func (tx *Txn) Prefetches() bool {
	_, ok := tx.impl.(prefetcher)
	return ok
}

// prefetch fills the read cache with keys in one round trip.
func (t *pgTxn) prefetch(keys [][]byte) error {
	var want [][]byte
	for _, k := range keys {
		if len(k) == 0 {
			continue
		}
		if _, ok := t.lookup(k); ok {
			continue
		}
		want = append(want, k)
	}
	if len(want) == 0 {
		return t.err
	}
	br, _, err := t.send(func(b *pgx.Batch) { b.Queue(t.s.q.getMany, want, time.Now().Unix()) })
	if err != nil {
		return err
	}
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		t.err = pgError(err)
		return t.err
	}
	found := make(map[string]pgRead, len(want))
	for rows.Next() {
		raw := rows.RawValues()
		k := bytes.Clone(raw[0])
		var exp int64
		if err := rows.Scan(nil, nil, &exp); err != nil {
			rows.Close()
			t.err = pgError(err)
			return t.err
		}
		v, err := t.open(k, bytes.Clone(raw[1]))
		if err != nil {
			rows.Close()
			return err
		}
		found[string(k)] = pgRead{val: v, exp: uint64(exp), found: true}
	}
	if err := rows.Err(); err != nil {
		t.err = pgError(err)
		return t.err
	}
	for _, k := range want {
		t.reads[string(k)] = found[string(k)] // the zero pgRead: missing
	}
	return nil
}

// seekPrefetcher is an iterImpl that can read ahead the rows of many seeks
// in one request.
type seekPrefetcher interface {
	prefetchSeeks(keys [][]byte) error
}

// PrefetchSeeks reads ahead the first rows at or after each of keys, so
// that a later [Iterator.Seek] to one of them costs no request of its own:
// on PostgreSQL, one query for all of them in a read-only transaction
// ([DB.View]); otherwise nothing. Each read-ahead serves one Seek. It is
// for a reader that knows where it will seek next, as the graph walk does
// for the entities of a hop.
func (it *Iterator) PrefetchSeeks(keys [][]byte) error {
	if p, ok := it.impl.(seekPrefetcher); ok && !it.closed && len(keys) > 0 {
		return p.prefetchSeeks(keys)
	}
	return nil
}

// seekPrefetchPage is how many rows PrefetchSeeks reads per key: a
// graph entity has a few facts; one with more is read on in pages.
const seekPrefetchPage = 16

// pgSeekPage is a page PrefetchSeeks read for a seek.
type pgSeekPage struct {
	rows []pgRow
	more bool
}

// seekTarget is where a forward seek to key starts: key, or the prefix
// when key sorts before it.
func (it *pgIter) seekTarget(key []byte) []byte {
	if key == nil || bytes.Compare(key, it.opts.Prefix) < 0 {
		return it.opts.Prefix
	}
	return key
}

func (it *pgIter) prefetchSeeks(keys [][]byte) error {
	t := it.t
	if t.update || it.opts.Reverse || it.err != nil {
		return nil
	}
	end := PrefixEnd(it.opts.Prefix)
	var los [][]byte
	for _, k := range keys {
		lo := it.seekTarget(k)
		if _, ok := it.seeks[string(lo)]; ok || (end != nil && bytes.Compare(lo, end) >= 0) {
			continue
		}
		los = append(los, bytes.Clone(lo))
	}
	if len(los) == 0 {
		return nil
	}
	cols := "k, v, expires_at, 0"
	if it.opts.KeysOnly {
		cols = keysOnlyCols
	}
	sql := t.s.q.sql(`SELECT p.i, r.k, r.v, r.expires_at, r.size FROM unnest($1::bytea[]) WITH ORDINALITY AS p(lo, i)
		CROSS JOIN LATERAL (SELECT ` + cols + ` FROM {s}.kv WHERE k >= p.lo AND ($2::bytea IS NULL OR k < $2)
		AND (expires_at = 0 OR expires_at > $3) ORDER BY k LIMIT $4) AS r(k, v, expires_at, size)`)
	br, _, err := t.send(func(b *pgx.Batch) { b.Queue(sql, los, end, time.Now().Unix(), seekPrefetchPage) })
	if err != nil {
		return err
	}
	defer br.Close()
	rows, err := br.Query()
	if err != nil {
		t.err = pgError(err)
		return t.err
	}
	pages := make([]pgSeekPage, len(los))
	for rows.Next() {
		var i, exp, size int64
		raw := rows.RawValues()
		if err := rows.Scan(&i, nil, nil, &exp, &size); err != nil || i < 1 || int(i) > len(los) {
			rows.Close()
			if err == nil {
				err = fmt.Errorf("kv: postgres: seek %d of %d", i, len(los))
			}
			t.err = pgError(err)
			return t.err
		}
		r := pgRow{k: bytes.Clone(raw[1]), exp: uint64(exp), size: t.s.plainSize(size)}
		if raw[2] == nil {
			r.null = true
		} else if r.v, err = t.open(r.k, bytes.Clone(raw[2])); err != nil {
			rows.Close()
			return err
		}
		pages[i-1].rows = append(pages[i-1].rows, r)
	}
	if err := rows.Err(); err != nil {
		t.err = pgError(err)
		return t.err
	}
	if it.seeks == nil {
		it.seeks = make(map[string]pgSeekPage, len(los))
	}
	for i, lo := range los {
		// Rows come grouped by seek and in key order (a nested loop over
		// the index); sorting them here saves the database a sort by
		// bytea that took half of the query's time, and costs nothing
		// when they are in order.
		if !slices.IsSortedFunc(pages[i].rows, comparePGRows) {
			slices.SortFunc(pages[i].rows, comparePGRows)
		}
		pages[i].more = len(pages[i].rows) == seekPrefetchPage
		it.seeks[string(lo)] = pages[i]
	}
	return nil
}

func comparePGRows(a, b pgRow) int { return bytes.Compare(a.k, b.k) }

// seekPrefetched positions the iterator at key from a page PrefetchSeeks
// read, as a seek's own fetch would have, and reports whether there was
// one.
func (it *pgIter) seekPrefetched(key []byte) bool {
	if len(it.seeks) == 0 {
		return false
	}
	target := it.seekTarget(key)
	pg, ok := it.seeks[string(target)]
	if !ok {
		return false
	}
	delete(it.seeks, string(target)) // fetch reuses the rows' array
	it.rows, it.pos, it.more = pg.rows, 0, pg.more
	it.pageLo = append(it.pageLo[:0], target...)
	it.hi = PrefixEnd(it.opts.Prefix)
	it.page = it.first
	if n := len(pg.rows); n > 0 {
		it.lo = append(bytes.Clone(pg.rows[n-1].k), 0)
	} else {
		it.more = false
	}
	return true
}
