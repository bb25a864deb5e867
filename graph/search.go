package graph

import (
	"bytes"
	"index/suffixarray"
	"slices"
	"sort"
	"strings"
)

// The in-memory search index of one graph (searchIndex): what
// SearchNodes matches, held so that a search costs about the length of the
// query times log n plus the matches, not a decode of every entity.
//
// base holds every entity's searchable text (searchText: its folded name,
// type, aliases and observations, each followed by searchSep) back to back
// in folded-name order, and a suffix array over it (index/suffixarray). A
// query folded to q finds every offset where q starts; the entity of an
// offset is the last start at or before it. Entities changed since the
// array was built live in delta (folded name → text, "" and gone for a
// deleted one) and are masked out of base; delta is scanned. When delta
// passes a fraction of base (compactAt), the next search builds base
// again from the texts in memory, so a write never pays O(n).
//
// A searchIndex is not safe for concurrent use; graphIndex (searchstate.go)
// locks it.

// searchSep ends each field of a searchable text. A folded query that
// holds it could match across two fields, so such a query scans instead.
const searchSep = 0

// searchText returns what SearchNodes matches in e: each field folded and
// followed by searchSep.
func searchText(e *Entity) string {
	var b strings.Builder
	add := func(s string) {
		b.WriteString(Fold(s))
		b.WriteByte(searchSep)
	}
	add(e.Name)
	add(e.Type)
	for _, a := range e.Aliases {
		add(a)
	}
	for _, o := range e.Observations {
		add(o)
	}
	return b.String()
}

// deltaEntry is an entity changed since base was built.
type deltaEntry struct {
	text string
	gone bool
}

type searchIndex struct {
	names  []string // folded names in order
	starts []int32  // starts[i] is where names[i]'s text begins in data
	data   []byte
	sa     *suffixarray.Index
	delta  map[string]deltaEntry
	masked []bool // masked[i]: names[i] is in delta
	nMask  int
}

// newSearchIndex builds an index of the texts by folded name.
func newSearchIndex(texts map[string]string) *searchIndex {
	names := make([]string, 0, len(texts))
	size := 0
	for n, t := range texts {
		names = append(names, n)
		size += len(t)
	}
	slices.Sort(names)
	x := &searchIndex{names: names, starts: make([]int32, len(names)), data: make([]byte, 0, size)}
	for i, n := range names {
		x.starts[i] = int32(len(x.data))
		x.data = append(x.data, texts[n]...)
	}
	x.sa = suffixarray.New(x.data)
	x.delta = map[string]deltaEntry{}
	x.masked = make([]bool, len(names))
	return x
}

// text returns base entity i's text.
func (x *searchIndex) text(i int) []byte {
	end := len(x.data)
	if i+1 < len(x.starts) {
		end = int(x.starts[i+1])
	}
	return x.data[x.starts[i]:end]
}

// find returns the base position of folded, and whether it is there.
func (x *searchIndex) find(folded string) (int, bool) {
	return slices.BinarySearch(x.names, folded)
}

// set records that the entity folded now has text (gone: it was deleted).
func (x *searchIndex) set(folded, text string, gone bool) {
	x.delta[folded] = deltaEntry{text: text, gone: gone}
	if i, ok := x.find(folded); ok && !x.masked[i] {
		x.masked[i] = true
		x.nMask++
	}
}

// textsWith returns every live entity's text with delta as the changes
// over base: base's names not in delta, then delta's live ones. It reads
// only what never changes after newSearchIndex (names, starts, data), so
// it may run without the lock given a copy of delta.
func (x *searchIndex) textsWith(delta map[string]deltaEntry) map[string]string {
	m := make(map[string]string, len(x.names)+len(delta))
	for i, n := range x.names {
		if _, changed := delta[n]; !changed {
			m[n] = string(x.text(i))
		}
	}
	for n, d := range delta {
		if !d.gone {
			m[n] = d.text
		}
	}
	return m
}

// compactAt is the delta size at which a search builds base again: an
// eighth of base, and at least 1,024 entities, so the rebuild's O(n) is
// paid once per n/8 writes and a search scans at most that many texts.
func (x *searchIndex) compactAt() int { return max(1024, len(x.names)/8) }

// compactDue reports whether delta has grown past compactAt.
func (x *searchIndex) compactDue() bool { return len(x.delta) >= x.compactAt() }

// compacted returns a new index of x's base with delta (a copy of x's,
// taken earlier) folded in.
func (x *searchIndex) compacted(delta map[string]deltaEntry) *searchIndex {
	return newSearchIndex(x.textsWith(delta))
}

// catchUp applies to y the changes x took since delta was copied from it.
func (x *searchIndex) catchUp(y *searchIndex, delta map[string]deltaEntry) {
	for n, d := range x.delta {
		if old, ok := delta[n]; !ok || old != d {
			y.set(n, d.text, d.gone)
		}
	}
}

// size estimates the bytes the index holds.
func (x *searchIndex) size() int64 {
	n := int64(len(x.data))*5 + int64(len(x.names))*(16+4+1) // data, suffix array (int32), names, starts, mask
	for _, s := range x.names {
		n += int64(len(s))
	}
	for k, d := range x.delta {
		n += int64(len(k)+len(d.text)) + 64
	}
	return n
}

// search returns the folded names of the first limit entities, in order,
// whose text contains q (folded, free of searchSep).
func (x *searchIndex) search(q string, limit int) []string {
	out := x.deltaMatches(q)
	var base []string
	if q == "" {
		base = x.walk(q, limit)
	} else {
		// An entity may hold q more than once; asking for a few times
		// limit offsets tells a rare query from a common one.
		cap := 8*limit + 64
		offs := x.sa.Lookup([]byte(q), cap+1)
		if len(offs) > cap {
			base = x.walk(q, limit)
		} else {
			base = x.entitiesAt(offs, limit)
		}
	}
	out = append(out, base...)
	slices.Sort(out)
	if len(out) > limit {
		out = out[:limit]
	}
	return out
}

// deltaMatches returns the changed entities whose text contains q.
func (x *searchIndex) deltaMatches(q string) []string {
	var out []string
	for n, d := range x.delta {
		if !d.gone && strings.Contains(d.text, q) {
			out = append(out, n)
		}
	}
	return out
}

// walk returns the first limit unmasked base entities, in order, whose
// text contains q: the way the scan finds a common query.
func (x *searchIndex) walk(q string, limit int) []string {
	var out []string
	qb := []byte(q)
	for i := 0; i < len(x.names) && len(out) < limit; i++ {
		if !x.masked[i] && bytes.Contains(x.text(i), qb) {
			out = append(out, x.names[i])
		}
	}
	return out
}

// entitiesAt returns the first limit unmasked base entities, in order,
// that hold one of the offsets.
func (x *searchIndex) entitiesAt(offs []int, limit int) []string {
	ids := make([]int, 0, len(offs))
	for _, o := range offs {
		i := sort.Search(len(x.starts), func(i int) bool { return int(x.starts[i]) > o }) - 1
		if !x.masked[i] {
			ids = append(ids, i)
		}
	}
	slices.Sort(ids)
	ids = slices.Compact(ids)
	if len(ids) > limit {
		ids = ids[:limit]
	}
	out := make([]string, len(ids))
	for j, i := range ids {
		out[j] = x.names[i]
	}
	return out
}
