package memory

import (
	"context"
	"slices"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// Batch collects writes that [Store.Write] commits in one transaction: all
// of them, or none. It is how a fact is stored together with the message
// it came from. The zero Batch is empty and ready to use; a Batch is not
// safe for concurrent use.
//
//	var b memory.Batch
//	b.Append(scope, memory.Message{Role: memory.RoleUser, Content: "Dana owns my renewal now."})
//	b.Relate(scope, memory.Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"})
//	res, err := store.Write(ctx, &b)
type Batch struct {
	ops []batchOp
}

type batchOp struct {
	scope Scope
	msgs  []Message // an append when set
	fact  Fact      // else a fact
}

// Append adds messages for the session of scope, as [Session.Append].
func (b *Batch) Append(scope Scope, msgs ...Message) {
	if len(msgs) > 0 {
		b.ops = append(b.ops, batchOp{scope: scope, msgs: msgs})
	}
}

// Relate adds facts for the graph of scope, as [Store.Relate]. A fact with
// an empty Source gets the id of the last message the batch appends before
// it to a session of the same user (or tenant, for the shared graph): the
// message it came from.
func (b *Batch) Relate(scope Scope, facts ...Fact) {
	for _, f := range facts {
		b.ops = append(b.ops, batchOp{scope: scope, fact: f})
	}
}

// Len returns the number of messages and facts in the batch.
func (b *Batch) Len() int {
	n := 0
	for _, op := range b.ops {
		if op.msgs != nil {
			n += len(op.msgs)
		} else {
			n++
		}
	}
	return n
}

// BatchResult says what [Store.Write] stored.
type BatchResult struct {
	// MessageIDs are the ids of the appended messages, in batch order.
	MessageIDs []string
	// Facts are the facts as stored (see [Store.Relate]), in batch order.
	Facts []Fact
}

// batchStep is one operation of a batch, prepared.
type batchStep struct {
	append *preparedAppend
	ids    []ulid.ULID // the appended messages' ids, once written
	root   []byte      // graph root, for a fact
	fact   Fact        // the fact, redacted
	user   string      // partition prefix, for sources
}

// Write commits the batch in one transaction: on any error (a bad message,
// a bad fact, a storage failure) nothing of it is written. Messages are
// checked as [Session.Append] checks them, facts as [Store.Relate] does.
func (s *Store) Write(ctx context.Context, b *Batch) (BatchResult, error) {
	steps := make([]batchStep, len(b.ops))
	var locks []int // indexes into s.sessionLocks
	for i, op := range b.ops {
		p, err := op.scope.PartitionPrefix()
		if err != nil {
			return BatchResult{}, opError(i, err)
		}
		steps[i].user = string(p)
		if op.msgs != nil {
			a, err := s.prepareAppend(ctx, op.scope, op.msgs)
			if err != nil {
				s.dropPrepared(ctx, steps[:i])
				return BatchResult{}, opError(i, err)
			}
			steps[i].append = a
			if l := sessionLockIndex(a.prefix, len(s.sessionLocks)); !slices.Contains(locks, l) {
				locks = append(locks, l)
			}
			continue
		}
		steps[i].root = partitionPrefix(p).graphRoot()
		steps[i].fact = op.fact
		if err := s.redactFact(ctx, op.scope, &steps[i].fact); err != nil {
			s.dropPrepared(ctx, steps[:i])
			return BatchResult{}, opError(i, err)
		}
	}
	// Lock sessions in one global order, so that two batches cannot wait
	// on each other.
	slices.Sort(locks)
	for _, l := range locks {
		s.sessionLocks[l].Lock()
		defer s.sessionLocks[l].Unlock()
	}
	var res BatchResult
	err := s.db.Update(ctx, func(tx *engine.Tx) error {
		res = BatchResult{}
		graphs := map[string]*graph.Tx{} // one graph Tx per root, as package graph asks
		lastMessage := map[string]ulid.ULID{}
		for i := range b.ops {
			st := &steps[i]
			if st.append != nil {
				ids, err := s.appendTx(tx, st.append)
				if err != nil {
					return opError(i, err)
				}
				st.ids = ids
				for _, id := range ids {
					res.MessageIDs = append(res.MessageIDs, id.String())
				}
				lastMessage[st.user] = ids[len(ids)-1]
				continue
			}
			g := graphs[string(st.root)]
			if g == nil {
				g = s.graph.Tx(tx.KV(), st.root)
				graphs[string(st.root)] = g
			}
			f := st.fact
			if id, ok := lastMessage[st.user]; ok && f.Source == "" {
				f.Source = id.String()
			}
			stored, err := g.Relate(f)
			if err != nil {
				return opError(i, err)
			}
			res.Facts = append(res.Facts, stored)
		}
		return nil
	})
	if err != nil {
		s.dropPrepared(ctx, steps)
		return BatchResult{}, err
	}
	for i := range steps {
		if steps[i].root != nil {
			s.nameCache.invalidate(steps[i].root)
		}
	}
	for i := range steps {
		if steps[i].append != nil {
			s.extractAppended(ctx, steps[i].append, steps[i].ids)
		}
	}
	return res, nil
}

// dropPrepared erases the cached embeddings of the prepared appends of a
// batch that was not written.
func (s *Store) dropPrepared(ctx context.Context, steps []batchStep) {
	var texts []string
	for i := range steps {
		if steps[i].append != nil {
			texts = append(texts, steps[i].append.episodeTexts()...)
		}
	}
	s.dropEmbedded(ctx, texts...)
}
