package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// Moving data between stores: an export is read back with the ids and times
// it was written with, so that what cites an id (a memory's Source, a fact's
// Source, a tool result's call) still finds it, and exporting the imported
// store gives the same bytes. Session.Append and Store.Remember assign new
// ids and times, so imports have calls of their own.

// ImportStats says what [Store.ImportMessages] or [Store.ImportMemories]
// did with the records it was given.
type ImportStats struct {
	// Written counts the records stored.
	Written int `json:"written"`
	// Existing counts records whose id the store already holds: they are
	// left as stored, so importing the same records again changes nothing.
	Existing int `json:"existing"`
	// Expired counts memories whose ExpiresAt had passed: they are not
	// stored, as they could never be read.
	Expired int `json:"expired"`
	// Duplicates counts current memories of the same kind and text (up to
	// case and white space) as another current memory of the scope: the
	// other one is kept, as [Store.Remember] would.
	Duplicates int `json:"duplicates"`
}

// Add adds o's counts to st.
func (st *ImportStats) Add(o ImportStats) {
	st.Written += o.Written
	st.Existing += o.Existing
	st.Expired += o.Expired
	st.Duplicates += o.Duplicates
}

// ImportError is returned by [Store.ImportMessages] and
// [Store.ImportMemories] for a record the store refuses: Index is its place
// in the slice given, Err why (wrapping [ErrInvalidMessage],
// [ErrInvalidMemory], [ErrTooLarge], ...). Nothing of the call is written.
type ImportError struct {
	Index int
	Err   error
}

// Error names the record and the reason.
func (e *ImportError) Error() string { return fmt.Sprintf("record %d: %v", e.Index, e.Err) }

// Unwrap returns Err.
func (e *ImportError) Unwrap() error { return e.Err }

// ImportMessages writes messages into the session of scope (Tenant, User
// and Session) as exported ones are restored, in one transaction: all of
// them, or none. It differs from [Session.Append] in what it keeps:
//
//   - a message with an ID (a ULID) is stored under that id, and its Time
//     as given; a message without one gets a new id after the session's
//     last, as Append would, and a zero Time becomes now;
//   - a message whose id the session already holds is skipped (counted in
//     Existing), so importing the same messages again, say after a
//     failure part way through a file, changes nothing;
//   - messages are ordered by id, like every session: ids older than the
//     session's last message are placed by id among the stored ones.
//
// Every message is checked as Append checks it (role, content, tool calls,
// size), tool results must answer a call made earlier in the session or the
// call, and ids must not repeat within the call. Each message is indexed as
// an episode for Recall, as appended ones are. With Options.SessionTTL,
// imported messages expire SessionTTL after the import.
//
// A record the store refuses returns an [*ImportError] naming it; a call
// too large for one transaction returns [ErrTooLarge] (not an ImportError):
// split it.
func (s *Store) ImportMessages(ctx context.Context, scope Scope, msgs []Message) (ImportStats, error) {
	if err := scope.Validate(engine.LevelSession); err != nil {
		return ImportStats{}, err
	}
	if len(msgs) == 0 {
		return ImportStats{}, nil
	}
	a, ids, given, err := s.prepareImport(ctx, scope, msgs)
	if err != nil {
		return ImportStats{}, err
	}
	mu := s.sessionLock(a.prefix)
	mu.Lock()
	defer mu.Unlock()
	var st ImportStats
	err = s.db.Update(ctx, func(tx *engine.Tx) error {
		var err error
		st, err = s.importTx(tx, a, ids, given)
		return err
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

// prepareImport checks and encodes messages as prepareAppend does, and
// parses their ids; every error names the message.
func (s *Store) prepareImport(ctx context.Context, scope Scope, msgs []Message) (*preparedAppend, []ulid.ULID, []bool, error) {
	enc, err := s.encoder()
	if err != nil {
		return nil, nil, nil, err
	}
	now := time.Now()
	a := &preparedAppend{
		prefix:  scope.Prefix(engine.LevelSession),
		user:    Scope{Tenant: scope.Tenant, User: scope.User},
		session: scope.Session,
		msgs:    make([]Message, len(msgs)),
		values:  make([][]byte, len(msgs)),
		tokens:  make([]string, len(msgs)),
		now:     now,
	}
	// Personal data is replaced before anything is counted, embedded or
	// written (an export of a redacting store holds placeholders already).
	if msgs, err = s.redactMessages(ctx, a.prefix, msgs); err != nil {
		return nil, nil, nil, err
	}
	ids := make([]ulid.ULID, len(msgs))
	given := make([]bool, len(msgs))
	seen := map[ulid.ULID]int{}
	calls := batchCalls{}
	// Sizes first: nothing is tokenized for a batch that cannot be stored.
	for i := range msgs {
		if err := msgs[i].checkSize(s.opts.MaxMessageBytes); err != nil {
			return nil, nil, nil, &ImportError{Index: i, Err: err}
		}
	}
	for i := range msgs {
		m := msgs[i] // a copy: the caller's slice is not modified
		fail := func(err error) (*preparedAppend, []ulid.ULID, []bool, error) {
			return nil, nil, nil, &ImportError{Index: i, Err: err}
		}
		if err := m.validate(); err != nil {
			return fail(err)
		}
		if m.ID != "" {
			id, err := ulid.ParseStrict(m.ID)
			if err != nil {
				return fail(fmt.Errorf("%w: id %q is not a ULID", ErrInvalidMessage, m.ID))
			}
			if j, dup := seen[id]; dup {
				return fail(fmt.Errorf("%w: id %s repeats message %d", ErrInvalidMessage, m.ID, j))
			}
			seen[id], ids[i], given[i] = i, id, true
		}
		if id, j, repeated := calls.add(i, &m); repeated {
			return fail(fmt.Errorf("%w %q (also made by message %d)", ErrDuplicateToolCall, id, j))
		}
		if a.values[i], err = s.encodeCounted(enc, a, i, &m, now); err != nil {
			return fail(err)
		}
		a.msgs[i] = m
	}
	if a.vectors, err = s.embedEpisodes(ctx, a.msgs); err != nil {
		return nil, nil, nil, err
	}
	return a, ids, given, nil
}

// importTx writes a prepared import in tx. ids holds the parsed id of each
// message that has one (given); the others get new ids here. The caller
// holds the session's lock.
func (s *Store) importTx(tx *engine.Tx, a *preparedAppend, ids []ulid.ULID, given []bool) (ImportStats, error) {
	prefix, ttl := a.prefix, s.opts.SessionTTL
	infoKey := sessionPrefix(prefix).info()
	var si *sessionInfo
	switch b, err := tx.Get(infoKey); {
	case err == nil:
		if si, err = decodeSessionInfo(b); err != nil {
			return ImportStats{}, err
		}
	case !errors.Is(err, engine.ErrNotFound):
		return ImportStats{}, err
	}
	var last ulid.ULID
	if si != nil {
		copy(last[:], si.Last)
	}
	var st ImportStats
	var first, latest time.Time
	w := s.newMessageWriter(a)
	havePrev := false
	for i := range a.msgs {
		m := &a.msgs[i]
		fail := func(err error) (ImportStats, error) { return ImportStats{}, &ImportError{Index: i, Err: err} }
		if given[i] {
			switch _, err := tx.Get(sessionPrefix(prefix).message(ids[i])); {
			case err == nil:
				st.Existing++
				continue
			case !errors.Is(err, engine.ErrNotFound):
				return ImportStats{}, err
			}
		}
		ans, err := w.checkToolCalls(tx, m)
		if err != nil {
			if errors.Is(err, ErrInvalidMessage) {
				return fail(err)
			}
			return ImportStats{}, err
		}
		if !given[i] {
			ids[i] = s.nextMessageID(a.now, last)
		}
		id := ids[i]
		if !havePrev {
			// The episode's context is the message said before it.
			p, err := messageBefore(tx, prefix, id)
			if err != nil {
				return ImportStats{}, err
			}
			w.prev, havePrev = p, true
		}
		if err := w.putMessage(tx, i, id, ans); err != nil {
			return ImportStats{}, err
		}
		if id.Compare(last) > 0 {
			last = id
		}
		if first.IsZero() || m.Time.Before(first) {
			first = m.Time
		}
		if m.Time.After(latest) {
			latest = m.Time
		}
		st.Written++
	}
	if st.Written == 0 {
		return st, nil
	}
	// The session's first and last append are the times of its messages,
	// not of the import.
	if si == nil {
		si = &sessionInfo{Created: first.UnixNano()}
	} else if first.UnixNano() < si.Created {
		si.Created = first.UnixNano()
	}
	si.Updated = max(si.Updated, latest.UnixNano())
	si.Messages += st.Written
	si.Last = last[:]
	return st, tx.SetTTL(infoKey, encodeSessionInfo(si), ttl)
}

// messageBefore returns the episode text of the session's stored message
// just before id, or "".
func messageBefore(tx *engine.Tx, prefix []byte, id ulid.ULID) (string, error) {
	msgPrefix := sessionPrefix(prefix).messages()
	it := tx.NewIterator(engine.IterOptions{Prefix: msgPrefix, Reverse: true, Prefetch: 1})
	defer it.Close()
	before := engine.PrevID(id)
	it.Seek(sessionPrefix(prefix).message(before))
	if !it.Valid() {
		return "", nil
	}
	val, err := it.Value(nil)
	if err != nil {
		return "", err
	}
	var m Message
	if _, err := decodeRecord(val, &m); err != nil {
		return "", nil // the episode's context is a hint; a bad record is reported where it is read
	}
	t, _ := episodeText(&m)
	return t, nil
}

// ImportMemories writes memories into the scope's user (or, with no User,
// the tenant's shared memories) as exported ones are restored, in one
// transaction: all of them, or none. It differs from [Store.Remember] in
// what it keeps:
//
//   - a memory's ID (a ULID), CreatedAt, Agent, Supersedes and
//     SupersededBy are kept as given; a memory without an ID gets a new
//     one, and a zero CreatedAt becomes now;
//   - a memory with SupersededBy set is an earlier version: it is stored
//     as one, readable through [Store.Memory] and [Store.MemoryHistory]
//     but neither listed nor recalled;
//   - a memory whose id the scope already holds (current or earlier
//     version) is skipped (Existing), so importing again changes nothing;
//   - a current memory with the same kind and text (up to case and white
//     space) as another current memory is skipped (Duplicates), and
//     near-duplicates are not looked for: an import restores, it does not
//     merge;
//   - a memory whose ExpiresAt has passed is skipped (Expired).
//
// Every memory is checked as Remember checks it; a record the store
// refuses returns an [*ImportError] naming it; a call too large for one
// transaction returns [ErrTooLarge] (not an ImportError): split it.
// Current memories are embedded, before the transaction, in one call to
// the embedder.
func (s *Store) ImportMemories(ctx context.Context, scope Scope, mems []Memory) (ImportStats, error) {
	scope, prefix, err := memoryScope(scope)
	if err != nil {
		return ImportStats{}, err
	}
	now := time.Now()
	type item struct {
		m       Memory
		id      ulid.ULID
		expired bool
		vec     []float32
	}
	items := make([]item, len(mems))
	seen := map[ulid.ULID]int{}
	var texts []string
	var at []int
	for i := range mems {
		m := mems[i]
		fail := func(err error) (ImportStats, error) { return ImportStats{}, &ImportError{Index: i, Err: err} }
		if err := engine.ValidateTime(m.CreatedAt); err != nil {
			return fail(fmt.Errorf("%w: CreatedAt %w", ErrInvalidMemory, err))
		}
		if !m.ExpiresAt.IsZero() && !m.ExpiresAt.After(now.Add(time.Second)) {
			items[i].expired = true
			continue
		}
		id, created, agent, supersedes, supersededBy := m.ID, m.CreatedAt, m.Agent, m.Supersedes, m.SupersededBy
		if err := m.normalize(agent, now); err != nil {
			return fail(err)
		}
		if err := s.redactMemory(ctx, scope, &m); err != nil {
			return ImportStats{}, err
		}
		for _, ref := range []struct{ name, id string }{{"supersedes", supersedes}, {"superseded_by", supersededBy}} {
			if _, err := ulid.ParseStrict(ref.id); ref.id != "" && err != nil {
				return fail(fmt.Errorf("%w: %s %q is not a ULID", ErrInvalidMemory, ref.name, ref.id))
			}
		}
		if agent != "" {
			if err := engine.ValidateID(agent); err != nil {
				return fail(fmt.Errorf("%w: agent %w", ErrInvalidMemory, err))
			}
		}
		if id == "" {
			items[i].id = s.db.NewID(now)
		} else {
			u, err := ulid.ParseStrict(id)
			if err != nil {
				return fail(fmt.Errorf("%w: id %q is not a ULID", ErrInvalidMemory, id))
			}
			if j, dup := seen[u]; dup {
				return fail(fmt.Errorf("%w: id %s repeats memory %d", ErrInvalidMemory, id, j))
			}
			seen[u], items[i].id = i, u
		}
		m.ID = items[i].id.String()
		if !created.IsZero() {
			m.CreatedAt = created.UTC()
		}
		m.Supersedes, m.SupersededBy = supersedes, supersededBy
		items[i].m = m
		if supersededBy == "" {
			texts, at = append(texts, m.Text), append(at, i)
		}
	}
	if len(texts) > 0 {
		vecs, err := s.embed(ctx, texts)
		if err != nil {
			return ImportStats{}, err
		}
		for j, i := range at {
			items[i].vec = vecs[j]
		}
	}
	var st ImportStats
	err = s.db.Update(ctx, func(tx *engine.Tx) error {
		st = ImportStats{}
		for i := range items {
			it := &items[i]
			if it.expired {
				st.Expired++
				continue
			}
			m := &it.m
			archiveKey := partitionPrefix(prefix).archive(it.id)
			if ok, err := memoryExists(tx, scope, archiveKey, m.ID); err != nil {
				return err
			} else if ok {
				st.Existing++
				continue
			}
			if m.SupersededBy != "" {
				b, _ := json.Marshal(m) // strings, times and numbers always marshal
				var ttl time.Duration
				if !m.ExpiresAt.IsZero() {
					ttl = max(time.Until(m.ExpiresAt), time.Second)
				}
				if err := tx.SetTTL(archiveKey, b, ttl); err != nil {
					return err
				}
				st.Written++
				continue
			}
			switch b, err := tx.Get(partitionPrefix(prefix).memoryHash(m.Kind, m.Text)); {
			case err == nil:
				_, err := tx.GetRecord(scope, spaceMemories, string(b), &engine.GetRecordOptions{SkipVector: true})
				if err == nil {
					st.Duplicates++
					continue
				}
				if !errors.Is(err, engine.ErrNotFound) {
					return err
				}
				// A hash key outliving its memory: store anew.
			case !errors.Is(err, engine.ErrNotFound):
				return err
			}
			if err := s.putMemory(tx, scope, prefix, nil, m, it.vec); err != nil {
				if errors.Is(err, ErrInvalidMemory) {
					return &ImportError{Index: i, Err: err}
				}
				return err // storage: ErrTooLarge for a call too large for one transaction, ...
			}
			st.Written++
		}
		return nil
	})
	if err != nil {
		return ImportStats{}, err
	}
	return st, nil
}

// memoryExists reports whether the scope holds the memory id, current or
// as an earlier version (under archiveKey).
func memoryExists(tx *engine.Tx, scope Scope, archiveKey []byte, id string) (bool, error) {
	_, err := tx.GetRecord(scope, spaceMemories, id, &engine.GetRecordOptions{SkipVector: true})
	if err == nil {
		return true, nil
	}
	if !errors.Is(err, engine.ErrNotFound) {
		return false, err
	}
	if _, err = tx.Get(archiveKey); err == nil {
		return true, nil
	}
	if errors.Is(err, engine.ErrNotFound) {
		return false, nil
	}
	return false, err
}
