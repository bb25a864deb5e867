package index

import (
	"fmt"
	"unicode"
	"unicode/utf8"

	"golang.org/x/text/unicode/norm"

	"github.com/engramdb/engram/index/wordnet"
)

// Query expansion parameters, measured on the LoCoMo sample (see
// bench/results/recall.md, "Issue 16: WordNet synonyms").
var (
	// synonymWeight is the weight of a synonym's BM25 score, against 1
	// for the query's own terms.
	synonymWeight = 0.5
	// hypernymWeight is the weight of a direct hypernym's members; zero
	// leaves hypernyms out.
	hypernymWeight = 0.0
	// senseShare keeps the senses whose tag count is at least this share
	// of the word's most frequent sense: car's first sense (71 tags, the
	// automobile) but not its second (2 tags, the railway car).
	senseShare = 0.5
	// mutualSense also asks that the synset be a kept sense of the
	// synonym: "machine" names the car synset, but its frequent sense is
	// the device, so it does not expand "car".
	mutualSense = true
	// groupMode says how the expansions of one query word count: 0 each
	// adds, 1 the synonyms of a word count once (their best), 2 the word
	// and its synonyms count once.
	groupMode = 1
	// minExpandLen is the shortest word expanded, in bytes.
	minExpandLen = 3
)

// ExpandQuery returns the terms of query for [BM25.SearchWeighted]: the
// terms [Analyze] finds, at weight 1, and for each word worth expanding
// the analyzed one-word synonyms of its frequent WordNet senses at a lower
// weight, grouped so that the synonyms of one word count once per
// document. A word is expanded when it is a plain word (no digit or
// joiner, so numbers and identifiers are not), not a stop word (those
// are dropped), at least three letters long, and not a proper name: a
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
	type word struct {
		lower string // folded, possessive trimmed
		term  string // its analyzed term
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
				if isPlainWord(lower) {
					words = append(words, word{lower, out[len(out)-1].Term})
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
	added := map[string]int{} // expansion term -> its index in out
	for wi, w := range words {
		group := uint32(0)
		if groupMode > 0 {
			group = uint32(wi + 1)
		}
		exp := expansions(tab, w.lower)
		n := 0
		for _, e := range exp {
			terms := Analyze(e.word)
			if len(terms) != 1 || orig[terms[0]] {
				continue
			}
			t := terms[0]
			if j, ok := added[t]; ok {
				if out[j].Group == group || group == 0 {
					out[j].Weight = max(out[j].Weight, e.weight)
					continue
				}
			}
			added[t] = len(out)
			out = append(out, WeightedTerm{Term: t, Weight: e.weight, Group: group})
			n++
		}
		if groupMode == 2 && n > 0 {
			// The word itself joins its synonyms' group: a document holding
			// both counts the better of them once.
			for j := range out {
				if out[j].Term == w.term && out[j].Group == 0 {
					out = append(out, WeightedTerm{Term: w.term, Weight: 1, Group: group})
					out[j].Weight = -1 // removed below
					break
				}
			}
		}
	}
	if groupMode == 2 {
		kept := out[:0]
		for _, t := range out {
			if t.Weight > 0 {
				kept = append(kept, t)
			}
		}
		out = kept
	}
	return out, nil
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

// expansion is one word an expanded word brings, with its weight.
type expansion struct {
	word   string
	weight float64
}

// expansions returns the synonyms (and hypernyms, when they have a weight)
// of the lower-case word, each once, at its largest weight.
func expansions(tab *wordnet.Table, word string) []expansion {
	type kept struct {
		pos   wordnet.POS
		lemma string
		s     wordnet.Sense
	}
	var cands []kept
	var top uint32
	for _, pos := range [...]wordnet.POS{wordnet.Noun, wordnet.Verb} {
		for _, lemma := range tab.BaseForms(word, pos) {
			for _, s := range tab.Senses(lemma, pos) {
				cands = append(cands, kept{pos, lemma, s})
				top = max(top, s.Count)
			}
		}
	}
	var out []expansion
	add := func(w string, weight float64) {
		if w == word {
			return
		}
		for i := range out {
			if out[i].word == w {
				out[i].weight = max(out[i].weight, weight)
				return
			}
		}
		out = append(out, expansion{w, weight})
	}
	for i, c := range cands {
		if !frequent(c.s.Count, top, i > 0 && cands[i-1].lemma == c.lemma && cands[i-1].pos == c.pos) {
			continue
		}
		for _, w := range tab.Words(c.s.Synset) {
			if w != c.lemma && keptSenseOf(tab, w, c.pos, c.s.Synset) {
				add(w, synonymWeight)
			}
		}
		if hypernymWeight > 0 {
			for _, h := range tab.Hypernyms(c.s.Synset) {
				for _, w := range tab.Words(h) {
					if keptSenseOf(tab, w, c.pos, h) {
						add(w, hypernymWeight)
					}
				}
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

// keptSenseOf reports whether synset s is a frequent sense of the lemma w
// as a pos (always, unless mutualSense asks).
func keptSenseOf(tab *wordnet.Table, w string, pos wordnet.POS, s wordnet.Synset) bool {
	if !mutualSense {
		return true
	}
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
