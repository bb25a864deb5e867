package index

// stopWords is the Snowball project's English stop word list, the list
// published beside the English (Porter2) stemmer that [Analyze] uses
// (snowballstem.org, algorithms/english/stop.txt; 174 words). Lucene's
// EnglishAnalyzer keeps only 33 words, but memories are conversational:
// "I", "my", "what", "would" are in most of them, and each such word in a
// query walks a postings list of nearly every document while adding almost
// nothing to the ranking.
//
// The words are lower-case with ASCII apostrophes, the form [Analyze]
// compares them in. Contractions ("it's", "don't") are listed whole; a
// possessive is also looked up after its "'s" is removed, so "it's" and
// "let's" go whether or not they are listed.
var stopWords = setOf(
	// Pronouns.
	"i", "me", "my", "myself", "we", "our", "ours", "ourselves",
	"you", "your", "yours", "yourself", "yourselves",
	"he", "him", "his", "himself", "she", "her", "hers", "herself",
	"it", "its", "itself", "they", "them", "their", "theirs", "themselves",
	"what", "which", "who", "whom", "this", "that", "these", "those",

	// Forms of be, have and do, and the auxiliaries without a common homonym
	// (the list leaves out will, shall, can, may, might and must: "a will",
	// "a can", "May").
	"am", "is", "are", "was", "were", "be", "been", "being",
	"have", "has", "had", "having", "do", "does", "did", "doing",
	"would", "should", "could", "ought",

	// Pronoun and verb contractions.
	"i'm", "you're", "he's", "she's", "it's", "we're", "they're",
	"i've", "you've", "we've", "they've",
	"i'd", "you'd", "he'd", "she'd", "we'd", "they'd",
	"i'll", "you'll", "he'll", "she'll", "we'll", "they'll",

	// Negations.
	"isn't", "aren't", "wasn't", "weren't", "hasn't", "haven't", "hadn't",
	"doesn't", "don't", "didn't", "won't", "wouldn't", "shan't",
	"shouldn't", "can't", "cannot", "couldn't", "mustn't",

	// Other contractions.
	"let's", "that's", "who's", "what's", "here's", "there's", "when's",
	"where's", "why's", "how's",

	// Articles.
	"a", "an", "the",

	// Conjunctions, prepositions and adverbs.
	"and", "but", "if", "or", "because", "as", "until", "while",
	"of", "at", "by", "for", "with", "about", "against", "between", "into",
	"through", "during", "before", "after", "above", "below", "to", "from",
	"up", "down", "in", "out", "on", "off", "over", "under",
	"again", "further", "then", "once",
	"here", "there", "when", "where", "why", "how",
	"all", "any", "both", "each", "few", "more", "most", "other", "some",
	"such", "no", "nor", "not", "only", "own", "same", "so", "than", "too",
	"very",
)

// isStopWord reports whether the folded word w is an English stop word.
func isStopWord(w string) bool {
	_, ok := stopWords[w]
	return ok
}

func setOf(words ...string) map[string]struct{} {
	m := make(map[string]struct{}, len(words))
	for _, w := range words {
		m[w] = struct{}{}
	}
	return m
}
