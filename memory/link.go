package memory

import (
	"context"
	"strings"
	"sync"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/index"
)

// maxLinkWords bounds the words of a name that entity linking matches:
// longer names are still entities, just not found in free text.
const maxLinkWords = 8

// maxCachedGraphs bounds the name sets the store keeps in memory.
const maxCachedGraphs = 1024

// maxCachedNames bounds the names of all cached sets together (issue 29:
// memory that follows the users in use, not their count or size): 1,024
// sets of a 20,000-entity graph each would be gigabytes; 2^18 names, at
// about 100 bytes each with their map entries, are about 25 MiB.
const maxCachedNames = 1 << 18

// nameSet is every name and alias of one graph, folded, with the display
// name each resolves to. It is safe for concurrent use: names and maxWords
// are not written after it is built, and analyzed has its lock.
type nameSet struct {
	names    map[string]string
	maxWords int

	mu struct {
		sync.Mutex
		// analyzed holds the BM25 terms of the graph's entity names and
		// predicates as recall's fact ranking met them (see
		// termMatcher): the same names come back query after query, and
		// the set is dropped with the rest on any write to the graph.
		analyzed map[string][]string
	}
}

// maxAnalyzed bounds nameSet.mu.analyzed, and so does twice the set's
// names and a few hundred predicates: it holds the graph's names and
// predicates. Past it texts are analyzed every time.
const maxAnalyzed = 1 << 14

// terms returns the BM25 terms of text, a name or predicate (its '_' as
// spaces) of the set's graph, analyzed once per set. Nil ns analyzes.
// The slice is shared: read, don't modify.
func (ns *nameSet) terms(text string) []string {
	if ns == nil {
		return index.Analyze(text)
	}
	ns.mu.Lock()
	t, ok := ns.mu.analyzed[text]
	ns.mu.Unlock()
	if ok {
		return t
	}
	t = index.Analyze(text)
	ns.mu.Lock()
	if ns.mu.analyzed == nil {
		ns.mu.analyzed = map[string][]string{}
	}
	if len(ns.mu.analyzed) < min(maxAnalyzed, 2*len(ns.names)+256) {
		ns.mu.analyzed[text] = t
	}
	ns.mu.Unlock()
	return t
}

// nameCache keeps the name sets of recently linked graphs. A write to a
// graph through the store bumps that graph's generation, and an erase (of
// graphs the cache may never have seen written) bumps the epoch, so a set
// built from an older snapshot is never cached over a newer one; a set is
// cached only if neither moved while it was read.
type nameCache struct {
	mu    sync.Mutex
	sets  map[string]*nameSet
	gens  map[string]uint64
	epoch uint64
	// names counts the names of the cached sets; maxNames bounds it
	// (maxCachedNames when zero; tests set less).
	names, maxNames int

	// built, when set (by tests), runs between reading a set and caching it.
	built func()
}

// invalidate drops the name set of the graph at root; call it after a
// write to that graph commits.
func (c *nameCache) invalidate(root []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens == nil || len(c.gens) >= 4*maxCachedGraphs {
		// Bound the generations: start afresh, and let the epoch stop
		// every set being read from being cached.
		c.gens = map[string]uint64{}
		c.epoch++
	}
	c.gens[string(root)]++
	c.dropLocked(string(root))
}

// dropLocked uncaches the set of root, if any; c.mu is held.
func (c *nameCache) dropLocked(root string) {
	if set, ok := c.sets[root]; ok {
		c.names -= len(set.names)
		delete(c.sets, root)
	}
}

// addLocked caches set for root, first evicting sets at random while the
// cache is at maxCachedGraphs sets or the names would pass their bound;
// c.mu is held.
func (c *nameCache) addLocked(root string, set *nameSet) {
	if c.sets == nil {
		c.sets = map[string]*nameSet{}
	}
	c.dropLocked(root)
	limit := c.maxNames
	if limit == 0 {
		limit = maxCachedNames
	}
	if len(set.names) > limit {
		return // larger than the whole cache: built on every use
	}
	for k := range c.sets {
		if len(c.sets) < maxCachedGraphs && c.names+len(set.names) <= limit {
			break
		}
		c.dropLocked(k)
	}
	c.sets[root] = set
	c.names += len(set.names)
}

// invalidatePrefix drops every name set under prefix (an erased scope).
func (c *nameCache) invalidatePrefix(prefix []byte) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	for root := range c.sets {
		if strings.HasPrefix(root, string(prefix)) {
			c.dropLocked(root)
		}
	}
	for root := range c.gens {
		if strings.HasPrefix(root, string(prefix)) {
			delete(c.gens, root)
		}
	}
}

// names returns the name set of scope's graph, building it on a miss.
func (s *Store) names(ctx context.Context, scope Scope) (*nameSet, error) {
	root, err := graphRoot(scope)
	if err != nil {
		return nil, err
	}
	c := &s.nameCache
	c.mu.Lock()
	if set, ok := c.sets[string(root)]; ok {
		c.mu.Unlock()
		return set, nil
	}
	gen, epoch := c.gens[string(root)], c.epoch
	c.mu.Unlock()

	set := &nameSet{names: map[string]string{}}
	err = s.ViewGraph(ctx, scope, func(g *graph.Tx) error {
		return g.Names(func(folded, display string) bool {
			set.names[folded] = display
			set.maxWords = max(set.maxWords, min(maxLinkWords, len(words(folded))))
			return true
		})
	})
	if err != nil {
		return nil, err
	}
	if c.built != nil {
		c.built()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.gens[string(root)] == gen && c.epoch == epoch {
		c.addLocked(string(root), set)
	}
	return set, nil
}

// span is a word of a text: a maximal run of letters and digits.
type span struct{ start, end int }

// words splits text into its words.
func words(text string) []span {
	var out []span
	start := -1
	for i, r := range text {
		in := unicode.IsLetter(r) || unicode.IsDigit(r) || unicode.Is(unicode.Mn, r)
		switch {
		case in && start < 0:
			start = i
		case !in && start >= 0:
			out = append(out, span{start, i})
			start = -1
		}
	}
	if start >= 0 {
		out = append(out, span{start, len(text)})
	}
	return out
}

// firstPerson holds the words by which a query's author names themself:
// "I'm" and "I've" split into "I" and a suffix (see words).
var firstPerson = map[string]bool{"i": true, "me": true, "my": true, "mine": true, "myself": true}

// requestWords are the words of asking for what is known rather than of
// what it is about: "Tell me about Dana", "What do you know about Dana?",
// "Give me the details on Dana". They are not content terms of a query
// (see contentTerms), and a first-person word right after one ("tell me",
// "remind me") is the one asked, not a mention of the user. General
// English, not drawn from any benchmark's questions.
var requestWords = map[string]bool{
	"tell": true, "know": true, "remind": true, "remember": true, "recall": true,
	"show": true, "give": true, "describe": true, "detail": true, "details": true,
	"info": true, "information": true, "anything": true, "everything": true, "something": true,
}

// requestTerms are requestWords as BM25 terms (stemmed).
var requestTerms = func() map[string]bool {
	m := map[string]bool{}
	for w := range requestWords {
		for _, t := range index.Analyze(w) {
			m[t] = true
		}
	}
	return m
}()

// link finds the entities a text names, in one pass: at each word it tries
// the longest run of words (up to the longest name in the set) whose folded
// text is a name or alias, takes the longest match and continues after it.
// Matches sit on word boundaries, compare folded (case and white space do
// not matter) and must be at least two characters long. It returns the
// display names of the entities, each once, in order of first mention.
func (ns *nameSet) link(text string) []string {
	names, _ := ns.linkAs(text, "")
	return names
}

// linkAs is link for a text written by the user whose own entity is self
// (a display name, or "" for none): the first-person words "I", "me", "my",
// "mine" and "myself" name self. It returns the entities, each once, in
// order of first mention, and the spans of text that named them (every
// mention, in order), so that the rest of the text can be weighed apart.
func (ns *nameSet) linkAs(text, self string) ([]string, []span) {
	if len(ns.names) == 0 {
		return nil, nil
	}
	ws := words(text)
	var out []string
	var at []span
	seen := map[string]bool{}
	mention := func(display string, s span) {
		if !seen[display] {
			seen[display] = true
			out = append(out, display)
		}
		at = append(at, s)
	}
	for i := 0; i < len(ws); {
		if self != "" && firstPerson[graph.Fold(text[ws[i].start:ws[i].end])] {
			if i == 0 || !requestWords[graph.Fold(text[ws[i-1].start:ws[i-1].end])] {
				mention(self, ws[i])
			}
			i++
			continue
		}
		matched := 0
		for n := min(ns.maxWords, len(ws)-i); n >= 1; n-- {
			cand := text[ws[i].start:ws[i+n-1].end]
			if utf8.RuneCountInString(cand) < 2 {
				continue
			}
			if display, ok := ns.names[graph.Fold(cand)]; ok {
				mention(display, span{ws[i].start, ws[i+n-1].end})
				matched = n
				break
			}
		}
		i += max(matched, 1)
	}
	return out, at
}
