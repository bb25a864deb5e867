package memory

import (
	"context"
	"strings"
	"time"
	"unicode"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory/internal/bpe"
)

// itemLine renders one recalled item as a preamble line, dated.
func itemLine(it *Item) string {
	var b strings.Builder
	b.WriteString("- ")
	switch it.Source {
	case SourceMemories, SourceShared:
		b.WriteString(memoryLinePrefix(it)[1:] + " " + it.Text) // "- " is written
	case SourceEpisodes:
		b.WriteString("[" + it.Time.UTC().Format("2006-01-02 15:04"))
		if it.Session != "" {
			b.WriteString(", session " + it.Session)
		}
		b.WriteString("] " + it.Text)
	case SourceGraph:
		b.WriteString(it.Text)
		var buf [48]byte
		b.Write(appendFactSuffix(buf[:0], it.Fact))
	}
	return oneLine(b.String())
}

// appendFactSuffix appends the end of a fact's preamble line, after its
// text, to b: its validity, " (2026-01-02 to 2026-03-04)" or " (since
// 2026-01-02)", or nothing. f may be nil.
func appendFactSuffix(b []byte, f *Fact) []byte {
	if f == nil || f.ValidFrom.IsZero() {
		return b
	}
	b = append(b, " ("...)
	if !f.ValidTo.IsZero() {
		b = f.ValidFrom.UTC().AppendFormat(b, "2006-01-02")
		b = append(b, " to "...)
		b = f.ValidTo.UTC().AppendFormat(b, "2006-01-02")
	} else {
		b = append(b, "since "...)
		b = f.ValidFrom.UTC().AppendFormat(b, "2006-01-02")
	}
	return append(b, ')')
}

// oneLine returns s with its white space collapsed as
// strings.Join(strings.Fields(s), " ") does: runs of white space become
// one space, none at either end. A line that is one already (most are)
// is returned as it is, without the copy.
func oneLine(s string) string {
	space := true // before the first rune: a leading space must go
	for _, r := range s {
		switch {
		case r == ' ' && !space:
			space = true
		case r == ' ' || unicode.IsSpace(r):
			return strings.Join(strings.Fields(s), " ")
		default:
			space = false
		}
	}
	if space && s != "" {
		return strings.Join(strings.Fields(s), " ") // a trailing space
	}
	return s
}

// memoryLinePrefix returns the start of a memory's preamble line, before
// the space and the text: "-", "- [2026-01-02]", "- (preference)" or both.
func memoryLinePrefix(it *Item) string {
	var buf [48]byte
	return string(appendMemoryLinePrefix(buf[:0], it))
}

// appendMemoryLinePrefix appends memoryLinePrefix(it) to b.
func appendMemoryLinePrefix(b []byte, it *Item) []byte {
	b = append(b, '-')
	if !it.Time.IsZero() {
		b = append(b, " ["...)
		b = it.Time.UTC().AppendFormat(b, "2006-01-02")
		b = append(b, ']')
	}
	if it.Memory != nil && it.Memory.Kind != KindFact {
		b = append(b, " ("...)
		b = append(b, it.Memory.Kind...)
		b = append(b, ')')
	}
	return b
}

// lineTokens returns the tokens of c's preamble line: for a memory or an
// episode whose record holds its text's count in the store's encoding,
// that count and the prefix's (see memoryTextTokens); for a fact, what
// hydrator.factTokens found (the cached line count, or its text's count
// and its line's other pieces: factLineTokens); otherwise the line
// counted, through the cache. line is the line when it was rendered, else
// "". A record written before counts were stored is counted here (the
// cache spares a repeat), and its count written back off the read path
// (hydrator.countLine queues it; see writeback.go).
func (s *Store) lineTokens(enc *bpe.Encoder, c *Candidate) (n int, line string) {
	switch {
	case c.Source != SourceGraph:
	case c.lineCount > 0:
		return c.lineCount, c.line
	case c.factTokens > 0:
		// Cached, so that the next turn finds the line without a read.
		n := factLineTokens(enc, c.item.Fact, c.factTokens)
		textTokens.add(c.lineKey, n)
		return n, c.line
	case c.line != "":
		return textTokens.count(enc, c.line), c.line
	}
	if c.tokenMeta != "" {
		if n, ok := parseTextTokens(c.tokenMeta, s.opts.Encoding, len(c.item.Text)); ok {
			var buf [48]byte
			switch c.Source {
			case SourceMemories, SourceShared:
				return countPrefixBytes(enc, appendMemoryLinePrefix(buf[:0], &c.item)) + n, ""
			case SourceEpisodes:
				return episodeTimeTokens(enc, c.item.Time) + n, ""
			}
		}
	}
	line = itemLine(&c.item)
	return textTokens.count(enc, line), line
}

// countLine is Store.lineTokens of c that also queues c's count to be
// written back when c is a record stored without one (see writeback.go).
func (h *hydrator) countLine(enc *bpe.Encoder, c *Candidate) (n int, line string) {
	n, line = h.s.lineTokens(enc, c)
	if line != "" && c.Source != SourceGraph {
		h.s.writeBack.queueRecord(ownerOf(c.Source, h.user), spaceOf(c.Source), c.ID)
	}
	return n, line
}

// factLineTokens returns the tokens of a fact's preamble line whose text
// counts n (memoryTextTokens of factText): "-", then " " and the text, then
// the validity (see appendFactSuffix). Every encoding cuts after the "-"
// and before the suffix's space (see exactCut), so the pieces' counts add
// up to the line's (TestFactLineTokens).
func factLineTokens(enc *bpe.Encoder, f *Fact, n int) int {
	var buf [48]byte
	return countPrefix(enc, "-") + n + countPrefixBytes(enc, appendFactSuffix(buf[:0], f))
}

// episodeTimeTokens returns the tokens of the start of an episode's line,
// its time, "- [2026-01-02 15:04", as two cached pieces (the day, the
// minute) that every encoding cuts apart (a digit, then a space; see
// exactCut), as it cuts after the minute (a digit, then punctuation): the
// rest of the line is what episodeTextTokens counts.
func episodeTimeTokens(enc *bpe.Encoder, t time.Time) int {
	var buf [24]byte
	t = t.UTC()
	b := append(buf[:0], "- ["...)
	n := countPrefixBytes(enc, t.AppendFormat(b, "2006-01-02"))
	return n + countPrefixBytes(enc, t.AppendFormat(buf[:0], " 15:04"))
}

// renderPreamble lays out the summary and the items, grouped by source in
// rank order within each group, the groups in the order of recallSources.
// lines, when not nil, holds the items' lines already rendered (see
// itemLine), "" for one that was not.
func renderPreamble(now time.Time, summary string, items []Item, lines []string) string {
	if summary == "" && len(items) == 0 {
		return ""
	}
	var b strings.Builder
	b.WriteString("Context recalled from memory (now: " + now.UTC().Format("2006-01-02 15:04 MST") + ").")
	if summary != "" {
		b.WriteString("\n\nSummary of this conversation so far:\n" + summary)
	}
	for _, sec := range recallSources {
		first := true
		for i := range items {
			if items[i].Source != sec.source {
				continue
			}
			if first {
				b.WriteString("\n\n" + sec.title)
				first = false
			}
			b.WriteByte('\n')
			if i < len(lines) && lines[i] != "" {
				b.WriteString(lines[i])
			} else {
				b.WriteString(itemLine(&items[i]))
			}
		}
	}
	return b.String()
}

// assemble picks the items for the preamble, best first, while they fit
// the tokens the window left, and fills rec. Every candidate's Kept and
// Reason are settled.
func (s *Store) assemble(ctx context.Context, enc *bpe.Encoder, h *hydrator, rec *Recollection, cands []*Candidate, q *Query) error {
	budget := q.MaxTokens - rec.Trace.WindowTokens
	count := func(text string) int {
		if text == "" {
			return 0
		}
		m := Message{Role: RoleSystem, Content: text}
		return countTokens(enc, &m)
	}
	summary := rec.Summary
	if summary != "" {
		rec.Trace.SummaryTokens = textTokens.count(enc, summary) // the same summary turn after turn
	}
	// Estimate with per-line counts, then check the whole text exactly and
	// back off while it is over: the budget always holds. The estimate
	// starts from the framing, the header with every section title, and the
	// summary.
	frame := preambleFrameTokens(enc) // the system message's framing, role and fixed text
	used := frame + rec.Trace.SummaryTokens
	if summary != "" && used > budget {
		summary, rec.Trace.SummaryTokens = "", 0 // it does not fit; the items may
		used = frame
	}
	var kept []*Candidate
	var lines []string          // kept's lines, when rendered to be counted
	seen := map[string]string{} // folded text → id of the first with it
	for i, c := range cands {
		if !c.hydrated && len(kept) < q.TopK {
			// Read the records of the next candidates that could fit.
			if err := h.hydrateNext(ctx, cands[i:], q.TopK-len(kept)+4); err != nil {
				return err
			}
		}
		if c.Reason != "" {
			continue
		}
		if len(kept) >= q.TopK {
			c.Reason = "top k"
			continue
		}
		key := graph.Fold(c.Text)
		if first, ok := seen[key]; ok {
			c.Reason = "duplicate of " + first
			continue
		}
		seen[key] = c.ID
		h.factTokens(enc, c)
		n, line := h.countLine(enc, c)
		c.Tokens = n + 1 // and its newline
		if used+c.Tokens > budget {
			c.Reason = "budget"
			continue
		}
		used += c.Tokens
		kept = append(kept, c)
		lines = append(lines, line)
	}
	items := func() []Item {
		out := make([]Item, len(kept))
		for i, c := range kept {
			out[i] = c.item
		}
		return out
	}
	// The estimate adds up pieces that the tokenizer would split the same
	// way, so the whole text never takes more (the budget property test
	// checks this); only an estimate near the budget is worth the exact
	// count, which costs as much as all the line counts together.
	pre := renderPreamble(q.Now, summary, items(), lines)
	n := used
	if len(kept) == 0 && summary == "" {
		n = 0
	}
	if n > budget-budget/20-8 {
		n = count(pre)
	}
	for n > budget && (len(kept) > 0 || summary != "") {
		if len(kept) == 0 {
			summary = ""
			rec.Trace.SummaryTokens = 0
		} else {
			kept[len(kept)-1].Reason = "budget"
			kept, lines = kept[:len(kept)-1], lines[:len(lines)-1]
		}
		pre = renderPreamble(q.Now, summary, items(), lines)
		n = count(pre)
	}
	if len(kept) == 0 && summary == "" {
		pre, n = "", 0 // no preamble at all: nothing fit
	}
	for _, c := range kept {
		c.Kept = true
	}
	rec.Summary = summary
	rec.Items = items()
	rec.Preamble = pre
	rec.Trace.PreambleTokens = n
	rec.Trace.TokensUsed = rec.Trace.WindowTokens + rec.Trace.PreambleTokens
	return nil
}

// hydrateNext hydrates the first candidates of cands, as many as it takes
// to include n that are still in play (no Reason yet), or all of them.
func (h *hydrator) hydrateNext(ctx context.Context, cands []*Candidate, n int) error {
	end := 0
	for k := 0; end < len(cands) && k < n; end++ {
		if cands[end].Reason == "" {
			k++
		}
	}
	return h.hydrate(ctx, cands[:end])
}

// preambleFrame is the preamble's fixed text: its header (the date has a
// fixed width) and every section title, with a summary heading.
var preambleFrame = func() string {
	items := make([]Item, len(recallSources))
	for i := range recallSources {
		items[i].Source = recallSources[i].source
	}
	return renderPreamble(time.Time{}, "x", items, nil)
}()
