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

// Retention says how long the store keeps each kind of data, counted from
// when it was stored; a zero age keeps that kind until it is forgotten or
// deleted. The background sweep (every Options.SweepInterval) erases what
// is older, with everything derived from it, and the compaction that
// follows takes its bytes out of the files.
//
// Episodes are what Recall draws on from a user's past: the messages of
// the user's earlier sessions, which Recall searches as episodes (each
// appended message is indexed, as an episode record, in the user's
// partition), and the memories of [KindEpisode]. Retention.Episodes ages
// both, apart from the conversations themselves: with Messages at a year
// and Episodes at a month, a session's window still shows last month's
// messages, but Recall stops bringing them into other sessions after a
// month. A message that expires under Messages takes its episode with it.
type Retention struct {
	// Messages is how long a message is kept after it was appended. An
	// expired message goes with its episode, its cached embedding and its
	// session's rolling summary (which condensed it); a session left with
	// no message goes whole.
	Messages time.Duration
	// Episodes is how long Recall finds a message from another session
	// (its episode record), and how long a memory of KindEpisode is kept
	// after it was created.
	Episodes time.Duration
	// Memories is how long a memory of any other kind is kept after it was
	// created; a superseded version is erased once it is that old, and a
	// memory whose current version is that old goes with all its versions.
	Memories time.Duration
}

func (r Retention) validate() []error {
	var errs []error
	for _, f := range []struct {
		name string
		d    time.Duration
	}{{"Messages", r.Messages}, {"Episodes", r.Episodes}, {"Memories", r.Memories}} {
		if f.d < 0 {
			errs = append(errs, fmt.Errorf("Retention.%s %v is negative", f.name, f.d))
		}
	}
	return errs
}

func (r Retention) enabled() bool { return r.Messages > 0 || r.Episodes > 0 || r.Memories > 0 }

// retentionBatch bounds the expired items one retention pass erases: the
// rest waits for the next sweep, so one pass never holds the store long.
const retentionBatch = 4096

// expiredItems is what one retention pass found.
type expiredItems struct {
	sessions map[string]*expiredSession // by session prefix
	episodes []expiredRecord            // messages' episode records
	memories []expiredRecord            // current versions of memories
	archived []expiredRecord            // superseded versions
	n        int
}

type expiredSession struct {
	scope Scope
	ids   []ulid.ULID // expired messages, oldest first
}

type expiredRecord struct {
	scope Scope // the partition's: Tenant, and User unless shared
	id    ulid.ULID
}

func (e *expiredItems) full() bool { return e.n >= retentionBatch }

// retain erases the data older than the store's Retention allows and
// returns how many items it erased. One call erases at most
// retentionBatch items; the sweep calls it again on its next tick.
func (s *Store) retain(ctx context.Context, now time.Time) (int, error) {
	r := s.opts.Retention
	if !r.enabled() {
		return 0, nil
	}
	found, err := s.findExpired(ctx, now)
	if err != nil || found.n == 0 {
		return 0, err
	}
	erased := 0
	defer func() {
		// Also after a failure part way: what was erased must still
		// leave the files.
		if erased > 0 {
			s.db.ScheduleCompact()
		}
	}()
	for _, es := range found.sessions {
		n, err := s.expireMessages(ctx, es, now.Add(-r.Messages))
		erased += n
		if err != nil {
			return erased, err
		}
	}
	var texts []string
	for _, e := range found.episodes {
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			rec, err := tx.GetRecord(e.scope, spaceMessages, e.id.String(), &engine.GetRecordOptions{SkipVector: true})
			if errors.Is(err, engine.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			texts = append(texts, rec.Text)
			return tx.DeleteRecord(e.scope, spaceMessages, e.id.String())
		})
		if err != nil {
			return erased, err
		}
		erased++
	}
	for _, m := range found.memories {
		if err := s.DeleteMemory(ctx, m.scope, m.id.String()); err != nil && !errors.Is(err, ErrNotFound) {
			return erased, err
		}
		erased++
	}
	for _, a := range found.archived {
		_, prefix, err := memoryScope(a.scope)
		if err != nil {
			return erased, err
		}
		key := partitionPrefix(prefix).archive(a.id)
		err = s.db.Update(ctx, func(tx *engine.Tx) error {
			b, err := tx.Get(key)
			if errors.Is(err, engine.ErrNotFound) {
				return nil
			}
			if err != nil {
				return err
			}
			var m Memory
			if json.Unmarshal(b, &m) == nil {
				texts = append(texts, m.Text)
			}
			return tx.Delete(key)
		})
		if err != nil {
			return erased, err
		}
		erased++
	}
	if err := s.forgetTexts(ctx, texts); err != nil {
		return erased, err
	}
	return erased, nil
}

// findExpired reads the keys of every tenant once and lists what the
// retention ages have expired, up to retentionBatch items. Messages and
// episodes are judged by their ids (ULIDs of the append time), memories by
// CreatedAt.
func (s *Store) findExpired(ctx context.Context, now time.Time) (*expiredItems, error) {
	r := s.opts.Retention
	cut := func(age time.Duration) time.Time {
		if age <= 0 {
			return time.Time{}
		}
		return now.Add(-age)
	}
	msgCut, epCut, memCut := cut(r.Messages), cut(r.Episodes), cut(r.Memories)
	older := func(id []byte, before time.Time) bool {
		return !before.IsZero() && len(id) == 16 && ulid.Time(ulid.ULID(id).Time()).Before(before)
	}
	found := &expiredItems{sessions: map[string]*expiredSession{}}
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		// Every key; ParseKey skips the store's own.
		it := tx.NewIterator(engine.IterOptions{KeysOnly: true})
		defer it.Close()
		var val []byte
		for it.Seek(nil); it.Valid() && !found.full(); it.Next() {
			if err := ctx.Err(); err != nil {
				return err
			}
			k, ok := engine.ParseKey(it.Key())
			if !ok || !s.owns(it.Key()) {
				continue // not a tenant's, or another process's partition
			}
			l, ns, rest := k.Level, k.Namespace, k.Suffix
			epID, isEpisode := spaceRecord(k, spaceMessages)
			memID, isMemory := spaceRecord(k, spaceMemories)
			switch {
			case l == engine.LevelSession && ns == engine.NSMessage:
				if !older(rest, msgCut) {
					continue
				}
				es := found.sessions[string(k.Prefix)]
				if es == nil {
					es = &expiredSession{scope: k.Scope()}
					found.sessions[string(k.Prefix)] = es
				}
				es.ids = append(es.ids, ulid.ULID(rest))
				found.n++
			case isEpisode:
				if older(epID[:], epCut) {
					found.episodes = append(found.episodes, expiredRecord{k.Scope(), epID})
					found.n++
				}
			case isMemory:
				if epCut.IsZero() && memCut.IsZero() {
					continue
				}
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				rec, err := engine.DecodeRecord(val)
				if err != nil {
					continue
				}
				m, err := decodeMemory(rec)
				if err != nil {
					continue
				}
				if memoryExpired(&m, epCut, memCut) {
					found.memories = append(found.memories, expiredRecord{k.Scope(), memID})
					found.n++
				}
			case l != engine.LevelSession && ns == engine.NSMemoryArchive && len(rest) == idLen:
				if epCut.IsZero() && memCut.IsZero() {
					continue
				}
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				var m Memory
				if json.Unmarshal(val, &m) != nil {
					continue
				}
				if memoryExpired(&m, epCut, memCut) {
					found.archived = append(found.archived, expiredRecord{k.Scope(), ulid.ULID(rest)})
					found.n++
				}
			}
		}
		return nil
	})
	return found, err
}

// memoryExpired says whether m is older than its kind's retention allows.
func memoryExpired(m *Memory, epCut, memCut time.Time) bool {
	cut := memCut
	if m.Kind == KindEpisode {
		cut = epCut
	}
	return !cut.IsZero() && m.CreatedAt.Before(cut)
}

// expireMessages erases a session's expired messages: the whole session
// when its newest message is older than cut, otherwise each message with
// its episode and tool-call index entries, and the session's rolling
// summary, which condensed them.
func (s *Store) expireMessages(ctx context.Context, es *expiredSession, cut time.Time) (int, error) {
	prefix := es.scope.Prefix(engine.LevelSession)
	mu := s.sessionLock(prefix)
	mu.Lock()
	defer mu.Unlock()
	var last ulid.ULID
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		b, err := tx.Get(sessionPrefix(prefix).info())
		if errors.Is(err, engine.ErrNotFound) {
			return nil
		}
		if err != nil {
			return err
		}
		si, err := decodeSessionInfo(b)
		if err != nil {
			return err
		}
		copy(last[:], si.Last)
		return nil
	})
	if err != nil {
		return 0, err
	}
	if ulid.Time(last.Time()).Before(cut) {
		// Every message of the session is expired: forget it whole.
		return len(es.ids), s.forgetLocked(ctx, es.scope, engine.LevelSession, prefix)
	}
	user := Scope{Tenant: es.scope.Tenant, User: es.scope.User}
	var texts []string
	for start := 0; start < len(es.ids); start += 256 {
		batch := es.ids[start:min(start+256, len(es.ids))]
		var batchTexts []string
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			batchTexts = batchTexts[:0]
			for _, id := range batch {
				key := sessionPrefix(prefix).message(id)
				b, err := tx.Get(key)
				if errors.Is(err, engine.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				var m Message
				if _, err := decodeRecord(b, &m); err == nil {
					batchTexts = append(batchTexts, m.Content)
					if t, ok := episodeText(&m); ok {
						batchTexts = append(batchTexts, t)
					}
					for _, c := range m.ToolCalls {
						if err := tx.Delete(sessionPrefix(prefix).toolCall(c.ID)); err != nil {
							return err
						}
					}
				}
				for _, k := range [][]byte{key, sessionPrefix(prefix).systemMessage(id)} {
					if err := tx.Delete(k); err != nil {
						return err
					}
				}
				if err := tx.DeleteRecord(user, spaceMessages, id.String()); err != nil {
					return err
				}
			}
			return tx.Delete(sessionPrefix(prefix).summary())
		})
		if err != nil {
			return start, err
		}
		texts = append(texts, batchTexts...)
	}
	return len(es.ids), s.forgetTexts(ctx, texts)
}
