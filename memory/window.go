package memory

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
)

// WindowOptions bounds a conversation window. Both budgets count system
// messages too.
type WindowOptions struct {
	// MaxMessages caps the number of messages. Zero means
	// [DefaultWindowMessages].
	MaxMessages int
	// MaxTokens caps the tokens, counted as [Store.CountTokens] counts them.
	// Zero means no token budget.
	MaxTokens int
}

// Window returns the messages a model should see next: the most recent part
// of the session that fits the budgets, in order. The rules:
//
//   - every system message of the session is kept, wherever it stands;
//   - other messages are trimmed oldest first, so the window is the longest
//     suffix of the conversation that fits;
//   - an assistant message's tool calls and the tool results answering them
//     are kept or dropped together;
//   - so the window never starts with a tool result whose call was dropped.
//
// When the system messages alone exceed a budget, Window returns
// [ErrBudgetTooSmall]. The cost is proportional to the window and the
// number of system messages, not to the length of the session.
func (ss *Session) Window(ctx context.Context, opts WindowOptions) ([]Message, error) {
	fg := ss.store.pace.begin(ctx)
	defer ss.store.pace.end(fg)
	prefix, err := ss.prefix()
	if err != nil {
		return nil, err
	}
	if opts.MaxMessages < 0 || opts.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: negative window budget %+v", ErrInvalidOptions, opts)
	}
	if opts.MaxMessages == 0 {
		opts.MaxMessages = DefaultWindowMessages
	}
	encoding := ss.store.opts.Encoding
	keys := sessionPrefix(prefix)
	msgPrefix := keys.messages()
	sysPrefix := keys.systemMessages()
	var out []Message
	err = ss.store.db.View(ctx, func(tx *engine.Tx) error {
		// System messages first: they are kept whatever else is dropped.
		var system []Message
		var id ulid.ULID
		sys := tx.NewIterator(engine.IterOptions{Prefix: sysPrefix, KeysOnly: true})
		for sys.Seek(nil); sys.Valid(); sys.Next() {
			id = keyID(sysPrefix, sys.Key())
			val, err := tx.Get(keys.message(id))
			if err != nil {
				sys.Close()
				return fmt.Errorf("system message %s: %w", id, err)
			}
			m, err := ss.decode(id, val, encoding)
			if err != nil {
				sys.Close()
				return err
			}
			system = append(system, m)
		}
		sys.Close()
		w := newWindowBuilder(opts)
		for i := range system {
			w.used.messages++
			w.used.tokens += system[i].Tokens
		}
		if !w.fits(budget{}) {
			return fmt.Errorf("%w: %d system messages, %d tokens; budget %d messages, %d tokens",
				ErrBudgetTooSmall, w.used.messages, w.used.tokens, opts.MaxMessages, opts.MaxTokens)
		}

		// Then the conversation, newest first, until a budget is reached.
		// One message past the budget: the read that finds the budget
		// full then needs no second page (a round trip on PostgreSQL).
		it := tx.NewIterator(engine.IterOptions{Prefix: msgPrefix, Reverse: true, Prefetch: min(opts.MaxMessages+1, 65)})
		defer it.Close()
		var val []byte
		for it.Seek(nil); it.Valid(); it.Next() {
			id = keyID(msgPrefix, it.Key())
			if val, err = it.Value(val[:0]); err != nil {
				return err
			}
			m, err := ss.decode(id, val, encoding)
			if err != nil {
				return err
			}
			if m.Role == RoleSystem {
				continue
			}
			if !w.add(m) {
				break
			}
		}
		out = merge(system, w.result())
		return nil
	})
	return out, err
}

type budget struct{ messages, tokens int }

// windowBuilder takes a session's non-system messages newest first and
// keeps the longest suffix that fits the budget and does not split a tool
// call from its results. It is the algorithm core of Window, free of I/O.
type windowBuilder struct {
	limit budget
	used  budget
	// taken holds the messages accepted so far, newest first; only
	// taken[:cut] form a valid window.
	taken []Message
	cut   int
	// pending holds tool-call ids whose results are taken but whose call
	// is not yet: no cut is valid while it is non-empty.
	pending map[string]bool
}

func newWindowBuilder(opts WindowOptions) *windowBuilder {
	return &windowBuilder{
		limit:   budget{messages: opts.MaxMessages, tokens: opts.MaxTokens},
		pending: map[string]bool{},
	}
}

// fits reports whether adding extra keeps the window within budget.
func (w *windowBuilder) fits(extra budget) bool {
	if w.used.messages+extra.messages > w.limit.messages {
		return false
	}
	return w.limit.tokens == 0 || w.used.tokens+extra.tokens <= w.limit.tokens
}

// add offers the next older message and reports whether to keep going.
func (w *windowBuilder) add(m Message) bool {
	if !w.fits(budget{messages: 1, tokens: m.Tokens}) {
		return false
	}
	w.used.messages++
	w.used.tokens += m.Tokens
	w.taken = append(w.taken, m)
	if m.Role == RoleTool {
		w.pending[m.ToolCallID] = true
	}
	for _, c := range m.ToolCalls {
		delete(w.pending, c.ID)
	}
	if len(w.pending) == 0 {
		w.cut = len(w.taken)
	}
	return true
}

// result returns the kept messages, oldest first.
func (w *windowBuilder) result() []Message {
	kept := w.taken[:w.cut]
	slices.Reverse(kept)
	return kept
}

// merge interleaves two id-ordered lists by id (ULID strings sort by id).
func merge(a, b []Message) []Message {
	out := make([]Message, 0, len(a)+len(b))
	for len(a) > 0 && len(b) > 0 {
		if strings.Compare(a[0].ID, b[0].ID) < 0 {
			out, a = append(out, a[0]), a[1:]
		} else {
			out, b = append(out, b[0]), b[1:]
		}
	}
	return append(append(out, a...), b...)
}
