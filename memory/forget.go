package memory

import (
	"context"
	"encoding/json"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/engine"
	"github.com/oklog/ulid/v2"
)

// Forget erases a scope: a whole session (Tenant, User and Session set), a
// user with all their sessions (Tenant and User), or a tenant (Tenant
// alone). Everything stored under the scope goes: messages and their
// episodes in the vector and text indexes, session records and rolling
// summaries, and the embeddings cached for that text (under every
// provider and model); for a user or tenant also memories with all their
// versions, and the knowledge graph. Forgetting a session leaves the
// user's memories and facts, which belong to the user. Agent is ignored.
//
// Forget deletes in batches; if it fails part way, what was deleted stays
// deleted and calling it again finishes. The bytes leave the files at the
// background compaction Forget schedules, within Options.SweepInterval
// (one minute by default), or at once with [Store.Compact]: the
// memtables are flushed, the tables compacted to one level and the value
// log collected, so no file of the store holds them afterwards.
func (s *Store) Forget(ctx context.Context, scope Scope) error {
	scope.Agent = ""
	level := scope.Level()
	if err := scope.Validate(level); err != nil {
		return err
	}
	prefix := scope.Prefix(level)
	if level == engine.LevelSession {
		mu := s.sessionLock(prefix)
		mu.Lock()
		defer mu.Unlock()
	}
	return s.forgetLocked(ctx, scope, level, prefix)
}

// forgetLocked is Forget of a validated scope at level, with prefix its
// key prefix; the caller holds the session's lock when level is
// LevelSession.
func (s *Store) forgetLocked(ctx context.Context, scope Scope, level engine.Level, prefix []byte) error {
	// First the embeddings cached for the scope's text, while the messages
	// that name them still exist: a retry after a failure finds them again.
	if err := s.forgetCachedEmbeddings(ctx, prefix); err != nil {
		return err
	}
	if level == engine.LevelSession {
		// What extraction drew from the session's messages lives in the
		// user's partition.
		if err := s.forgetExtracted(ctx, scope, prefix); err != nil {
			return err
		}
	} else {
		// The queue first, so no extraction of the scope commits after it.
		for _, ns := range queues {
			if _, err := s.db.ErasePrefix(ctx, queuePrefix(ns, prefix), nil); err != nil {
				return err
			}
		}
	}
	if level == engine.LevelSession {
		// The session's messages are episodes in the user's partition.
		if err := s.forgetEpisodes(ctx, scope); err != nil {
			return err
		}
	}
	_, err := s.db.ErasePrefix(ctx, prefix, nil)
	if err == nil {
		// A second pass for a rolling summary that a concurrent Recall
		// committed while the last batch of the first was open (that batch
		// neither saw nor conflicted with it). Any later summary write reads
		// the newest message it covers, now gone, and writes nothing.
		_, err = s.db.ErasePrefix(ctx, prefix, nil)
	}
	if level != engine.LevelSession {
		s.nameCache.invalidatePrefix(prefix)
		// No text of an erased graph stays in memory.
		s.graph.DropSearchIndexes(prefix)
		if err == nil {
			_, err = s.db.ErasePrefix(ctx, expiringKey(prefix), nil)
		}
		s.sweep.forget(prefix)
	}
	return err
}

// forgetEpisodes deletes the episodes of a session's messages from its
// user's partition, in batches.
func (s *Store) forgetEpisodes(ctx context.Context, scope Scope) error {
	prefix := scope.Prefix(engine.LevelSession)
	user := Scope{Tenant: scope.Tenant, User: scope.User}
	keys := sessionPrefix(prefix)
	msgPrefix := keys.messages()
	var after *ulid.ULID
	for {
		var last *ulid.ULID // set once the batch commits: Update may retry fn
		n := 0
		err := s.db.Update(ctx, func(tx *engine.Tx) error {
			n, last = 0, nil
			it := tx.NewIterator(engine.IterOptions{Prefix: msgPrefix, KeysOnly: true})
			var ids []ulid.ULID
			start := msgPrefix
			if after != nil {
				start = keys.message(*after)
			}
			for it.Seek(start); it.Valid() && len(ids) < 256; it.Next() {
				id := keyID(msgPrefix, it.Key())
				if after != nil && id == *after {
					continue
				}
				ids = append(ids, id)
			}
			it.Close()
			for _, id := range ids {
				if err := tx.DeleteRecord(user, spaceMessages, id.String()); err != nil {
					return err
				}
			}
			n = len(ids)
			if n > 0 {
				last = &ids[n-1]
			}
			return nil
		})
		if err != nil || n < 256 {
			return err
		}
		after = last
	}
}

// forgetCachedEmbeddings erases the cached vectors of every message under
// prefix, whichever provider made them.
func (s *Store) forgetCachedEmbeddings(ctx context.Context, prefix []byte) error {
	seen := map[[32]byte]bool{}
	var hashes [][32]byte
	err := s.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: prefix})
		defer it.Close()
		var val []byte
		addHash := func(h [32]byte) {
			if !seen[h] {
				seen[h] = true
				hashes = append(hashes, h)
			}
		}
		add := func(text string) { addHash(embed.ContentHash(text)) }
		for it.Seek(nil); it.Valid(); it.Next() {
			k, ok := engine.ParseKey(it.Key())
			if !ok {
				continue
			}
			l, ns := k.Level, k.Namespace
			switch {
			case l == engine.LevelSession && ns == engine.NSMessage:
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				var m Message
				if _, err := decodeRecord(val, &m); err != nil {
					continue // erased below all the same
				}
				add(m.Content)
				if t, ok := episodeText(&m); ok {
					add(t)
				}
			case ns == engine.NSSpace && engine.IsRecordKey(it.Key()):
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				if r, err := engine.DecodeRecord(val); err == nil {
					add(r.Text)
				}
			case ns == engine.NSExpiry:
				// An expired record not yet swept names its text here.
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				if _, h, ok := parseExpiryValue(val); ok {
					addHash(h)
				}
			case ns == engine.NSMemoryArchive:
				var err error
				if val, err = it.Value(val[:0]); err != nil {
					return err
				}
				var m Memory
				if json.Unmarshal(val, &m) == nil {
					add(m.Text)
				}
			}
		}
		return nil
	})
	if err != nil {
		return err
	}
	return s.db.EraseCachedEmbeddings(ctx, hashes...)
}

// forgetTexts erases the cached embeddings of texts that left the store.
func (s *Store) forgetTexts(ctx context.Context, texts []string) error {
	if s.cache == nil || len(texts) == 0 {
		return nil
	}
	hashes := make([][32]byte, len(texts))
	for i, t := range texts {
		hashes[i] = embed.ContentHash(t)
	}
	return s.db.EraseCachedEmbeddings(ctx, hashes...)
}

// dropEmbedded erases the cached embeddings of texts that were embedded
// for a write that did not store them (it failed, or merged them into
// another memory). Erasing an entry another stored text still uses costs
// only a new embedding later, so this errs on the side of erasing; a
// failure is logged, as the caller's outcome stands either way.
func (s *Store) dropEmbedded(ctx context.Context, texts ...string) {
	err := s.forgetTexts(context.WithoutCancel(ctx), texts)
	if err != nil && s.opts.Logger != nil {
		s.opts.Logger.Warn("memory: erase cached embeddings", "err", err)
	}
}
