package memory

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// The one message-write path. Session.Append (prepareAppend, appendTx) and
// Store.ImportMessages (prepareImport, importTx) check, encode, embed and
// write messages with the helpers here; what differs between the two stays
// with each caller, in the open:
//
//   - ids: Append gives every message a new id (nextMessageID); an import
//     keeps a given id and time and gives new ids only to the others;
//   - a message whose id the session holds already: an import skips it,
//     Append cannot meet one;
//   - the episode context of the first message written: Append reads the
//     session's last message, an import the message stored just before
//     the first id it writes (messageBefore);
//   - the extraction queue: only Append queues a message for extraction;
//   - the session's info: Append stamps it with the time of the call, an
//     import with the times of the messages;
//   - errors: Append names the message ("append message 3: ..."), an
//     import returns an [*ImportError] for a message it refuses and the
//     store's errors as they are.
//
// Both write with Options.SessionTTL.

// batchCalls holds the tool calls made by the messages of a batch, by the
// index of the message that makes each: a call id made twice in a batch is
// refused before anything is embedded or written.
type batchCalls map[string]int

// add records the tool calls of m, message i of the batch. When an earlier
// message of the batch made one of them, it records nothing and returns
// that call's id and the earlier message's index. m has been validated: its
// own call ids do not repeat.
func (b batchCalls) add(i int, m *Message) (id string, earlier int, repeated bool) {
	for _, c := range m.ToolCalls {
		if j, ok := b[c.ID]; ok {
			return c.ID, j, true
		}
	}
	for _, c := range m.ToolCalls {
		b[c.ID] = i
	}
	return "", 0, false
}

// encodeMessage encodes m, a copy the caller may change, as a session
// stores it: a zero Time becomes now and Tokens is counted with enc, its
// content's part given as content when not -1. The encoded message must
// fit in Options.MaxMessageBytes ([ErrTooLarge]).
func (s *Store) encodeMessage(enc ordinaryEncoder, m *Message, now time.Time, content int) ([]byte, error) {
	if m.Time.IsZero() {
		m.Time = now
	}
	if content < 0 {
		content = tokenLen(enc, m.Content)
	}
	m.Tokens = countTokensWith(enc, m, content)
	b, err := encodeRecord(m, s.opts.Encoding)
	if err != nil {
		return nil, err
	}
	if len(b) > s.opts.MaxMessageBytes {
		return nil, fmt.Errorf("%w: %d bytes encoded, limit %d", ErrTooLarge, len(b), s.opts.MaxMessageBytes)
	}
	return b, nil
}

// embedEpisodes embeds the episodes among msgs (see episodeText) in one
// call, outside any transaction. It returns a vector for each message that
// is an episode and nil for the others.
func (s *Store) embedEpisodes(ctx context.Context, msgs []Message) ([][]float32, error) {
	vectors := make([][]float32, len(msgs))
	var texts []string
	var at []int
	for i := range msgs {
		if t, ok := episodeText(&msgs[i]); ok {
			texts, at = append(texts, t), append(at, i)
		}
	}
	if len(texts) > 0 {
		vecs, err := s.embed(ctx, texts)
		if err != nil {
			return nil, err
		}
		for j, i := range at {
			vectors[i] = vecs[j]
		}
	}
	return vectors, nil
}

// nextMessageID returns a new id for a message written at now that sorts
// after last, the session's last message: when the clock went back (or
// another process wrote with a clock ahead), append order is kept anyway.
func (s *Store) nextMessageID(now time.Time, last ulid.ULID) ulid.ULID {
	id := s.db.NewID(now)
	if id.Compare(last) <= 0 {
		id = engine.NextID(last)
	}
	return id
}

// messageWriter writes the messages of one prepared batch into its session,
// in one transaction: checkToolCalls then putMessage for each message
// written, in order. The caller holds the session's lock.
type messageWriter struct {
	s        *Store
	a        *preparedAppend
	made     map[string]ulid.ULID // tool calls made in this batch, by message
	answered map[string]bool      // tool calls answered in this batch
	// prev is the episode text of the message before the next one: an
	// answer's words are often in the question before it, so an episode
	// is also found by them (engine.Record.Context). The caller sets it
	// before the first message written.
	prev string
}

func (s *Store) newMessageWriter(a *preparedAppend) *messageWriter {
	return &messageWriter{s: s, a: a, made: map[string]ulid.ULID{}, answered: map[string]bool{}}
}

// toolAnswer is the entry of the tool call a tool result answers, under
// key, as checkToolCalls found it; zero for other messages.
type toolAnswer struct{ key, entry []byte }

// checkToolCalls checks m's tool calls against the session and the
// messages of the batch written so far: a call's id is new to the session,
// and a tool result answers a call made earlier and not answered yet. It
// returns the entry of the call m answers. An error that refuses m wraps
// [ErrInvalidMessage]; any other is the store's.
func (w *messageWriter) checkToolCalls(tx *engine.Tx, m *Message) (toolAnswer, error) {
	prefix := w.a.prefix
	for i, c := range m.ToolCalls {
		if _, err := tx.Get(sessionPrefix(prefix).toolCall(c.ID)); err == nil {
			return toolAnswer{}, toolCallError(i, "id", fmt.Errorf("%w %q", ErrDuplicateToolCall, c.ID))
		} else if !errors.Is(err, engine.ErrNotFound) {
			return toolAnswer{}, err
		}
	}
	if m.Role != RoleTool {
		return toolAnswer{}, nil
	}
	if w.answered[m.ToolCallID] {
		return toolAnswer{}, fieldError("tool_call_id", fmt.Errorf("%w: %q", ErrDuplicateToolResult, m.ToolCallID))
	}
	key := sessionPrefix(prefix).toolCall(m.ToolCallID)
	entry, err := toolCallState(tx, key, m.ToolCallID, w.made)
	if errors.Is(err, ErrInvalidMessage) {
		return toolAnswer{}, fieldError("tool_call_id", err)
	}
	if err != nil {
		return toolAnswer{}, err
	}
	return toolAnswer{key: key, entry: entry}, nil
}

// putMessage writes message i of the batch under id: the message, its
// entry in the system-message index, the tool calls it makes, the call it
// answers (ans, from checkToolCalls) and its episode, with w.prev as the
// episode's context. Every key expires after Options.SessionTTL.
func (w *messageWriter) putMessage(tx *engine.Tx, i int, id ulid.ULID, ans toolAnswer) error {
	s, a, m := w.s, w.a, &w.a.msgs[i]
	prefix, ttl := a.prefix, s.opts.SessionTTL
	if err := tx.SetTTL(sessionPrefix(prefix).message(id), a.values[i], ttl); err != nil {
		return err
	}
	if m.Role == RoleSystem {
		if err := tx.SetTTL(sessionPrefix(prefix).systemMessage(id), nil, ttl); err != nil {
			return err
		}
	}
	for _, c := range m.ToolCalls {
		w.made[c.ID] = id
		if err := tx.SetTTL(sessionPrefix(prefix).toolCall(c.ID), id[:], ttl); err != nil {
			return err
		}
	}
	if ans.key != nil {
		w.answered[m.ToolCallID] = true
		if err := tx.SetTTL(ans.key, answeredCall(ans.entry, id), ttl); err != nil {
			return err
		}
	}
	if a.vectors[i] != nil {
		if err := s.putEpisode(tx, a, i, id, w.prev); err != nil {
			return err
		}
	}
	if t, ok := episodeText(m); ok {
		w.prev = t
	}
	return nil
}
