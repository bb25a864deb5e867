package kv

import (
	"bytes"
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
