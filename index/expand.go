package index

import (
	"fmt"
	"slices"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/engramdb/engram/index/wordnet"
)

// Query expansion parameters, chosen on the LoCoMo sample (see
// bench/results/recall.md, "Issue 16: WordNet synonyms"): synonym weights
// 0.25 to 1, sense shares 0.1 to 1, hypernyms at 0.1 and 0.25, and the
// three ways of counting below were tried.
const (
	// synonymWeight is the weight of a synonym's BM25 score, against 1
	// for the query's own terms. 0.5 and 0.75 scored alike; 1 lost an
	// open-domain question.
	synonymWeight = 0.5
	// senseShare keeps the senses whose tag count is at least this share
	// of the word's most frequent sense: car's first sense (71 tags, the
	// automobile) but not its second (2 tags, the railway car). 0.25 and
	// 1 lost the gain (recall@10 0.731); with synonyms counted apart from
	// the word, 0.25 and 0.1 lost single-hop questions.
	senseShare = 0.5
	// minExpandLen is the shortest word expanded, in bytes.
	minExpandLen = 3
	// maxExpandWords bounds the distinct words of one query that are
	// expanded, the first ones in the query: a question has a handful, and
	// a long text given as a query must not cost a lookup per word.
	maxExpandWords = 64
)

// Hypernyms are not used: at weight 0.1 and 0.25 they lowered BM25's
// temporal recall@10 (0.946 to 0.919). Synonyms of one word do not add
// up: a word and its synonyms are one group of [WeightedTerm], so a
// document counts the best of them once. Adding each synonym's score
// (recall@10 0.727 in default mode) or only grouping the synonyms apart
// from the word (0.727) did worse than the group (0.737); see the results
// file.

// ExpandQuery returns the terms of query for [BM25.SearchWeighted]: the
// terms [Analyze] finds, at weight 1, and for each word worth expanding
// the analyzed one-word synonyms of its frequent WordNet senses at weight
// ½, in one group with the word's own term, so that a document holding the
// word, a synonym or both counts the best of them once (see
// [WeightedTerm.Group]). A word is expanded when it is a plain word (no
// digit or joiner, so numbers and identifiers are not), not a stop word
// (those are dropped) nor a modal verb ("will", "can", "may"), at least
// three letters long, and not a proper name: a
// word that starts with a capital letter anywhere but at the start of a
// sentence, and a word in capitals of two letters or more ("NASA"), are
// taken as names. Its base forms come from WordNet's morphology (the
// exception lists and suffix rules: "bought" to "buy", "cars" to "car"),
// as a noun and as a verb; the senses kept are those tagged at least half
// as often as the word's most frequent sense (or its first sense, when
// none is tagged), and of their members only one-word lemmas for which
// the same synset is a kept sense too ("machine" does not expand "car").
// A synonym whose term is already a term of the query is not added again.
//
// The table loads on the first call (see [wordnet.Load]); an error wraps
// [wordnet.ErrCorrupt]. A query with no terms returns nil, nil.
func ExpandQuery(query string) ([]WeightedTerm, error) {
	tab, err := wordnet.Load()
	if err != nil {
		return nil, fmt.Errorf("index: expand query: %w", err)
	}
	text := query
	if !isASCII(text) {
		text = norm.NFKC.String(text)
	}
	var out []WeightedTerm
	// words are the occurrences worth expanding: the lower-case word
	// (possessive trimmed) and the index in out of its term.
	type word struct {
		lower string
		at    int
	}
	var words []word
	sentenceStart := true
	for i := 0; i < len(text); {
		r, n := decodeRune(text, i)
		switch runeClass(r) {
		case clsWord:
			end, fl := scanToken(text, i)
			tok := text[i:end]
			before := len(out)
			out = appendWeighted(out, tok, fl)
			if len(out) > before && expandable(tok, fl, sentenceStart) {
				lower := tok
				if fl&tokUpper != 0 {
					lower = toLowerASCII(tok)
				}
				if fl&tokApos != 0 {
					lower = trimPossessive(lower)
				}
				if isPlainWord(lower) && !modals[lower] {
					words = append(words, word{lower, len(out) - 1})
				}
			}
			sentenceStart = false
			i = end
		case clsIdeo:
			out = append(out, WeightedTerm{Term: text[i : i+n], Weight: 1})
			sentenceStart = false
			i += n
		default:
			switch r {
			case '.', '!', '?', '\n':
				sentenceStart = true
			}
			i += n
		}
	}
	if len(out) == 0 {
		return nil, nil
	}
	orig := make(map[string]bool, len(out))
	for _, t := range out {
		orig[t.Term] = true
	}
	// Each distinct word is looked up once, the first maxExpandWords of
	// them; every occurrence of a word with synonyms joins its group.
	type expansion struct {
		group uint32
		syns  []string // its synonyms' terms; none: the word is not expanded
	}
	expanded := map[string]*expansion{}
	for _, w := range words {
		e := expanded[w.lower]
		if e == nil {
			if len(expanded) == maxExpandWords {
				continue
			}
			e = &expansion{group: uint32(len(expanded) + 1)}
			expanded[w.lower] = e
			for _, syn := range synonyms(tab, w.lower) {
				terms := Analyze(syn)
				if len(terms) == 1 && !orig[terms[0]] && !slices.Contains(e.syns, terms[0]) {
					e.syns = append(e.syns, terms[0])
				}
			}
		}
		if len(e.syns) > 0 {
			// The word joins its synonyms' group: a document holding both
			// counts the better of them, once.
			out[w.at].Group = e.group
		}
	}
	// A term said n times is one term of n times the weight: the same
	// score for a term of group 0, and for a group, whose best term counts,
	// n times its best (the group's weights all scale with its word's
	// count). Synonyms go after the query's own terms, word by word.
	merged := out[:0]
	at := make(map[WeightedTerm]int, len(out)) // by term and group, weight 0
	count := map[uint32]float64{}
	for _, t := range out {
		key := WeightedTerm{Term: t.Term, Group: t.Group}
		if t.Group != 0 {
			count[t.Group]++
		}
		if i, ok := at[key]; ok {
			merged[i].Weight += t.Weight
			continue
		}
		at[key] = len(merged)
		merged = append(merged, t)
	}
	out = merged
	for _, w := range words {
		e := expanded[w.lower]
		if e == nil || len(e.syns) == 0 {
			continue
		}
		for _, syn := range e.syns {
			out = append(out, WeightedTerm{Term: syn, Weight: synonymWeight * count[e.group], Group: e.group})
		}
		e.syns = nil // once per word
	}
	return out, nil
}

// modals are words the stop list keeps but that are almost always modal
// verbs in a query, while WordNet knows them only as nouns or full verbs:
// "will" as volition and testament, "can" as a tin, "may" as the month.
// They are never expanded.
var modals = map[string]bool{
	"will": true, "would": true, "can": true, "could": true, "may": true,
	"might": true, "must": true, "shall": true, "should": true, "ought": true,
}

// appendWeighted appends the term of one token, if it has one, at weight 1.
func appendWeighted(dst []WeightedTerm, tok string, fl tokFlags) []WeightedTerm {
	var buf [1]string
	ts := appendToken(buf[:0], tok, fl)
	if len(ts) == 0 {
		return dst
	}
	return append(dst, WeightedTerm{Term: ts[0], Weight: 1})
}

// expandable reports whether a token that gave a term may be expanded: a
// plain word, long enough, and not a name.
func expandable(tok string, fl tokFlags, sentenceStart bool) bool {
	if fl&(tokDigit|tokJoiner|tokNonASCII) != 0 || len(tok) < minExpandLen {
		return false
	}
	if fl&tokUpper == 0 {
		return true
	}
	first, _ := utf8.DecodeRuneInString(tok)
	upper := 0
	for _, r := range tok {
		if unicode.IsUpper(r) {
			upper++
		}
	}
	switch {
	case upper > 1: // "NASA", "McDonald", "iPhone"-like: names
		return false
	case unicode.IsUpper(first):
		return sentenceStart
	}
	return false // an inner capital
}

// isPlainWord reports whether w is lower-case ASCII letters only.
func isPlainWord(w string) bool {
	for i := 0; i < len(w); i++ {
		if w[i] < 'a' || w[i] > 'z' {
			return false
		}
	}
	return w != ""
}

func toLowerASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'A' <= c && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// synonyms returns the synonyms of the lower-case word: the other
// one-word members of its frequent senses as a noun and as a verb, each
// once, keeping only those for which the synset is a frequent sense too.
func synonyms(tab *wordnet.Table, word string) []string {
	type cand struct {
		pos      wordnet.POS
		s        wordnet.Sense
		notFirst bool // not the lemma's first sense
	}
	var cands []cand
	var top uint32
	for _, pos := range [...]wordnet.POS{wordnet.Noun, wordnet.Verb} {
		for _, lemma := range tab.BaseForms(word, pos) {
			for i, s := range tab.Senses(lemma, pos) {
				cands = append(cands, cand{pos, s, i > 0})
				top = max(top, s.Count)
			}
		}
	}
	var out []string
	for _, c := range cands {
		if !frequent(c.s.Count, top, c.notFirst) {
			continue
		}
		for _, w := range tab.Words(c.s.Synset) {
			if w != word && !slices.Contains(out, w) && frequentSenseOf(tab, w, c.pos, c.s.Synset) {
				out = append(out, w)
			}
		}
	}
	return out
}

// frequent reports whether a sense tagged count times is kept against the
// word's most frequent sense, tagged top times: at least senseShare of it,
// or, when nothing is tagged, the first sense of a lemma (notFirst false).
func frequent(count, top uint32, notFirst bool) bool {
	if top == 0 {
		return !notFirst
	}
	return count > 0 && float64(count) >= senseShare*float64(top)
}

// frequentSenseOf reports whether synset s is a frequent sense of the
// lemma w as a pos. Without this check "machine", whose frequent sense is
// the device, would expand "car" (default-mode recall@10 0.731
// without the check, 0.737 with it).
func frequentSenseOf(tab *wordnet.Table, w string, pos wordnet.POS, s wordnet.Synset) bool {
	senses := tab.Senses(w, pos)
	var top uint32
	for _, x := range senses {
		top = max(top, x.Count)
	}
	for i, x := range senses {
		if x.Synset == s {
			return frequent(x.Count, top, i > 0)
		}
	}
	return false
}
