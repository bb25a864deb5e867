package memory

import (
	"context"
	"slices"
	"strings"
	"time"

	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/index"
)

// Re-ranking after fusion. Two things a ranked list cannot see are
// weighed once the best candidates' records are read:
//
//   - A time the query names ("last week", "in May 2023", "two days
//     ago"), resolved against Query.Now by the rule extractor's date
//     resolver: episodes and memories from that span have their fused
//     score multiplied by whenBoost. Measured on LoCoMo conv-26 (default
//     mode, questions asked the day after the last session): R@10 0.731
//     to 0.744 at factors 2 and 4, 0.737 at 1.3; LongMemEval dev: no
//     question type moved at @1/5/10.
//   - A question among them (an episode that ends in "?") matched the
//     query's words, and the message that followed it in its session is,
//     most often, its answer, which may share none of them: that message
//     enters the candidates at replyShare of the question's score (or
//     keeps its own, if higher). Measured on LoCoMo conv-26 (default
//     mode), R@10 by share: 0.5 and 0.7 0.744 (no change), 0.8 and 0.85
//     0.751, 0.9 0.764 (multi-hop 0.331 to 0.362, temporal 0.919 to
//     0.946, single-hop 0.900 to 0.914), 1.0 0.763 with open-domain one
//     question lower; LongMemEval dev: no figure moved at any share.
//   - An earlier message that says nothing the query does not (a
//     question whose content words are all the query's, or a near copy of
//     the query): asked again, it would outrank the answer it got. It is
//     demoted by echoFactor, and its reply takes its whole score.

const (
	// whenBoost multiplies the fused score of a candidate from the span
	// of time the query names.
	whenBoost = 2.0
	// echoFactor multiplies the fused score of an earlier message the
	// query repeats.
	echoFactor = 0.25
	// replyShare is the share of a question's fused score the message
	// after it gets.
	replyShare = 0.9
	// echoOverlap is the share of the query's terms a message that is not
	// a question must hold (and hold nothing else) to be a near copy.
	echoOverlap = 0.8
)

// TimeSpan is a time expression a query named and the span of time it was
// resolved to, [From, To), against the query's Now.
type TimeSpan struct {
	// Phrase is the expression as written, lower case: "last week".
	Phrase string
	// Resolved is what the date resolver made of it: "the week before 8
	// May 2023".
	Resolved string
	From, To time.Time
}

// rerankDepth is how many of the best fused candidates rerank reads and
// re-orders: what the context can hold, whose records assembly reads
// anyway; when the query names a time, twice that and at least 20, so that
// an item from the span can climb into the context.
func rerankDepth(q *Query, when bool) int {
	if when {
		return max(2*q.TopK, 20)
	}
	return q.TopK
}

// rerank applies the time span, the replies to questions and the echo
// rule (see above) to the best candidates, adding the replies that were
// not candidates, and returns the candidates in their new order.
func (s *Store) rerank(ctx context.Context, h *hydrator, f *fusion, cands []*Candidate, q *Query, tr *Trace) ([]*Candidate, error) {
	if strings.TrimSpace(q.Text) == "" || len(cands) == 0 {
		return cands, nil
	}
	w, from, to, named := queryWhen(q.Text, q.Now)
	if named {
		tr.When = &TimeSpan{Phrase: w.phrase, Resolved: w.resolved, From: from, To: to}
	}
	top := cands[:min(len(cands), rerankDepth(q, named))]
	if err := h.hydrate(ctx, top); err != nil {
		return nil, err
	}
	qterms := termSet(q.Text)
	var echoes, questions []*Candidate
	var buf []string
	for _, c := range top {
		if c.Reason != "" || c.Source == SourceGraph {
			continue
		}
		if tr.When != nil && !c.Time.Before(tr.When.From) && c.Time.Before(tr.When.To) {
			c.boost(whenBoost)
		}
		if c.Source != SourceEpisodes {
			continue
		}
		var echo bool
		switch echo, buf = isEcho(c.Text, qterms, buf); {
		case echo:
			echoes = append(echoes, c)
		case isQuestion(c.Text):
			questions = append(questions, c)
		}
	}
	replies, err := s.replies(ctx, h, f, echoes, 1)
	if err != nil {
		return nil, err
	}
	answers, err := s.replies(ctx, h, f, questions, replyShare)
	if err != nil {
		return nil, err
	}
	replies = append(replies, answers...)
	for _, c := range echoes {
		c.boost(echoFactor)
	}
	cands = append(cands, replies...)
	slices.SortStableFunc(cands, compareCandidates)
	for i, c := range cands {
		c.Rank = i + 1
	}
	return cands, nil
}

// boost multiplies c's fused score by factor and records it.
func (c *Candidate) boost(factor float64) {
	if c.Boost == 0 {
		c.Boost = 1
	}
	c.Boost *= factor
	c.Fused *= factor
	c.item.Score = c.Fused
}

// replies returns, for each of asked, the message that followed it in its
// session as a candidate with at least share of its fused score (before
// an echo's demotion), hydrated; a reply already among the candidates is
// raised to that score instead. Only new candidates are returned.
func (s *Store) replies(ctx context.Context, h *hydrator, f *fusion, asked []*Candidate, share float64) ([]*Candidate, error) {
	if len(asked) == 0 {
		return nil, nil
	}
	var fresh []*Candidate
	read := func(tx *engine.Tx) error {
		for _, e := range asked {
			id, ok, err := s.nextMessage(tx, Scope{Tenant: h.user.Tenant, User: h.user.User, Session: e.item.Session}, e.ID)
			if err != nil {
				return err
			}
			if !ok {
				continue // the last message of its session
			}
			_, known := f.byID[candidateKey{SourceEpisodes, id}]
			r := f.candidate(id, SourceEpisodes)
			if score := share * e.Fused; r.Fused < score {
				r.setRank("reply", 1, score)
				r.Fused, r.item.Score = score, score
			}
			if !known {
				fresh = append(fresh, r)
			}
		}
		return nil
	}
	if err := h.view(ctx, read); err != nil {
		return nil, err
	}
	if err := h.hydrate(ctx, fresh); err != nil {
		return nil, err
	}
	// A message with no episode (a tool call's, or one erased since) is
	// no candidate.
	return slices.DeleteFunc(fresh, func(c *Candidate) bool { return c.Reason != "" }), nil
}

// replyScan bounds how many messages after a question nextMessage reads
// for its answer.
const replyScan = 8

// nextMessage returns the id of the first message after id in the session
// that says something: a tool call and its result, or a system message,
// are passed over (the answer to "Can we add five seats?" is the message
// after the quote tool's).
func (s *Store) nextMessage(tx *engine.Tx, sess Scope, id string) (string, bool, error) {
	if sess.Validate(engine.LevelSession) != nil {
		return "", false, nil
	}
	u, err := ulid.ParseStrict(id)
	if err != nil {
		return "", false, nil
	}
	ss := s.Session(sess)
	p := sessionPrefix(sess.Prefix(engine.LevelSession))
	it := tx.NewIterator(engine.IterOptions{Prefix: p.messages()})
	defer it.Close()
	var val []byte
	n := 0
	for it.Seek(p.message(u)); it.Valid() && n <= replyScan; it.Next() {
		next := keyID(p.messages(), it.Key())
		if next == u {
			continue
		}
		n++
		if val, err = it.Value(val[:0]); err != nil {
			return "", false, err
		}
		m, err := ss.decode(next, val, s.opts.Encoding)
		if err != nil {
			return "", false, err
		}
		if (m.Role == RoleUser || m.Role == RoleAssistant) && len(m.ToolCalls) == 0 && strings.TrimSpace(m.Content) != "" {
			return next.String(), true, nil
		}
	}
	return "", false, nil
}

// termSet returns the index terms of text.
func termSet(text string) map[string]bool {
	out := map[string]bool{}
	for _, t := range index.Analyze(text) {
		out[t] = true
	}
	return out
}

// isEcho reports whether text says nothing the query (its terms qterms)
// does not: every content term of it is one of the query's, and it is a
// question or holds at least echoOverlap of the query's terms. buf is
// scratch space for the terms, returned for the next call.
func isEcho(text string, qterms map[string]bool, buf []string) (bool, []string) {
	question := isQuestion(text)
	if len(qterms) == 0 || (!question && len(text) > 4*len(qterms)*16) {
		return false, buf // far longer than the query: more to say
	}
	buf = index.AppendTerms(buf[:0], text)
	if len(buf) == 0 {
		return false, buf
	}
	distinct := 0
	for i, t := range buf {
		if !qterms[t] {
			return false, buf
		}
		if !slices.Contains(buf[:i], t) {
			distinct++
		}
	}
	return question || float64(distinct) >= echoOverlap*float64(len(qterms)), buf
}

// isQuestion reports whether a message asks: it ends in a question mark.
func isQuestion(text string) bool {
	return strings.HasSuffix(strings.TrimRight(text, " \t\r\n"), "?")
}
