package engine

import "github.com/oklog/ulid/v2"

// RecordRef names one record for [Tx.PrefetchRecords]: the scope and
// space it was put in and its id.
type RecordRef struct {
	Scope Scope
	Space string
	ID    string
}

// PrefetchRecords reads the records refs name ahead, so that
// [Tx.GetRecord] and [Tx.GetRecordFields] on them cost no request of their
// own: on PostgreSQL, one query for all of them (see [kv.Txn.Prefetch]);
// on Badger, nothing. A ref with a bad scope, space or id is skipped: the
// read that follows reports it. Callers that must build refs first can ask
// Tx.KV().Prefetches() whether it is worth it.
func (tx *Tx) PrefetchRecords(refs []RecordRef) error {
	if !tx.t.Prefetches() || len(refs) == 0 {
		return nil
	}
	keys := make([][]byte, 0, len(refs))
	for _, r := range refs {
		prefix, err := recordPrefix(r.Scope, r.Space)
		if err != nil {
			continue
		}
		id, err := ulid.ParseStrict(r.ID)
		if err != nil {
			continue
		}
		keys = append(keys, Key(prefix, NSRecord, id[:]))
	}
	return convert(tx.t.Prefetch(keys))
}

// prefetchHits reads the records of a search's hits ahead (see
// [Tx.PrefetchRecords]).
func (tx *Tx) prefetchHits(prefix []byte, ids []ulid.ULID) error {
	if !tx.t.Prefetches() || len(ids) < 2 {
		return nil
	}
	keys := make([][]byte, len(ids))
	for i, id := range ids {
		keys[i] = Key(prefix, NSRecord, id[:])
	}
	return convert(tx.t.Prefetch(keys))
}
