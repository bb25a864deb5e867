package memory

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
)

// DefaultSummaryTokens is Options.SummaryTokens when zero.
const DefaultSummaryTokens = 256

// maxSummarize bounds the messages one refresh folds into a summary, and
// summarizeChunk the messages of one Summarizer call: a session that
// outgrew its window by thousands of messages catches up over several
// recalls instead of stalling one.
const (
	maxSummarize   = 1000
	summarizeChunk = 100
)

// storedSummary is a session's rolling summary (JSON after a version byte).
type storedSummary struct {
	Text    string `json:"t"`
	Through []byte `json:"th"` // the id of the newest message it covers
	Updated int64  `json:"u"`
}

// Summary returns the session's rolling summary: what the messages that
// left its window said, as of the last [Store.Recall] of the session. It
// is empty until messages have left the window.
func (ss *Session) Summary(ctx context.Context) (string, error) {
	prefix, err := ss.prefix()
	if err != nil {
		return "", err
	}
	var sum storedSummary
	err = ss.store.db.View(ctx, func(tx *engine.Tx) error {
		sum, err = loadSummary(tx, prefix)
		return err
	})
	return sum.Text, err
}

func loadSummary(tx *engine.Tx, prefix []byte) (storedSummary, error) {
	sum, _, err := readSummary(tx, prefix, nil, storedSummary{})
	return sum, err
}

// readSummary is loadSummary that also returns the stored bytes (nil for
// none); bytes equal to known, read before and decoded as knownSum, are
// not decoded again (a refresh reads the summary twice, and decoding it
// was a sixth of the refresh in BenchmarkRecallGrowingSession).
func readSummary(tx *engine.Tx, prefix, known []byte, knownSum storedSummary) (storedSummary, []byte, error) {
	b, err := tx.Get(sessionPrefix(prefix).summary())
	switch {
	case errors.Is(err, engine.ErrNotFound):
		return storedSummary{}, nil, nil
	case err != nil:
		return storedSummary{}, nil, err
	}
	if known != nil && bytes.Equal(b, known) {
		return knownSum, b, nil
	}
	sum, err := decodeSummary(b)
	return sum, b, err
}

func encodeSummary(sum *storedSummary) []byte {
	b, _ := json.Marshal(sum) // strings, bytes and ints always marshal
	return append([]byte{recordVersion}, b...)
}

func decodeSummary(b []byte) (storedSummary, error) {
	var sum storedSummary
	if len(b) == 0 || b[0] != recordVersion {
		return sum, fmt.Errorf("%w: unknown summary version", ErrCorrupt)
	}
	if err := json.Unmarshal(b[1:], &sum); err != nil {
		return storedSummary{}, fmt.Errorf("%w: summary: %v", ErrCorrupt, err)
	}
	return sum, nil
}

// sessionSummary brings the session's rolling summary up to the start of
// its window: the non-system messages that left the window since the last
// refresh are folded into it by the store's Summarizer, and the result is
// stored. It returns the summary.
func (s *Store) sessionSummary(ctx context.Context, ss *Session, win []Message) (string, error) {
	prefix, err := ss.prefix()
	if err != nil {
		return "", err
	}
	var sum storedSummary
	var raw []byte
	err = s.db.View(ctx, func(tx *engine.Tx) error {
		sum, raw, err = readSummary(tx, prefix, nil, storedSummary{})
		return err
	})
	if err != nil {
		return "", err
	}
	// The window's first non-system message; everything before it left.
	var before string
	for _, m := range win {
		if m.Role != RoleSystem {
			before = m.ID
			break
		}
	}
	var after string
	if len(sum.Through) == 16 {
		var id ulid.ULID
		copy(id[:], sum.Through)
		after = id.String()
	}
	var left []Message
	for len(left) < maxSummarize {
		page, err := ss.Messages(ctx, MessagesOptions{After: after, Before: before, Limit: summarizeChunk})
		if err != nil {
			return "", err
		}
		if len(page) == 0 {
			break
		}
		after = page[len(page)-1].ID
		for _, m := range page {
			if m.Role != RoleSystem {
				left = append(left, m)
			}
		}
		if len(page) < summarizeChunk {
			break
		}
	}
	if len(left) == 0 {
		return sum.Text, nil
	}
	text := sum.Text
	for i := 0; i < len(left); i += summarizeChunk {
		chunk := left[i:min(i+summarizeChunk, len(left))]
		if text, err = s.summarizer.Summarize(ctx, text, chunk, s.opts.SummaryTokens); err != nil {
			if ctx.Err() != nil {
				return "", ctx.Err()
			}
			// A summarizer down (a provider's outage) must not take
			// Recall with it: the stored summary stands, and the next
			// Recall tries again from where it ends.
			if s.opts.Logger != nil {
				s.opts.Logger.Warn("memory: summarize session; using the stored summary", "err", err)
			}
			return sum.Text, nil
		}
	}
	last, err := ulid.ParseStrict(after)
	if err != nil {
		return "", err
	}
	next := storedSummary{Text: text, Through: last[:], Updated: time.Now().UnixNano()}
	// The summary is derived from stored messages: a crash that loses this
	// write leaves the older summary and its Through mark, and the next
	// Recall folds the same messages in again. So Recall commits it
	// without waiting for an fsync. (The messages it folds in left the
	// window, so their appends were acknowledged, that is synced, unless
	// one is still in flight at this moment.)
	err = s.db.UpdateNoSync(ctx, func(tx *engine.Tx) error {
		// The newest message it covers must still be there: a session
		// forgotten (or expired) meanwhile gets no summary back. Reading
		// it makes a concurrent Forget conflict with this write.
		expires, err := tx.KV().Expiry(sessionPrefix(prefix).message(last))
		if errors.Is(err, kv.ErrNotFound) {
			text = ""
			return nil
		}
		if err != nil {
			return err
		}
		// A concurrent refresh that got further wins.
		cur, _, err := readSummary(tx, prefix, raw, sum)
		if err != nil {
			return err
		}
		if len(cur.Through) == 16 && string(cur.Through) >= string(next.Through) {
			text = cur.Text
			return nil
		}
		// The summary lives as long as that message: once it expired,
		// every message the summary covers has.
		var ttl time.Duration
		if !expires.IsZero() {
			if ttl = time.Until(expires); ttl <= 0 {
				text = ""
				return nil
			}
		}
		return tx.SetTTL(sessionPrefix(prefix).summary(), encodeSummary(&next), ttl)
	})
	if err != nil {
		return "", err
	}
	return text, nil
}
