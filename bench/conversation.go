package bench

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/engramdb/engram/memory"
)

// The pieces the conversation benchmarks (LoCoMo and LongMemEval) share:
// the retrieval modes, how a session is written, how a Recall's items
// become a ranking of turns or sessions, and the table of results.

// ConversationModes are the retrieval configurations [RunLocomo] and
// [RunLongMemEval] know: default (what a Query draws on by default:
// memories, episodes and the graph), bm25, vector and hybrid (earlier
// messages only, by BM25, by vector, or both), graph (earlier messages
// and the graph).
var ConversationModes = []string{"default", "bm25", "vector", "hybrid", "graph"}

// modeQuery returns the Recall query of a mode asking for topK items, or
// false for an unknown mode. The budget is large enough never to drop an
// item, and the window one message (the query's session holds none).
func modeQuery(mode string, topK int) (memory.Query, bool) {
	q := memory.Query{TopK: topK, MaxTokens: 1 << 20, MaxMessages: 1, Trace: true} // the keys come from the candidates
	switch mode {
	case "default":
		// Sources nil: what a Query draws on by default (memories,
		// episodes and the graph).
	case "bm25":
		q.Sources, q.Retrieval = []memory.Source{memory.SourceEpisodes}, memory.RetrievalLexical
	case "vector":
		q.Sources, q.Retrieval = []memory.Source{memory.SourceEpisodes}, memory.RetrievalVector
	case "hybrid":
		q.Sources = []memory.Source{memory.SourceEpisodes}
	case "graph":
		q.Sources = []memory.Source{memory.SourceEpisodes, memory.SourceGraph}
	default:
		return q, false
	}
	return q, true
}

// conversationSetup fills in a run's defaults: modes nil means
// "default", open nil an in-memory store with default options. It
// returns an error naming the first mode modeQuery does not know.
func conversationSetup(bench string, modes []string, open func() (*memory.Store, error)) ([]string, func() (*memory.Store, error), error) {
	if len(modes) == 0 {
		modes = []string{"default"}
	}
	for _, m := range modes {
		if _, ok := modeQuery(m, 1); !ok {
			return nil, nil, fmt.Errorf("bench: unknown %s mode %q (have %v)", bench, m, ConversationModes)
		}
	}
	if open == nil {
		open = func() (*memory.Store, error) { return memory.Open("", nil) }
	}
	return modes, open, nil
}

// writeSession appends msgs to the session of scope in one transaction
// and records keys[i] as the key of the i-th message's id in into.
func writeSession(ctx context.Context, store *memory.Store, scope memory.Scope, msgs []memory.Message, keys []string, into map[string]string) error {
	if len(msgs) == 0 {
		return nil
	}
	var b memory.Batch
	b.Append(scope, msgs...)
	res, err := store.Write(ctx, &b)
	if err != nil {
		return err
	}
	for i, id := range res.MessageIDs {
		into[id] = keys[i]
	}
	return nil
}

// rankedKeys returns the keys (a turn's dia id, a session's id) of the
// messages a Recall ranked, best first, each key once at the rank of its
// first appearance: its trace's candidates in final order, whether or not
// they fit the context, except those dropped as duplicates or for the
// query's filters. An episode is its message; a memory or a fact in the
// context (rec.Items) gives the message ids in its Source, in order. A
// memory or fact dropped before the context was filled ("top k") was
// never read, so its sources are unknown: it gives no key, and the
// benchmarks ask for more items than the largest cut-off so that those
// counted are enough. A message without a key (not one of the
// benchmark's, such as one of the query's own session) gives nothing.
func rankedKeys(rec *memory.Recollection, keys map[string]string) []string {
	type key struct {
		src memory.Source
		id  string
	}
	items := make(map[key]*memory.Item, len(rec.Items))
	for i := range rec.Items {
		it := &rec.Items[i]
		items[key{it.Source, it.ID}] = it
	}
	var out []string
	seen := map[string]bool{}
	add := func(msg string) {
		if d, ok := keys[msg]; ok && !seen[d] {
			seen[d] = true
			out = append(out, d)
		}
	}
	for _, c := range rec.Trace.Candidates {
		if c.Reason != "" && c.Reason != "top k" && c.Reason != "budget" {
			continue
		}
		if c.Source == memory.SourceEpisodes {
			add(c.ID)
			continue
		}
		it := items[key{c.Source, c.ID}]
		switch {
		case it == nil:
		case it.Memory != nil:
			for _, src := range it.Memory.Source {
				add(src)
			}
		case it.Fact != nil:
			add(it.Fact.Source)
		}
	}
	return out
}

// meanKey names one figure of a results table: a mode, a group of
// questions ("all", a category, a question type) and a column.
type meanKey struct {
	mode, group string
	col         int
}

// means averages figures per meanKey. Adding in a fixed order gives the
// same sums, so the same figures, on every run.
type means map[meanKey]*struct {
	sum float64
	n   int
}

func (m means) add(mode, group string, col int, v float64) {
	k := meanKey{mode, group, col}
	a := m[k]
	if a == nil {
		a = &struct {
			sum float64
			n   int
		}{}
		m[k] = a
	}
	a.sum += v
	a.n++
}

// groups returns the groups m holds figures of for mode, sorted, with
// "all" last.
func (m means) groups(mode string) []string {
	var gs []string
	for k := range m {
		if k.mode == mode && k.group != "all" && !slices.Contains(gs, k.group) {
			gs = append(gs, k.group)
		}
	}
	slices.Sort(gs)
	for k := range m {
		if k.mode == mode && k.group == "all" {
			return append(gs, "all")
		}
	}
	return gs
}

// tableLine is one line of a results table: a mode, a group of questions,
// how many, and the figures in column order.
type tableLine struct {
	mode, group string
	questions   int
	vals        []float64
}

// addTableValue sets column col (of ncols) of the line of mode and group
// to v: the last line of lines when it is theirs, else a new one.
func addTableValue(lines []tableLine, mode, group string, questions, col, ncols int, v float64) []tableLine {
	if n := len(lines); n == 0 || lines[n-1].mode != mode || lines[n-1].group != group {
		lines = append(lines, tableLine{mode: mode, group: group, questions: questions, vals: make([]float64, ncols)})
	}
	lines[len(lines)-1].vals[col] = v
	return lines
}

// writeTable prints lines as a Markdown table headed "mode", group,
// "questions" and cols.
func writeTable(w io.Writer, group string, cols []string, lines []tableLine) error {
	var b strings.Builder
	fmt.Fprintf(&b, "| mode | %s | questions |", group)
	for _, c := range cols {
		fmt.Fprintf(&b, " %s |", c)
	}
	b.WriteString("\n|---|---|---|")
	for range cols {
		b.WriteString("---|")
	}
	b.WriteString("\n")
	for _, l := range lines {
		fmt.Fprintf(&b, "| %s | %s | %d |", l.mode, l.group, l.questions)
		for _, v := range l.vals {
			fmt.Fprintf(&b, " %.3f |", v)
		}
		b.WriteString("\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}
