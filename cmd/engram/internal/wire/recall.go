package wire

import (
	"slices"
	"time"

	"github.com/engramdb/engram/memory"
)

// Recall is the JSON of a [memory.Recollection] without its messages, which
// each interface writes in its own shape: the recalled items and the trace.
// Embed it in a response to have its fields at the response's top level.
//
// It is a plain value, safe for concurrent reads. [NewRecall] copies the
// items and candidates but shares the recollection's entities, lists, ranks,
// scores and records, so neither should change while it is in use.
type Recall struct {
	// Items are the recalled memories, episodes and facts in the context,
	// best first.
	Items []Item `json:"items" jsonschema:"the recalled memories, episodes and facts in the context, best first"`
	// Trace says how every candidate was scored; only for a recall that
	// asked for it (memory.Query.Trace), nil otherwise.
	Trace *Trace `json:"trace,omitempty" jsonschema:"how every candidate was scored, and why it was kept or dropped; only when the recall asked for it (trace: true)"`
}

// Item is the JSON of a [memory.Item]: one recalled memory, episode or
// fact.
type Item struct {
	// ID is the memory's, the message's or the fact's id.
	ID string `json:"id" jsonschema:"the memory's, the message's or the fact's id"`
	// Source is memories, shared, episodes or graph.
	Source memory.Source `json:"source" jsonschema:"memories, shared, episodes or graph"`
	// Text is how the item appears in the preamble, without its date.
	Text string `json:"text" jsonschema:"the item as the preamble has it, without its date"`
	// Time is when it was remembered, said or became valid.
	Time time.Time `json:"time,omitzero" jsonschema:"when it was remembered, said or became valid"`
	// Session is the session an episode was said in.
	Session string `json:"session,omitempty" jsonschema:"the session an episode was said in"`
	// Score is the item's final score: fused, then decayed.
	Score float64 `json:"score" jsonschema:"the final score: reciprocal-rank fusion after recency decay"`
	// Memory is the whole record of a memory, Fact of a fact.
	Memory *memory.Memory `json:"memory,omitempty" jsonschema:"the whole record, for a memory"`
	Fact   *memory.Fact   `json:"fact,omitempty" jsonschema:"the whole record, for a fact"`
}

// Trace is the JSON of a [memory.Trace]: how a Recall chose its context.
type Trace struct {
	// Entities are the graph entities the query named.
	Entities []string `json:"entities" jsonschema:"the graph entities the query named"`
	// Lists are the ranked lists fused, with how many candidates each gave.
	Lists map[string]int `json:"lists" jsonschema:"the ranked lists fused, with how many candidates each gave"`
	// When is the time expression the query named and its resolved span.
	When *When `json:"when,omitempty" jsonschema:"the time expression the query named, resolved against its time; items from that span ranked higher"`
	// Candidates are every candidate, best first, kept or dropped.
	Candidates []Candidate `json:"candidates" jsonschema:"every candidate, best first, kept or dropped"`
	// Budget is the token budget; the other token counts are what the
	// window, the summary and the whole preamble took, and their total.
	Budget         int `json:"budget" jsonschema:"the token budget of the whole context"`
	WindowTokens   int `json:"window_tokens" jsonschema:"the tokens the window took"`
	SummaryTokens  int `json:"summary_tokens" jsonschema:"the tokens the summary took"`
	PreambleTokens int `json:"preamble_tokens" jsonschema:"the tokens the preamble took, summary included"`
	TokensUsed     int `json:"tokens_used" jsonschema:"the tokens of the whole context, never above the budget"`
	// TookMS is how long the Recall took in milliseconds, EmbedMS the part
	// spent embedding the query.
	TookMS  float64 `json:"took_ms" jsonschema:"how long the recall took, in milliseconds"`
	EmbedMS float64 `json:"embed_ms" jsonschema:"the part of took_ms spent embedding the query"`
}

// Candidate is the JSON of a [memory.Candidate]: one memory, episode or
// fact that a ranked list returned.
type Candidate struct {
	// ID, Source, Text and Time are as in [Item]; Text and Time are empty
	// for a candidate dropped before its record was read.
	ID     string        `json:"id" jsonschema:"the memory's, the message's or the fact's id"`
	Source memory.Source `json:"source" jsonschema:"memories, shared, episodes or graph"`
	Text   string        `json:"text,omitempty" jsonschema:"the text, when its record was read"`
	Time   time.Time     `json:"time,omitzero" jsonschema:"its time, when its record was read"`
	// Ranks holds its 1-based rank in each list that returned it, Scores
	// its score there.
	Ranks  map[string]int     `json:"ranks" jsonschema:"1-based rank in each ranked list that returned it"`
	Scores map[string]float64 `json:"scores" jsonschema:"score in each ranked list (cosine, BM25, or 1/(1+hops) for the graph)"`
	// Fused is the reciprocal-rank fusion score after recency decay.
	Fused float64 `json:"fused" jsonschema:"reciprocal-rank fusion score after recency decay"`
	// Boost is the factor the fused score was multiplied by once the
	// record was read (0: none).
	Boost float64 `json:"boost,omitempty" jsonschema:"the factor the fused score was multiplied by once the record was read: above 1 for an item from the span of time the query names, below 1 for an earlier message the query repeats"`
	// Rank is its 1-based place in the final order.
	Rank int `json:"rank" jsonschema:"1-based place in the final order"`
	// Kept says whether it is in the context, Reason why not.
	Kept   bool   `json:"kept" jsonschema:"whether it is in the context"`
	Reason string `json:"reason,omitempty" jsonschema:"why it was dropped: top k, budget, duplicate of ID, expired, outside time range, in window"`
	// Tokens is what it takes in the preamble, when kept.
	Tokens int `json:"tokens,omitempty" jsonschema:"the tokens it takes in the preamble, when kept"`
}

// When is the JSON of a [memory.TimeSpan].
type When struct {
	Phrase   string    `json:"phrase" jsonschema:"the expression as written, lower case"`
	Resolved string    `json:"resolved" jsonschema:"what the date resolver made of it"`
	From     time.Time `json:"from" jsonschema:"the start of the span, inclusive"`
	To       time.Time `json:"to" jsonschema:"the end of the span, exclusive"`
}

// NewRecall returns the items and trace of rec, with empty slices and maps
// where rec has nil ones. The trace is there only when the Recall asked for
// it (memory.Query.Trace, which gives it a non-nil Candidates).
func NewRecall(rec *memory.Recollection) Recall {
	out := Recall{Items: make([]Item, 0, len(rec.Items))}
	if rec.Trace.Candidates != nil {
		tr := newTrace(&rec.Trace)
		out.Trace = &tr
	}
	for _, it := range rec.Items {
		out.Items = append(out.Items, Item{ID: it.ID, Source: it.Source, Text: it.Text, Time: it.Time,
			Session: it.Session, Score: it.Score, Memory: it.Memory, Fact: it.Fact})
	}
	return out
}

func newTrace(t *memory.Trace) Trace {
	out := Trace{
		Entities:       nonNil(t.Entities),
		Lists:          nonNilMap(t.Lists),
		Candidates:     make([]Candidate, 0, len(t.Candidates)),
		Budget:         t.Budget,
		WindowTokens:   t.WindowTokens,
		SummaryTokens:  t.SummaryTokens,
		PreambleTokens: t.PreambleTokens,
		TokensUsed:     t.TokensUsed,
		TookMS:         millis(t.Took),
		EmbedMS:        millis(t.Embed),
	}
	if w := t.When; w != nil {
		out.When = &When{Phrase: w.Phrase, Resolved: w.Resolved, From: w.From, To: w.To}
	}
	for _, c := range t.Candidates {
		out.Candidates = append(out.Candidates, Candidate{ID: c.ID, Source: c.Source, Text: c.Text, Time: c.Time,
			Ranks: nonNilMap(c.Ranks), Scores: nonNilMap(c.Scores), Fused: c.Fused, Boost: c.Boost, Rank: c.Rank, Kept: c.Kept,
			Reason: c.Reason, Tokens: c.Tokens})
	}
	return out
}

func millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func nonNilMap[K comparable, V any](m map[K]V) map[K]V {
	if m == nil {
		return map[K]V{}
	}
	return m
}

// WithShared returns sources with the tenant's shared memories
// ([memory.SourceShared]) added, to the default sources
// ([memory.DefaultSources]) when sources is empty: what "shared": true
// asks of a recall over HTTP and MCP. sources is not changed.
func WithShared(sources []memory.Source) []memory.Source {
	if len(sources) == 0 {
		sources = memory.DefaultSources()
	}
	if slices.Contains(sources, memory.SourceShared) {
		return sources
	}
	return append(slices.Clip(sources), memory.SourceShared)
}
