// Package wordnet is an offline English thesaurus compiled from WordNet 3.0
// and embedded in the binary: the synonym sets and direct hypernyms of
// nouns and verbs, each lemma's senses in WordNet's order with their tag
// counts, and the exception lists of WordNet's morphology. Glosses,
// adjectives, adverbs and multiword lemmas are left out. The BM25 query
// expansion of package index is its user.
//
// # Basics
//
//	t, err := wordnet.Load() // decodes the embedded table once
//	for _, lemma := range t.BaseForms("cars", wordnet.Noun) { // "car"
//		for _, s := range t.Senses(lemma, wordnet.Noun) {
//			words := t.Words(s.Synset) // car, auto, automobile, machine, motorcar
//			_ = words
//		}
//	}
//
// The table is wordnet.bin, written by ./internal/convert from Debian's
// wordnet-base files (go generate); a test checks it against a fresh
// conversion when /usr/share/wordnet exists. WordNet's licence is in the
// LICENSE file beside it.
//
// # Caveats
//
// A lemma keeps its first sense and those of its other senses that the
// WordNet sense-tagged corpora saw at least once (cntlist.rev); senses
// never seen are dropped, so the table cannot name a rare sense. Words are
// lower-case: the table cannot tell "Will" the name from "will" the noun.
// Loading decompresses 1.3 MB and decodes it, about 60 ms of CPU
// (BenchmarkLoad), once per process; the decoded table holds about 4 MB of
// heap. The embedded table adds 0.8 MB to a binary.
package wordnet
