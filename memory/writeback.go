package memory

import (
	"context"
	"errors"
	"time"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// Write-back of token counts.
//
// A memory or episode stored before counts were stored (or by a binary
// that stored none, or counted in another encoding) is counted by Recall
// each time it is recalled, through the process's count cache. (Facts
// are always counted at recall: see hydrator.factTokens.)
// Recall reads in a read transaction: a write there would take the
// writer's turn, and under Sync durability an fsync, on the read path,
// and would fail on a read-only store. So Recall only queues what it
// counted (a channel send that drops it when the queue is full), and one
// goroutine writes the queued counts in one transaction per batch, each
// counted again from what is stored in that transaction: the record's
// metadata gets the count (engine.Tx.SetRecordMetadata, which keeps its
// expiry and indexes). What was deleted in the meantime gets nothing, and
// a concurrent delete conflicts rather than leave a count behind. A
// read-only store queues nothing.

// writeBackQueue bounds the items waiting for their counts: past it,
// Recall drops them (a later Recall queues them again).
const writeBackQueue = 1024

// writeBackBatch bounds the items one transaction writes.
const writeBackBatch = 256

// uncounted is a record Recall counted for want of a stored count.
type uncounted struct {
	owner Scope // the record's partition and space
	space string
	id    string
}

// writeBack is the queue and its writer. Safe for concurrent use; the zero
// value (a read-only store's) queues nothing.
type writeBack struct {
	ch    chan uncounted
	flush chan chan struct{}
	// ctx is the writer's; close cancels it, so a write in flight (a slow
	// PostgreSQL) does not hold Close up.
	ctx    context.Context
	cancel context.CancelFunc
	done   chan struct{}
}

// startWriteBack starts the writer of s's write-back queue.
func (s *Store) startWriteBack() {
	w := &s.writeBack
	w.ch = make(chan uncounted, writeBackQueue)
	w.flush = make(chan chan struct{})
	w.ctx, w.cancel = context.WithCancel(backgroundContext(context.Background()))
	w.done = make(chan struct{})
	go s.runWriteBack()
}

// queueRecord queues record id (a memory or an episode) of owner's
// partition and space for its count to be written back, unless the queue
// is full or the store writes none.
func (w *writeBack) queueRecord(owner Scope, space, id string) {
	w.queue(uncounted{owner: owner, space: space, id: id})
}

func (w *writeBack) queue(u uncounted) {
	if w.ch == nil {
		return
	}
	select {
	case w.ch <- u:
	default:
	}
}

// flushWait returns once what was queued before the call is written (or
// failed): a test seam.
func (w *writeBack) flushWait(ctx context.Context) error {
	if w.ch == nil {
		return nil
	}
	reply := make(chan struct{})
	select {
	case w.flush <- reply:
	case <-w.done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
	select {
	case <-reply:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// close stops the writer, dropping what is queued, and waits for it; a
// second call waits too.
func (w *writeBack) close() {
	if w.ch == nil {
		return
	}
	w.cancel()
	<-w.done
}

// runWriteBack is the writer: it takes what is queued, a batch at a time.
func (s *Store) runWriteBack() {
	w := &s.writeBack
	defer close(w.done)
	var batch []uncounted
	for {
		select {
		case <-w.ctx.Done():
			return
		case u := <-w.ch:
			start := time.Now()
			batch = s.writeCounts(append(batch[:0], u))
			s.pace.pace(w.ctx, WorkWriteBack, time.Since(start), nil)
		case reply := <-w.flush:
			for more := true; more; {
				select {
				case u := <-w.ch:
					batch = append(batch, u)
					if len(batch) == writeBackBatch {
						batch = s.writeCounts(batch)
					}
				default:
					more = false
				}
			}
			batch = s.writeCounts(batch)
			close(reply)
		}
	}
}

// writeCounts writes the counts of batch, and of what else is queued up
// to writeBackBatch, in one transaction, and returns batch emptied. A
// failure is logged: the records stay counted at recall.
func (s *Store) writeCounts(batch []uncounted) []uncounted {
fill:
	for len(batch) < writeBackBatch {
		select {
		case u := <-s.writeBack.ch:
			batch = append(batch, u)
		default:
			break fill
		}
	}
	if len(batch) == 0 {
		return batch
	}
	enc, err := s.encoder()
	if err == nil {
		err = s.db.Update(s.writeBack.ctx, func(tx *engine.Tx) error {
			seen := map[uncounted]bool{}
			for _, u := range batch {
				if seen[u] {
					continue
				}
				seen[u] = true
				if err := s.writeCount(tx, enc, u); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err != nil && s.writeBack.ctx.Err() == nil { // not Close's doing
		s.warn("memory: write back token counts", "items", len(batch), "err", err)
	}
	return batch[:0]
}

// writeCount writes the count of u in tx, counted from what tx reads.
func (s *Store) writeCount(tx *engine.Tx, enc *bpe.Encoder, u uncounted) error {
	rec, err := tx.GetRecord(u.owner, u.space, u.id, &engine.GetRecordOptions{SkipVector: true})
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	} else if err != nil {
		return err
	}
	var n int
	if u.space == spaceMessages {
		n = episodeTextTokens(enc, rec.Metadata["session"], rec.Text)
	} else {
		n = memoryTextTokens(enc, rec.Text)
	}
	v := formatTextTokens(s.opts.Encoding, n, rec.Text)
	if rec.Metadata[memoryTokensKey] == v {
		return nil
	}
	err = tx.SetRecordMetadata(u.owner, u.space, u.id, memoryTokensKey, v)
	if errors.Is(err, engine.ErrNotFound) {
		return nil
	}
	return err
}
