package memory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// Session is one conversation thread of a user: an ordered log of messages.
// It is a lightweight handle; the scope is checked on every call, so a bad
// scope surfaces as [ErrInvalidScope] from the first call. Safe for
// concurrent use.
type Session struct {
	store *Store
	scope Scope
}

// Session returns the session named by scope, which needs Tenant, User and
// Session. The session exists once a message is appended to it.
func (s *Store) Session(scope Scope) *Session {
	return &Session{store: s, scope: scope}
}

// Scope returns the session's scope.
func (ss *Session) Scope() Scope { return ss.scope }

func (ss *Session) prefix() ([]byte, error) {
	if err := ss.scope.Validate(engine.LevelSession); err != nil {
		return nil, err
	}
	return ss.scope.Prefix(engine.LevelSession), nil
}

// Append adds messages to the end of the session, in order, atomically: on
// any error nothing of the batch is written. Each message is checked first:
// a known role; tool calls only on assistant messages, with valid ids unique
// in the session and arguments that are valid JSON; a tool result's
// ToolCallID must match a call made earlier in the session or the batch
// that no other result answered ([ErrDuplicateToolResult]);
// text must be UTF-8; the encoded message must fit in
// Options.MaxMessageBytes. Errors wrap [ErrInvalidMessage] (or a more
// specific error that wraps it), [ErrTooLarge] or [ErrInvalidScope] and name
// the message's index in the batch.
//
// With [Sync] durability (the default) Append returns once the batch is on
// disk. Messages with a zero Time get the time of the call. The ids assigned
// are ULIDs that sort in append order; [Session.Messages] returns them.
func (ss *Session) Append(ctx context.Context, msgs ...Message) error {
	fg := ss.store.pace.begin(ctx)
	defer ss.store.pace.end(fg)
	if len(msgs) == 0 {
		return nil
	}
	a, err := ss.store.prepareAppend(ctx, ss.scope, msgs)
	if err != nil {
		return err
	}
	mu := ss.store.sessionLock(a.prefix)
	mu.Lock()
	defer mu.Unlock()
	var ids []ulid.ULID
	err = ss.store.db.Update(ctx, func(tx *engine.Tx) (err error) {
		ids, err = ss.store.appendTx(tx, a)
		return err
	})
	if err != nil {
		ss.store.dropEmbedded(ctx, a.episodeTexts()...)
		return err
	}
	ss.store.extractAppended(ctx, a, ids)
	return nil
}

// preparedAppend is a batch of messages checked and encoded outside any
// transaction, ready for appendTx.
type preparedAppend struct {
	prefix  []byte
	user    Scope // the partition the messages' episodes go to
	session string
	msgs    []Message
	values  [][]byte
	// vectors holds the embedding of each message that is an episode
	// (see episodeText), nil for the others.
	vectors [][]float32
	// tokens holds the memoryTokensKey value of each message that is an
	// episode (its line after the time counted: episodeTextTokens), "" for
	// the others.
	tokens []string
	now    time.Time
}

// episodeTexts returns the texts of the batch's episodes: what was
// embedded.
func (a *preparedAppend) episodeTexts() []string {
	var out []string
	for i := range a.msgs {
		if t, ok := episodeText(&a.msgs[i]); ok {
			out = append(out, t)
		}
	}
	return out
}

// episodeText returns the text a message is recalled by as an episode of
// the user's past, and whether it is one: user and assistant messages with
// content, prefixed by the speaker's Name when set.
func episodeText(m *Message) (string, bool) {
	if (m.Role != RoleUser && m.Role != RoleAssistant) || m.Content == "" {
		return "", false
	}
	if m.Name != "" {
		return m.Name + ": " + m.Content, true
	}
	return m.Content, true
}

// prepareAppend checks and encodes a batch of messages for the session
// named by scope.
func (s *Store) prepareAppend(ctx context.Context, scope Scope, msgs []Message) (*preparedAppend, error) {
	if err := scope.Validate(engine.LevelSession); err != nil {
		return nil, err
	}
	enc, err := s.encoder()
	if err != nil {
		return nil, err
	}
	a := &preparedAppend{prefix: scope.Prefix(engine.LevelSession), msgs: msgs, values: make([][]byte, len(msgs)), now: time.Now()}
	// Sizes first: nothing is tokenized for a batch that cannot be stored.
	for i := range msgs {
		if err := msgs[i].checkSize(s.opts.MaxMessageBytes); err != nil {
			return nil, messageError(i, err)
		}
	}
	// Then the rules, so that a batch refused costs nothing more.
	calls := batchCalls{}
	for i := range msgs {
		m := &msgs[i]
		if err := m.validate(); err != nil {
			return nil, messageError(i, err)
		}
		if id, _, repeated := calls.add(i, m); repeated {
			return nil, messageError(i, fmt.Errorf("%w %q", ErrDuplicateToolCall, id))
		}
	}
	// Then personal data, before anything is counted, embedded or written.
	if msgs, err = s.redactMessages(ctx, a.prefix, msgs); err != nil {
		return nil, err
	}
	a.msgs = msgs
	a.user, a.session = Scope{Tenant: scope.Tenant, User: scope.User}, scope.Session
	a.tokens = make([]string, len(msgs))
	for i := range msgs {
		m := msgs[i] // a copy: the caller's slice is not modified
		if a.values[i], err = s.encodeCounted(enc, a, i, &m, a.now); err != nil {
			return nil, messageError(i, err)
		}
	}
	// Embed the episodes, in one call, outside the transaction.
	if a.vectors, err = s.embedEpisodes(ctx, msgs); err != nil {
		return nil, err
	}
	return a, nil
}

// appendTx writes a prepared batch in tx and returns the ids given to its
// messages. The caller holds the session's lock.
func (s *Store) appendTx(tx *engine.Tx, a *preparedAppend) ([]ulid.ULID, error) {
	prefix, msgs, now := a.prefix, a.msgs, a.now
	ttl := s.opts.SessionTTL
	infoKey := sessionPrefix(prefix).info()
	si := &sessionInfo{Created: now.UnixNano()}
	switch b, err := tx.Get(infoKey); {
	case err == nil:
		if si, err = decodeSessionInfo(b); err != nil {
			return nil, err
		}
	case !errors.Is(err, engine.ErrNotFound):
		return nil, err
	}
	var last ulid.ULID
	copy(last[:], si.Last)
	w := s.newMessageWriter(a)
	// The first episode's context is the session's last message.
	if last != (ulid.ULID{}) && slices.ContainsFunc(a.vectors, func(v []float32) bool { return v != nil }) {
		switch b, err := tx.Get(sessionPrefix(prefix).message(last)); {
		case err == nil:
			var pm Message
			if _, err := decodeRecord(b, &pm); err == nil {
				w.prev, _ = episodeText(&pm)
			}
		case !errors.Is(err, engine.ErrNotFound):
			return nil, err
		}
	}
	ids := make([]ulid.ULID, len(msgs))
	for i := range msgs {
		m := &msgs[i]
		ans, err := w.checkToolCalls(tx, m)
		if err != nil {
			return nil, messageError(i, err)
		}
		id := s.nextMessageID(now, last)
		last = id
		ids[i] = id
		if err := w.putMessage(tx, i, id, ans); err != nil {
			return nil, messageError(i, err)
		}
		if s.extracts(m) {
			// In this transaction: a crash cannot lose the job. Append
			// only: an import does not queue its messages.
			if err := tx.Set(queueKey(engine.NSExtractQueue, prefix, id), nil); err != nil {
				return nil, err
			}
		}
	}
	si.Updated = now.UnixNano()
	si.Messages += len(msgs)
	si.Last = last[:]
	return ids, tx.SetTTL(infoKey, encodeSessionInfo(si), ttl)
}

// A tool call's entry (engine.NSToolCall) holds the id of the message that
// made it, then, once a result answers it, the result's id: a call has one
// result (issue 12). Entries written before the result's id was kept hold
// only the call's.
const toolCallAnswered = 2 * len(ulid.ULID{})

// toolCallState checks that a tool result may answer the call id, whose
// entry is under key: the call exists (in the store, or in inBatch, the
// calls of the batch) and has no result yet. It returns the call's entry.
func toolCallState(tx *engine.Tx, key []byte, id string, inBatch map[string]ulid.ULID) ([]byte, error) {
	if msg, ok := inBatch[id]; ok {
		return msg[:], nil
	}
	v, err := tx.Get(key)
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return nil, fmt.Errorf("%w: %q", ErrOrphanToolResult, id)
	case err != nil:
		return nil, err
	case len(v) >= toolCallAnswered:
		return nil, fmt.Errorf("%w: %q", ErrDuplicateToolResult, id)
	}
	return v, nil
}

// answeredCall is a tool call's entry once result answers it.
func answeredCall(entry []byte, result ulid.ULID) []byte {
	out := make([]byte, toolCallAnswered)
	copy(out[:len(result)], entry)
	copy(out[len(result):], result[:])
	return out
}

// MessagesOptions selects a range of a session's messages.
type MessagesOptions struct {
	// After and Before bound the range by message id, exclusive. Use the
	// last id of a page as After to get the next page.
	After, Before string
	// Since and Until bound the range by append time: Since inclusive,
	// Until exclusive. Zero means unbounded.
	Since, Until time.Time
	// Limit caps the page; zero means [DefaultPageSize].
	Limit int
	// Reverse returns the newest messages first (and After/Before keep
	// their meaning as id bounds).
	Reverse bool
}

// Messages returns a page of the session's messages in append order (or
// newest first with Reverse), with ids and token counts set. An unknown
// session has no messages.
func (ss *Session) Messages(ctx context.Context, opts MessagesOptions) ([]Message, error) {
	fg := ss.store.pace.begin(ctx)
	defer ss.store.pace.end(fg)
	prefix, err := ss.prefix()
	if err != nil {
		return nil, err
	}
	lo, hi, err := opts.bounds()
	if err != nil {
		return nil, err
	}
	limit, _ := pageSize(opts.Limit) // bounds checked it
	if lo.Compare(hi) > 0 {
		return nil, nil
	}
	enc := ss.store.opts.Encoding
	msgPrefix := sessionPrefix(prefix).messages()
	var out []Message
	err = ss.store.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: msgPrefix, Reverse: opts.Reverse, Prefetch: min(limit, 64)})
		defer it.Close()
		// Seek to the near bound; the loop stops at the far one.
		if opts.Reverse {
			it.Seek(sessionPrefix(prefix).message(hi))
		} else {
			it.Seek(sessionPrefix(prefix).message(lo))
		}
		var val []byte
		for ; it.Valid() && len(out) < limit; it.Next() {
			id := keyID(msgPrefix, it.Key())
			if (!opts.Reverse && id.Compare(hi) > 0) || (opts.Reverse && id.Compare(lo) < 0) {
				break
			}
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			m, err := ss.decode(id, val, enc)
			if err != nil {
				return err
			}
			out = append(out, m)
		}
		return nil
	})
	return out, err
}

// bounds turns the options into an inclusive id range [lo, hi], empty when
// lo > hi. Since and Until outside the times the store keeps are
// [ErrInvalidOptions] (and [ErrInvalidTime]); ids hold milliseconds since
// 1970, so a Since before it bounds nothing and an Until at or before it
// selects nothing.
func (o *MessagesOptions) bounds() (lo, hi ulid.ULID, err error) {
	if _, err := pageSize(o.Limit); err != nil {
		return lo, hi, err
	}
	if err := engine.ValidateTime(o.Since); err != nil {
		return lo, hi, fmt.Errorf("%w: Since %w", ErrInvalidOptions, err)
	}
	if err := engine.ValidateTime(o.Until); err != nil {
		return lo, hi, fmt.Errorf("%w: Until %w", ErrInvalidOptions, err)
	}
	for i := range hi {
		hi[i] = 0xFF
	}
	if o.After != "" {
		id, err := ulid.ParseStrict(o.After)
		if err != nil {
			return lo, hi, fmt.Errorf("%w: After %q is not a message id", ErrInvalidOptions, o.After)
		}
		lo = engine.NextID(id)
	}
	if !o.Since.IsZero() && o.Since.After(time.UnixMilli(0)) {
		var s ulid.ULID
		if err := s.SetTime(ulid.Timestamp(o.Since)); err == nil && s.Compare(lo) > 0 {
			lo = s
		}
	}
	if o.Before != "" {
		id, err := ulid.ParseStrict(o.Before)
		if err != nil {
			return lo, hi, fmt.Errorf("%w: Before %q is not a message id", ErrInvalidOptions, o.Before)
		}
		hi = engine.PrevID(id)
	}
	if !o.Until.IsZero() {
		if !o.Until.After(time.UnixMilli(0)) {
			return engine.NextID(ulid.ULID{}), ulid.ULID{}, nil // empty
		}
		var u ulid.ULID
		if err := u.SetTime(ulid.Timestamp(o.Until)); err == nil {
			if u = engine.PrevID(u); u.Compare(hi) < 0 {
				hi = u
			}
		}
	}
	return lo, hi, nil
}

// decode turns a stored record into a Message, recounting tokens when the
// record was counted in another encoding.
func (ss *Session) decode(id ulid.ULID, val []byte, encoding string) (Message, error) {
	m := Message{ID: id.String()}
	recEnc, err := decodeRecord(val, &m)
	if err != nil {
		return m, fmt.Errorf("message %s: %w", m.ID, err)
	}
	if recEnc != encoding {
		enc, err := ss.store.encoder()
		if err != nil {
			return m, err
		}
		m.Tokens = countTokens(enc, &m)
	}
	return m, nil
}

// encodeCounted is encodeMessage of m, message i of a (a copy the caller
// may change), that also counts its episode's line for the episode record
// (a.tokens[i]; see episodeTokens): Append and ImportMessages store the
// count with what they write, so Recall does not count it.
func (s *Store) encodeCounted(enc *bpe.Encoder, a *preparedAppend, i int, m *Message, now time.Time) ([]byte, error) {
	content := -1
	if t, ok := episodeText(m); ok {
		var n int
		n, content = episodeTokens(enc, a.session, m)
		a.tokens[i] = formatTextTokens(s.opts.Encoding, n, t)
	}
	return s.encodeMessage(enc, m, now, content)
}

// putEpisode indexes message i of a prepared append, stored under id, as an
// episode in its user's partition: the record's id is the message's, so the
// message and its episode are found from each other.
func (s *Store) putEpisode(tx *engine.Tx, a *preparedAppend, i int, id ulid.ULID, prev string) error {
	m := &a.msgs[i]
	text, _ := episodeText(m)
	t := m.Time
	if t.IsZero() {
		t = a.now
	}
	rec := engine.Record{
		ID:       id.String(),
		Text:     text,
		Context:  prev,
		Vector:   a.vectors[i],
		Metadata: map[string]string{"session": a.session, "role": string(m.Role)},
		Time:     t,
	}
	if i < len(a.tokens) && a.tokens[i] != "" {
		rec.Metadata[memoryTokensKey] = a.tokens[i]
	}
	if ttl := s.opts.SessionTTL; ttl > 0 {
		prefix, err := a.user.PartitionPrefix()
		if err != nil {
			return err
		}
		rec.ExpiresAt = a.now.Add(ttl)
		if err := tx.Set(expiryKey(prefix, rec.ExpiresAt, rec.ID), expiryValue(spaceMessages, rec.Text)); err != nil {
			return err
		}
		if err := s.markExpiring(tx, a.user, prefix); err != nil {
			return err
		}
	}
	_, err := tx.PutRecord(a.user, spaceMessages, rec)
	return err
}

// SessionInfo describes one session of a user.
type SessionInfo struct {
	ID       string    // the session id
	Created  time.Time // first append
	Updated  time.Time // last append
	Messages int       // messages appended (expired ones included)
}

// sessionInfo is the stored form of SessionInfo (JSON after a version byte).
type sessionInfo struct {
	Created  int64  `json:"c"`
	Updated  int64  `json:"u"`
	Messages int    `json:"n"`
	Last     []byte `json:"l"` // the newest message's id
}

func encodeSessionInfo(si *sessionInfo) []byte {
	b, _ := json.Marshal(si) // a struct of ints and bytes always marshals
	return append([]byte{recordVersion}, b...)
}

func decodeSessionInfo(b []byte) (*sessionInfo, error) {
	if len(b) == 0 || b[0] != recordVersion {
		return nil, fmt.Errorf("%w: unknown session record version", ErrCorrupt)
	}
	var si sessionInfo
	if err := json.Unmarshal(b[1:], &si); err != nil {
		return nil, fmt.Errorf("%w: session record: %v", ErrCorrupt, err)
	}
	return &si, nil
}

// SessionsOptions pages through a user's sessions.
type SessionsOptions struct {
	// After lists sessions whose id sorts after this one (exclusive).
	After string
	// Limit caps the page; zero means [DefaultPageSize].
	Limit int
}

// Sessions lists the sessions of the scope's user in id order, a page at a
// time. The scope needs Tenant and User; Session is ignored.
func (s *Store) Sessions(ctx context.Context, scope Scope, opts SessionsOptions) ([]SessionInfo, error) {
	fg := s.pace.begin(ctx)
	defer s.pace.end(fg)
	scope.Session = ""
	if err := scope.Validate(engine.LevelUser); err != nil {
		return nil, err
	}
	limit, err := pageSize(opts.Limit)
	if err != nil {
		return nil, err
	}
	userPrefix := scope.Prefix(engine.LevelUser)
	var out []SessionInfo
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: userPrefix, KeysOnly: true})
		defer it.Close()
		start := engine.ChildrenStart(userPrefix)
		if opts.After != "" {
			// Skip past every key of the After session.
			start = engine.PrefixEnd(engine.ChildPrefix(userPrefix, opts.After))
		}
		// Skip-scan: land on a session's first key, read its info record,
		// then jump past all of its keys.
		for it.Seek(start); it.Valid() && len(out) < limit; {
			id, ok := engine.ChildAt(userPrefix, it.Key())
			if !ok {
				break
			}
			prefix := sessionPrefix(engine.ChildPrefix(userPrefix, id))
			b, err := tx.Get(prefix.info())
			switch {
			case err == nil:
				si, err := decodeSessionInfo(b)
				if err != nil {
					return err
				}
				out = append(out, SessionInfo{
					ID:       id,
					Created:  time.Unix(0, si.Created).UTC(),
					Updated:  time.Unix(0, si.Updated).UTC(),
					Messages: si.Messages,
				})
			case !errors.Is(err, engine.ErrNotFound):
				return err
			}
			it.Seek(engine.PrefixEnd(prefix))
		}
		return nil
	})
	return out, err
}
