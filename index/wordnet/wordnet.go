package wordnet

import (
	"bytes"
	"compress/flate"
	_ "embed"
	"fmt"
	"io"
	"slices"
	"sort"
	"strings"
	"sync"
)

//go:generate go run ./internal/convert -dir /usr/share/wordnet -out wordnet.bin

// table is the compiled WordNet table, DEFLATE-compressed.
//
//go:embed wordnet.bin
var table []byte

// Notice is WordNet's licence, which asks that its copyright notice and
// disclaimer appear on all copies of the database: a program that embeds
// this package should show it (engram prints it with `engram version
// --notices`).
//
//go:embed LICENSE
var Notice string

// POS is a part of speech.
type POS uint8

// The parts of speech the table holds.
const (
	Noun POS = iota
	Verb
)

// String returns "noun" or "verb".
func (p POS) String() string {
	switch p {
	case Noun:
		return "noun"
	case Verb:
		return "verb"
	}
	return fmt.Sprintf("POS(%d)", uint8(p))
}

// Synset identifies a synonym set of the table.
type Synset uint32

// Sense is one sense of a lemma: its synonym set and how often the WordNet
// sense-tagged corpora (SemCor and others) saw the lemma in that sense.
type Sense struct {
	Synset Synset
	Count  uint32
}

// Table is a decoded WordNet table. It is read-only and safe for
// concurrent use.
type Table struct {
	words  []string // sorted, distinct
	memOff []uint32 // synset -> its members in mem: mem[memOff[s]:memOff[s+1]]
	mem    []uint32 // word ids
	hypOff []uint32 // synset -> its hypernyms in hyp
	hyp    []Synset
	pos    [2]posTable
}

// posTable is one part of speech's senses and exceptions.
type posTable struct {
	lemmas []uint32 // word ids with senses, ascending
	offs   []uint32 // lemma i's senses are senses[offs[i]:offs[i+1]]
	senses []Sense
	infl   []string // irregular forms, sorted
	baseOf []uint32 // infl i's bases are bases[baseOf[i]:baseOf[i+1]]
	bases  []uint32 // word ids
}

var (
	loadOnce sync.Once
	loaded   *Table
	loadErr  error
)

// Load returns the table embedded in the binary, decoding it on the first
// call; later calls return the same *Table (or the same error). It is safe
// for concurrent use.
func Load() (*Table, error) {
	loadOnce.Do(func() { loaded, loadErr = decodeCompressed(table) })
	return loaded, loadErr
}

// decodeCompressed inflates b and decodes the table.
func decodeCompressed(b []byte) (*Table, error) {
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(b)))
	if err != nil {
		return nil, fmt.Errorf("%w: inflate: %v", ErrCorrupt, err)
	}
	return Decode(raw)
}

// Words returns the one-word members of synset s, lower-case, in WordNet's
// order. The slice is new; the strings are shared with t.
func (t *Table) Words(s Synset) []string {
	if int(s)+1 >= len(t.memOff) {
		return nil
	}
	ids := t.mem[t.memOff[s]:t.memOff[s+1]]
	out := make([]string, len(ids))
	for i, id := range ids {
		out[i] = t.words[id]
	}
	return out
}

// Hypernyms returns the direct hypernyms of synset s (the more general
// synsets: "motor vehicle" for "car"). The slice belongs to t and must
// not be changed.
func (t *Table) Hypernyms(s Synset) []Synset {
	if int(s)+1 >= len(t.hypOff) {
		return nil
	}
	return t.hyp[t.hypOff[s]:t.hypOff[s+1]]
}

// Senses returns the senses of lemma (a lower-case base form) as a pos,
// most frequent first, as WordNet orders them, or nil if the table has
// none. The slice belongs to t and must not be changed.
func (t *Table) Senses(lemma string, pos POS) []Sense {
	if pos > Verb {
		return nil
	}
	id, ok := t.wordID(lemma)
	if !ok {
		return nil
	}
	pt := &t.pos[pos]
	i, ok := slices.BinarySearch(pt.lemmas, id)
	if !ok {
		return nil
	}
	return pt.senses[pt.offs[i]:pt.offs[i+1]]
}

func (t *Table) wordID(w string) (uint32, bool) {
	i := sort.SearchStrings(t.words, w)
	if i < len(t.words) && t.words[i] == w {
		return uint32(i), true
	}
	return 0, false
}

// suffixes are the detachment rules of WordNet's morphology (morphy(7WN)):
// a form ending in suffix may be a base form ending in ending.
var suffixes = [2][]struct{ suffix, ending string }{
	Noun: {{"s", ""}, {"ses", "s"}, {"xes", "x"}, {"zes", "z"}, {"ches", "ch"}, {"shes", "sh"}, {"men", "man"}, {"ies", "y"}},
	Verb: {{"s", ""}, {"ies", "y"}, {"es", "e"}, {"es", ""}, {"ed", "e"}, {"ed", ""}, {"ing", "e"}, {"ing", ""}},
}

// BaseForms returns the lemmas the lower-case word may be an inflection of
// as a pos, the way WordNet's morphy finds them, without its rules for
// collocations and for "-ful": the bases the exception list gives for an
// irregular form ("mice" to "mouse", "bought" to "buy"), the word itself
// if it is a lemma, and each lemma the suffix rules give ("cars" to "car",
// "driving" to "drive"). Only lemmas with senses in the table are
// returned, without repeats; nil means none.
func (t *Table) BaseForms(word string, pos POS) []string {
	if pos > Verb || word == "" {
		return nil
	}
	var out []string
	add := func(w string) {
		if !slices.Contains(out, w) && t.Senses(w, pos) != nil {
			out = append(out, w)
		}
	}
	pt := &t.pos[pos]
	if i := sort.SearchStrings(pt.infl, word); i < len(pt.infl) && pt.infl[i] == word {
		for _, id := range pt.bases[pt.baseOf[i]:pt.baseOf[i+1]] {
			add(t.words[id])
		}
	}
	add(word)
	for _, r := range suffixes[pos] {
		if len(word) > len(r.suffix) && strings.HasSuffix(word, r.suffix) {
			add(word[:len(word)-len(r.suffix)] + r.ending)
		}
	}
	return out
}
