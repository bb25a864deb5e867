package embed

import (
	"context"
	"fmt"
	"math"
	"math/bits"
	"strconv"
	"sync"
	"unicode"
	"unicode/utf8"
)

// DefaultHashingDimensions is the vector length of [Hashing] when
// [HashingOptions.Dimensions] is 0: the size of the common small sentence
// models (all-MiniLM-L6-v2, bge-small), so indexes sized for those fit.
const DefaultHashingDimensions = 384

// MinHashingDimensions is the smallest [HashingOptions.Dimensions]: below it
// nearly every feature of a sentence collides with another.
const MinHashingDimensions = 16

// hashingVersion names the algorithm in [Hashing.Identity]. Bump it whenever
// the output of any input changes (tokenizer, features, weights, hash), so
// cached and stored vectors of the old version are never mixed with new ones.
// TestHashingGolden fails when the output changes.
const hashingVersion = "v1"

// Feature families and their weights. A word's unigram carries the most
// meaning, so it has weight 1. A bigram adds word order and phrases ("new
// york" is not "york new"), but paraphrases often reorder words, so it gets
// only 0.25. Character n-grams make inflections, compounds and typos overlap
// ("running" and "runner" share "<ru", "run", "unn", ...); a word of L
// letters yields 3L-3 of them, so at 0.35 each a six-letter word's n-grams
// carry about twice its unigram's squared weight (15 x 0.1225 = 1.8).
//
// Measured on the (text, paraphrase, unrelated) triples of
// TestHashingSimilarity: the mean of cos(text, paraphrase) - cos(text,
// unrelated) is 0.401 with weights (1, 0.5, 0), that is without n-grams,
// 0.515 with (1, 0.5, 0.25) and 0.570 with these (1, 0.25, 0.35). Heavier
// n-grams raised it a little more but let shared fragments outweigh whole
// shared words, which hurts names and identifiers.
const (
	famWord   = 'w'
	famBigram = 'b'
	famChar   = 'c'

	weightWord   = 1.0
	weightBigram = 0.25
	weightChar   = 0.35

	minGram = 3
	maxGram = 5

	// wordStart and wordEnd mark a word's boundaries in its character
	// n-grams (as in fastText): "category" and "concatenate" share "cat",
	// but only "category" yields "<ca" and "<cat".
	// Neither is a letter or digit, so neither occurs inside a word.
	wordStart = '<'
	wordEnd   = '>'
)

// tfWeights[tf] is 1+ln(tf), the sublinear term-frequency weight, written
// out rather than computed: math.Log has an assembly implementation on amd64
// whose last bit may differ from other platforms, and the output must be
// bit-identical everywhere. Counts above the table use math.Log rounded to
// float32, which hides such a difference in all but vanishingly rare cases.
var tfWeights = [...]float64{
	0, // unused
	1,
	1.6931471805599454,
	2.0986122886681096,
	2.386294361119891,
	2.6094379124341005,
	2.791759469228055,
	2.9459101490553135,
	3.0794415416798357,
	3.1972245773362196,
	3.302585092994046,
	3.3978952727983707,
	3.4849066497880004,
	3.5649493574615367,
	3.639057329615259,
	3.70805020110221,
	3.772588722239781,
	3.833213344056216,
	3.8903717578961645,
	3.9444389791664403,
	3.995732273553991,
	4.044522437723423,
	4.091042453358316,
	4.13549421592915,
	4.178053830347945,
	4.218875824868201,
	4.258096538021482,
	4.295836866004329,
	4.332204510175204,
	4.367295829986475,
	4.401197381662156,
	4.433987204485146,
	4.465735902799727,
}

func tfWeight(tf int) float64 {
	if tf < len(tfWeights) {
		return tfWeights[tf]
	}
	return float64(float32(1 + math.Log(float64(tf))))
}

// HashingOptions configures [NewHashing]. A nil *HashingOptions, and every
// zero field, means the documented default. NewHashing copies it: the caller
// may change or share it afterwards.
type HashingOptions struct {
	// Dimensions is the vector length. Zero means
	// [DefaultHashingDimensions] (384); otherwise it must be between
	// [MinHashingDimensions] (16) and [MaxDimensions] (65536). More
	// dimensions mean fewer collisions between features and cost memory and
	// search time in the index.
	Dimensions int
}

func (o *HashingOptions) withDefaults() HashingOptions {
	var out HashingOptions
	if o != nil {
		out = *o
	}
	if out.Dimensions == 0 {
		out.Dimensions = DefaultHashingDimensions
	}
	return out
}

// validate reports every bad field at once.
func (o *HashingOptions) validate() error {
	var errs []error
	if o.Dimensions < MinHashingDimensions || o.Dimensions > MaxDimensions {
		errs = append(errs, fmt.Errorf("Dimensions %d is outside [%d, %d]", o.Dimensions, MinHashingDimensions, MaxDimensions))
	}
	return joinInvalid(errs)
}

// Hashing is the offline default [Embedder]: a deterministic feature-hashing
// embedder that needs no model, no network and no warm-up.
//
// It captures lexical similarity, not semantic similarity: texts score high
// when they share words, word pairs and word fragments. "car" and
// "automobile" are unrelated to it, and so are "buy" and "purchase". Use a
// network provider ([NewOllama], [NewOpenAI]) when recall must match
// paraphrases.
//
// The algorithm (version "v1"):
//
//  1. Lowercase with Unicode simple case mapping and split into words: runs
//     of letters and digits (combining marks continue a word). Everything
//     else separates words.
//  2. Features: each word (weight 1), each pair of adjacent words (0.25),
//     and the character 3-, 4- and 5-grams of each word framed as "<word>"
//     (0.35 each). The weights are explained at their definition.
//  3. Each feature is hashed once with 64-bit FNV-1a, finished with the
//     murmur3 64-bit mixer (FNV-1a alone leaves the low bit equal to the
//     parity of the input bytes' low bits). The high bits pick the bucket,
//     the low bit the sign, so collisions cancel out on average instead of
//     piling up.
//  4. A feature seen tf times in the text adds weight×(1+ln tf): repetition
//     counts, with diminishing returns.
//  5. The vector is L2-normalised, so a dot product is a cosine similarity.
//
// A text with no features ("", "!!!") embeds to the zero vector, whose
// cosine with anything is 0 (or undefined, for code that divides by norms).
//
// The output is bit-identical across calls, goroutines, processes and
// platforms: the hash is fixed and unseeded, features are accumulated in the
// order they first occur in the text, and floating-point expressions are
// written so that the compiler cannot fuse them. It can change between Go releases only for
// characters whose Unicode properties a new Unicode version changes.
//
// A Hashing is safe for concurrent use.
type Hashing struct {
	dims int
	id   Identity
	pool sync.Pool // of *hashScratch
}

// NewHashing returns a [Hashing] embedder. A nil opts means defaults. It
// returns an error wrapping [ErrInvalidOptions] for bad options.
func NewHashing(opts *HashingOptions) (*Hashing, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	h := &Hashing{
		dims: o.Dimensions,
		id:   Identity{Provider: "hashing", Model: hashingVersion + "-" + strconv.Itoa(o.Dimensions)},
	}
	h.pool.New = func() any { return &hashScratch{acc: make([]float64, h.dims)} }
	return h, nil
}

// Dimensions returns the vector length, fixed at construction.
func (h *Hashing) Dimensions() int { return h.dims }

// Identity returns {Provider: "hashing", Model: "v1-<dimensions>"}.
func (h *Hashing) Identity() Identity { return h.id }

// Embed returns one L2-normalised vector per text, in order. It never fails
// except when ctx is done, which it checks between texts. The vectors share
// one backing array, each capped at its own length, so appending to one
// never overwrites another.
func (h *Hashing) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*h.dims)
	s := h.pool.Get().(*hashScratch)
	defer h.putScratch(s)
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed hashing: %w", err)
		}
		v := backing[i*h.dims : (i+1)*h.dims : (i+1)*h.dims]
		h.embedOne(s, text, v)
		out[i] = v
	}
	return out, nil
}

// maxPooledRunes bounds the scratch kept in the pool (about 2 MiB at this
// size, most of it the counting table), so one huge text does not pin its
// buffers.
const maxPooledRunes = 1 << 14

func (h *Hashing) putScratch(s *hashScratch) {
	if cap(s.runes) > maxPooledRunes || cap(s.slots) > 8*maxPooledRunes {
		return
	}
	h.pool.Put(s)
}

// hashScratch is the per-call working memory of [Hashing.Embed]. Reusing it
// through a sync.Pool brings any batch down to two allocations per call (the
// result slices): BenchmarkHashing/short measured 42 allocations and 9.4 µs
// per 12-word text without the pool, 2 and 4.6 µs with it.
type hashScratch struct {
	runes []rune     // the lowercased words, concatenated
	words []wordSpan // each word's [start, end) in runes
	feats [3][]uint64
	acc   []float64 // one accumulator per dimension, zero between uses

	// An open-addressing table that counts equal features, and the slots it
	// used in order of first occurrence. Every slot is zero between uses.
	// Counting in a table is O(n); sorting the features to count them took
	// over half the time of a long text (77 µs for 165 words, 41 µs with the
	// table).
	slots []featureSlot
	order []int
}

type featureSlot struct {
	key   uint64
	count int
}

// count tallies the features fs into s.slots and lists the used slots in
// s.order, in order of first occurrence: a deterministic order, so the
// floating-point sums that follow are too.
func (s *hashScratch) count(fs []uint64) {
	s.order = s.order[:0]
	if len(fs) == 0 {
		return
	}
	size := 16
	for size < 2*len(fs) {
		size <<= 1
	}
	if cap(s.slots) < size {
		s.slots = make([]featureSlot, size)
	}
	s.slots = s.slots[:size]
	mask := uint64(size - 1)
	for _, h := range fs {
		// The low bit is the sign and the high bits the bucket; the table
		// uses the bits just above the sign.
		i := (h >> 1) & mask
		for {
			sl := &s.slots[i]
			if sl.count == 0 {
				sl.key, sl.count = h, 1
				s.order = append(s.order, int(i))
				break
			}
			if sl.key == h {
				sl.count++
				break
			}
			i = (i + 1) & mask
		}
	}
}

type wordSpan struct{ start, end int }

// embedOne writes the embedding of text into dst (len(dst) == h.dims).
func (h *Hashing) embedOne(s *hashScratch, text string, dst []float32) {
	s.tokenize(text)
	s.features()
	acc := s.acc
	weights := [3]float64{weightWord, weightBigram, weightChar}
	for f := range s.feats {
		s.count(s.feats[f])
		for _, i := range s.order {
			sl := &s.slots[i]
			// The explicit conversion rounds the product, which stops the
			// compiler from fusing it with the addition into an FMA on
			// platforms that have one (Go spec, "Floating-point operators").
			w := float64(weights[f] * tfWeight(sl.count))
			b, _ := bits.Mul64(sl.key, uint64(h.dims))
			if sl.key&1 == 0 {
				acc[b] += w
			} else {
				acc[b] -= w
			}
			*sl = featureSlot{}
		}
	}
	var sum float64
	for _, x := range acc {
		sum += float64(x * x)
	}
	if sum == 0 {
		clear(dst)
		return
	}
	inv := 1 / math.Sqrt(sum)
	for i, x := range acc {
		dst[i] = float32(x * inv)
	}
	clear(acc)
}

// tokenize fills s.runes and s.words with the lowercased words of text.
func (s *hashScratch) tokenize(text string) {
	s.runes = s.runes[:0]
	s.words = s.words[:0]
	inWord := false
	start := 0
	for _, r := range text {
		isWordRune := unicode.IsLetter(r) || unicode.IsDigit(r) || (inWord && unicode.IsMark(r))
		switch {
		case isWordRune && !inWord:
			inWord = true
			start = len(s.runes)
			s.runes = append(s.runes, unicode.ToLower(r))
		case isWordRune:
			s.runes = append(s.runes, unicode.ToLower(r))
		case inWord:
			inWord = false
			s.words = append(s.words, wordSpan{start, len(s.runes)})
		}
	}
	if inWord {
		s.words = append(s.words, wordSpan{start, len(s.runes)})
	}
}

// features fills s.feats with the hashes of every feature occurrence, one
// slice per family.
func (s *hashScratch) features() {
	for f := range s.feats {
		s.feats[f] = s.feats[f][:0]
	}
	for i, ws := range s.words {
		word := s.runes[ws.start:ws.end]

		h := fnvByte(fnvOffset64, famWord)
		h = fnvRunes(h, word)
		s.feats[0] = append(s.feats[0], mix64(h))

		if i > 0 {
			prev := s.words[i-1]
			h = fnvByte(fnvOffset64, famBigram)
			h = fnvRunes(h, s.runes[prev.start:prev.end])
			h = fnvByte(h, ' ')
			h = fnvRunes(h, word)
			s.feats[1] = append(s.feats[1], mix64(h))
		}

		// Character n-grams of the framed word "<word>", of padded length
		// len(word)+2; position q maps to wordStart, word[q-1] or wordEnd.
		// FNV is sequential, so the hashes of the 3-, 4- and 5-gram starting
		// at p are the running hash after 3, 4 and 5 characters: 5 steps per
		// position instead of 12.
		padded := len(word) + 2
		for p := 0; p+minGram <= padded; p++ {
			h = fnvByte(fnvOffset64, famChar)
			for q := p; q < p+maxGram && q < padded; q++ {
				switch q {
				case 0:
					h = fnvByte(h, wordStart)
				case padded - 1:
					h = fnvByte(h, wordEnd)
				default:
					h = fnvRune(h, word[q-1])
				}
				if q-p+1 >= minGram {
					s.feats[2] = append(s.feats[2], mix64(h))
				}
			}
		}
	}
}

// 64-bit FNV-1a (http://www.isthe.com/chongo/tech/comp/fnv/), written inline
// so hashing a feature allocates nothing; hash/fnv would need a hash.Hash64
// and a byte slice per feature.
const (
	fnvOffset64 = 14695981039346656037
	fnvPrime64  = 1099511628211
)

func fnvByte(h uint64, b byte) uint64 {
	h ^= uint64(b)
	h *= fnvPrime64
	return h
}

// fnvRune hashes the UTF-8 encoding of r.
func fnvRune(h uint64, r rune) uint64 {
	if r < utf8.RuneSelf {
		return fnvByte(h, byte(r))
	}
	var buf [utf8.UTFMax]byte
	n := utf8.EncodeRune(buf[:], r)
	for _, b := range buf[:n] {
		h = fnvByte(h, b)
	}
	return h
}

func fnvRunes(h uint64, rs []rune) uint64 {
	for _, r := range rs {
		h = fnvRune(h, r)
	}
	return h
}

// mix64 is murmur3's fmix64 finalizer: every output bit depends on every
// input bit.
func mix64(h uint64) uint64 {
	h ^= h >> 33
	h *= 0xff51afd7ed558ccd
	h ^= h >> 33
	h *= 0xc4ceb9fe1a85ec53
	h ^= h >> 33
	return h
}
