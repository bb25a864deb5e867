package embed

import (
	"context"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"sync"

	"github.com/viterin/vek/vek32"
)

// DefaultStaticMaxTokens is the number of tokens of a text [Static] pools
// when [StaticOptions.MaxTokens] is 0: the default max_length of
// Model2Vec's StaticModel.encode.
const DefaultStaticMaxTokens = 512

// staticVersion names the encoding algorithm in [Static.Identity]'s hash.
// Bump it whenever the output for a given model changes.
const staticVersion = "engram-static-v1"

// The files of a Model2Vec model folder.
const (
	staticTableFile     = "model.safetensors"
	staticTokenizerFile = "tokenizer.json"
	staticConfigFile    = "config.json"
)

// StaticOptions configures [NewStatic]. A nil *StaticOptions, and every
// zero field, means the documented default. NewStatic copies it.
type StaticOptions struct {
	// MaxTokens is the number of tokens of a text that are pooled; the rest
	// are ignored. Zero means [DefaultStaticMaxTokens] (512), -1 means no
	// limit; other negative values are invalid. As in Model2Vec, a text is
	// first cut to MaxTokens × the vocabulary's median token length in
	// characters, then the known tokens past MaxTokens are dropped. A
	// value other than the default is part of [Static.Identity].
	MaxTokens int

	// Name is the human-readable name [Static.Name] returns, for logs and
	// the CLI. Empty means config.json's "model_name" if it has one, else
	// the folder's base name. It does not affect the vectors or the
	// identity.
	Name string
}

func (o *StaticOptions) withDefaults() StaticOptions {
	var out StaticOptions
	if o != nil {
		out = *o
	}
	if out.MaxTokens == 0 {
		out.MaxTokens = DefaultStaticMaxTokens
	}
	return out
}

// validate reports every bad field at once.
func (o *StaticOptions) validate() error {
	var errs []error
	if o.MaxTokens < -1 {
		errs = append(errs, fmt.Errorf("MaxTokens %d is negative and not -1", o.MaxTokens))
	}
	return joinInvalid(errs)
}

// Static is an [Embedder] that runs a Model2Vec static-embedding model from
// a local folder: a table with one vector per token, pooled over the
// tokens of a text. It needs no network and no GPU; a sentence embeds in
// microseconds. Such models (for example minishlab/potion-base-8M, 256
// dimensions, MIT licence) are distilled from sentence transformers, so
// their vectors carry meaning that [Hashing]'s lack: synonyms such as "car"
// and "automobile" should land close. No real model has been run in this
// repository; its tests use small generated ones.
//
// The folder holds three files, as Model2Vec's save_pretrained writes them:
//
//   - model.safetensors: the tensor "embeddings" [rows × dimensions] in
//     F32, F64 (rounded to F32 on load), F16 or I8; optionally "weights"
//     [vocabulary] (F64, F32 or F16), a scale per token id, and "mapping"
//     [vocabulary] (I64 or I32), the table row of each token id, as in
//     Model2Vec's vocabulary-quantized models, whose table has fewer rows
//     than the vocabulary has tokens. Without a mapping, rows equal the
//     vocabulary size.
//   - tokenizer.json: a Hugging Face tokenizers file with a WordPiece or
//     a Unigram model (with its unk_id and byte_fallback); a normalizer
//     that is absent or one of BertNormalizer, Replace (a string, or a
//     regular expression Go's regexp can run once Oniguruma's \s, \d and
//     \w are made Unicode), Lowercase, NFC, NFD, NFKC, NFKD, Strip,
//     StripAccents, Prepend, Nmt, Precompiled (sentencepiece's compiled
//     character map), or a Sequence of them; a pre-tokenizer
//     that is absent or one of Metaspace, Whitespace, WhitespaceSplit,
//     BertPreTokenizer, Digits, ByteLevel, or a Sequence of them; special
//     and other added tokens. That covers BERT's uncased tokenizer and
//     those derived from it (potion-base-8M), the newer Model2Vec form (a
//     Unigram model behind a Sequence normalizer and a Metaspace
//     pre-tokenizer), the sentencepiece form of XLM-R-based models
//     (Precompiled, Metaspace, Unigram) and the Unigram models Model2Vec
//     makes from byte-level BPE tokenizers. Any other component (a BPE
//     model, a Split or Punctuation pre-tokenizer) is refused with a
//     [*ComponentError] naming it.
//   - config.json: a JSON object; its "normalize", if present, must be a
//     boolean (see [Static.Embed] for why it is not obeyed).
//
// Embedding a text:
//
//  1. Cut the added tokens out of the raw text: special ones ("[CLS]",
//     ...) are dropped, others (the multi-word tokens Model2Vec can add,
//     "new york") are tokens of their own. Off BERT's fast path, an added
//     token marked normalized is cut from each normalised span instead
//     (step 2), as tokenizers does.
//  2. Normalise and pre-tokenize each remaining span as the tokenizer
//     says, in tokenizers' order. BERT's form (BertNormalizer,
//     BertPreTokenizer) runs in one streaming pass: remove control
//     characters, make each CJK ideograph a word, strip accents (Unicode
//     NFD, then drop nonspacing marks) and lowercase, then split on
//     whitespace and punctuation, each punctuation character a word.
//  3. Tokenize each word: WordPiece is a greedy longest match against the
//     vocabulary with "##" continuations (a word with an unmatched part,
//     or longer than max_input_chars_per_word, is unknown); Unigram is
//     the segmentation whose piece scores sum highest (Viterbi), with
//     adjacent unknown characters fused into one unknown token.
//  4. Drop unknown and special tokens; keep the first MaxTokens.
//  5. Sum the table rows of the tokens (through "mapping" when present),
//     each scaled by its "weights" entry when present, and L2-normalise
//     the sum (which is the mean, normalised).
//
// The token ids of steps 1-3 are those of Hugging Face's tokenizers
// (checked against it on hundreds of sentences for every supported form).
// This is what Model2Vec's StaticModel.encode computes, up to
// floating-point rounding and its normalize flag, except that a special
// token typed in the text ("[CLS]") is dropped here and pooled there. A
// text with no known token ("", "!!!", a word of an unknown script)
// embeds to the zero vector.
//
// The model is loaded into memory once, in its stored dtype (about the
// size of model.safetensors), and never changes; a Static is safe for
// concurrent use.
type Static struct {
	tok       *tokenizer
	dims      int
	rows      int
	f32       []float32 // the table when stored as F32
	f16       []uint16  // ... F16
	i8        []int8    // ... I8
	weights   []float32 // nil, or one scale per token id
	mapping   []int32   // nil, or the table row of each token id
	maxTokens int       // math.MaxInt for no limit
	maxRunes  int       // cut texts to this many characters first; 0 for no cut
	id        Identity
	name      string
	pool      sync.Pool
}

// NewStatic loads the Model2Vec model in the folder dir (see [Static] for
// its files). A nil opts means defaults.
//
// It returns an error wrapping [ErrInvalidOptions] for bad options, and a
// [*ModelError] naming the file for a model it cannot use: wrapping
// [ErrInvalidModel] for a missing or malformed file (also wrapping
// fs.ErrNotExist for a missing one), or [ErrUnsupportedModel] for a
// well-formed model of a kind this package does not run (another dtype;
// a tokenizer component it does not implement, for which the error also
// holds a [*ComponentError] naming it and wraps [ErrUnknownComponent]).
// NewStatic never downloads anything.
//
// Loading reads the three files whole, checks every table value is finite
// and hashes the table and vocabulary for [Static.Identity]: for a model of
// potion-base-8M's size (30 MB) it takes about a tenth of a second of CPU
// (BenchmarkStaticLoad).
func NewStatic(dir string, opts *StaticOptions) (*Static, error) {
	o := opts.withDefaults()
	if err := o.validate(); err != nil {
		return nil, err
	}
	s := &Static{name: o.Name, maxTokens: o.MaxTokens}
	if s.name == "" {
		if abs, err := filepath.Abs(dir); err == nil {
			s.name = filepath.Base(abs)
		} else {
			s.name = filepath.Base(dir)
		}
	}
	if s.maxTokens < 0 {
		s.maxTokens = math.MaxInt
	}

	cfgPath := filepath.Join(dir, staticConfigFile)
	cfg, err := readModelFile(cfgPath)
	if err != nil {
		return nil, err
	}
	// normalize is checked but not obeyed: see Embed.
	cfgName, err := parseStaticConfig(cfg)
	if err != nil {
		return nil, &ModelError{File: cfgPath, Err: err}
	}
	if o.Name == "" && cfgName != "" {
		s.name = cfgName
	}

	tokPath := filepath.Join(dir, staticTokenizerFile)
	tb, err := readModelFile(tokPath)
	if err != nil {
		return nil, err
	}
	if s.tok, err = parseTokenizer(tb); err != nil {
		return nil, &ModelError{File: tokPath, Err: err}
	}
	if s.maxTokens != math.MaxInt && s.tok.medianRunes > 0 && s.maxTokens <= math.MaxInt/s.tok.medianRunes {
		s.maxRunes = s.maxTokens * s.tok.medianRunes
	}

	tablePath := filepath.Join(dir, staticTableFile)
	b, err := readModelFile(tablePath)
	if err != nil {
		return nil, err
	}
	tensors, err := parseSafetensors(b)
	if err != nil {
		return nil, &ModelError{File: tablePath, Err: err}
	}
	h := sha256.New()
	if err := s.loadTensors(tensors, h); err != nil {
		return nil, &ModelError{File: tablePath, Err: err}
	}

	// The identity hashes everything that shapes the vectors: the
	// algorithm version, the tensors' dtypes, shapes and bytes, the
	// tokenizer settings and vocabulary in id order, and a non-default
	// token cap. Not the folder's path or name.
	fmt.Fprintf(h, "%s\x00%t %t %t %t\x00%s\x00%d\x00%d\x00", staticVersion,
		s.tok.cleanText, s.tok.chineseChars, s.tok.stripAccents, s.tok.lowercase,
		s.tok.prefix, s.tok.maxChars, s.tok.unk)
	for id, t := range s.tok.tokens {
		fmt.Fprintf(h, "%s\x00%t\x00", t, s.tok.dropped[id])
	}
	h.Write(s.tok.describe) // empty on the BERT fast path, whose identities predate it
	model := strconv.Itoa(s.dims) + "-"
	if o.MaxTokens != DefaultStaticMaxTokens {
		fmt.Fprintf(h, "max=%d\x00", o.MaxTokens)
	}
	sum := h.Sum(nil)
	model += hex.EncodeToString(sum[:8])
	if o.MaxTokens != DefaultStaticMaxTokens {
		model += "-max" + strconv.Itoa(o.MaxTokens)
	}
	s.id = Identity{Provider: "static", Model: model}
	s.pool.New = func() any { return &staticScratch{acc: make([]float32, s.dims)} }
	return s, nil
}

// readModelFile reads one file of the model folder.
func readModelFile(path string) ([]byte, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		// The path is ModelError's File: keep the reason alone
		// (fs.ErrNotExist still matches through it).
		var pe *fs.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return nil, &ModelError{File: path, Err: fmt.Errorf("%w: %w", ErrInvalidModel, err)}
	}
	return b, nil
}

// parseStaticConfig checks config.json: a JSON object whose "normalize",
// if present, is a boolean or null. It returns its "model_name" if that is
// a string.
func parseStaticConfig(b []byte) (name string, err error) {
	var cfg map[string]json.RawMessage
	if err := json.Unmarshal(b, &cfg); err != nil || cfg == nil {
		return "", fmt.Errorf("not a JSON object: %w", ErrInvalidModel)
	}
	if raw, ok := cfg["normalize"]; ok {
		var n *bool
		if err := json.Unmarshal(raw, &n); err != nil {
			return "", fmt.Errorf("normalize is %s, not a boolean: %w", raw, ErrInvalidModel)
		}
	}
	if raw, ok := cfg["model_name"]; ok {
		_ = json.Unmarshal(raw, &name) // a name of another type is ignored
	}
	return name, nil
}

// loadTensors checks the tensors against the tokenizer, copies them into s
// and writes what the identity depends on into h.
func (s *Static) loadTensors(ts map[string]*stTensor, h interface{ Write([]byte) (int, error) }) error {
	vocab := len(s.tok.tokens)
	e, ok := ts["embeddings"]
	if !ok {
		return fmt.Errorf("no tensor named embeddings: %w", ErrInvalidModel)
	}
	if len(e.shape) != 2 {
		return fmt.Errorf("embeddings has shape %v, want [rows, dimensions]: %w", e.shape, ErrInvalidModel)
	}
	s.rows, s.dims = e.shape[0], e.shape[1]
	if s.dims < 1 || s.dims > MaxDimensions || s.rows < 1 {
		return fmt.Errorf("embeddings shape %v: want at least one row and 1 to %d dimensions: %w", e.shape, MaxDimensions, ErrInvalidModel)
	}
	m, hasMapping := ts["mapping"]
	if !hasMapping && s.rows != vocab {
		return fmt.Errorf("embeddings has %d rows for a vocabulary of %d tokens and no mapping: %w", s.rows, vocab, ErrInvalidModel)
	}
	if err := s.loadEmbeddings(e); err != nil {
		return err
	}
	hashTensor(h, "embeddings", e)
	if w, ok := ts["weights"]; ok {
		if err := s.loadWeights(w, vocab); err != nil {
			return err
		}
		hashTensor(h, "weights", w)
	}
	if hasMapping {
		if err := s.loadMapping(m, vocab); err != nil {
			return err
		}
		hashTensor(h, "mapping", m)
	}
	return nil
}

// loadEmbeddings copies the table e into s, in its dtype: F32, F16 or I8
// as stored, F64 rounded to F32.
func (s *Static) loadEmbeddings(e *stTensor) error {
	n := s.rows * s.dims
	switch e.dtype.name {
	case "F32":
		s.f32 = make([]float32, n)
		for i := range s.f32 {
			x := math.Float32frombits(binary.LittleEndian.Uint32(e.data[4*i:]))
			if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
				return fmt.Errorf("embeddings row %d holds %v: %w", i/s.dims, x, ErrInvalidModel)
			}
			s.f32[i] = x
		}
	case "F64":
		s.f32 = make([]float32, n)
		for i := range s.f32 {
			x := math.Float64frombits(binary.LittleEndian.Uint64(e.data[8*i:]))
			if math.IsNaN(x) || math.IsInf(x, 0) {
				return fmt.Errorf("embeddings row %d holds %v: %w", i/s.dims, x, ErrInvalidModel)
			}
			if math.Abs(x) > math.MaxFloat32 {
				return fmt.Errorf("embeddings row %d holds %v, beyond float32's range: %w", i/s.dims, x, ErrUnsupportedModel)
			}
			s.f32[i] = float32(x)
		}
	case "F16":
		s.f16 = make([]uint16, n)
		for i := range s.f16 {
			x := binary.LittleEndian.Uint16(e.data[2*i:])
			if x&0x7c00 == 0x7c00 {
				return fmt.Errorf("embeddings row %d holds an infinite or NaN half: %w", i/s.dims, ErrInvalidModel)
			}
			s.f16[i] = x
		}
	case "I8":
		s.i8 = make([]int8, n)
		for i := range s.i8 {
			s.i8[i] = int8(e.data[i])
		}
	default:
		return fmt.Errorf("embeddings dtype %s (want F32, F64, F16 or I8): %w", e.dtype.name, ErrUnsupportedModel)
	}
	return nil
}

// loadWeights copies the per-token weights w (F64, F32 or F16) into s.
func (s *Static) loadWeights(w *stTensor, vocab int) error {
	if len(w.shape) != 1 || w.shape[0] != vocab {
		return fmt.Errorf("weights has shape %v, want [%d], the vocabulary size: %w", w.shape, vocab, ErrInvalidModel)
	}
	s.weights = make([]float32, vocab)
	for i := range s.weights {
		var x float64
		switch w.dtype.name {
		case "F64":
			x = math.Float64frombits(binary.LittleEndian.Uint64(w.data[8*i:]))
		case "F32":
			x = float64(math.Float32frombits(binary.LittleEndian.Uint32(w.data[4*i:])))
		case "F16":
			x = float64(halfToFloat32(binary.LittleEndian.Uint16(w.data[2*i:])))
		default:
			return fmt.Errorf("weights dtype %s (want F64, F32 or F16): %w", w.dtype.name, ErrUnsupportedModel)
		}
		// A weight beyond float32's range could overflow the pooled sum.
		if math.IsNaN(x) || math.Abs(x) > math.MaxFloat32 {
			return fmt.Errorf("weight %d is %v: %w", i, x, ErrInvalidModel)
		}
		s.weights[i] = float32(x)
	}
	return nil
}

// loadMapping copies the token -> row mapping m (I64 or I32) into s.
func (s *Static) loadMapping(m *stTensor, vocab int) error {
	if len(m.shape) != 1 || m.shape[0] != vocab {
		return fmt.Errorf("mapping has shape %v, want [%d], the vocabulary size: %w", m.shape, vocab, ErrInvalidModel)
	}
	s.mapping = make([]int32, vocab)
	for i := range s.mapping {
		var r int64
		switch m.dtype.name {
		case "I64":
			r = int64(binary.LittleEndian.Uint64(m.data[8*i:]))
		case "I32":
			r = int64(int32(binary.LittleEndian.Uint32(m.data[4*i:])))
		default:
			return fmt.Errorf("mapping dtype %s (want I64 or I32): %w", m.dtype.name, ErrUnsupportedModel)
		}
		if r < 0 || r >= int64(s.rows) {
			return fmt.Errorf("mapping sends token %d to row %d of %d: %w", i, r, s.rows, ErrInvalidModel)
		}
		s.mapping[i] = int32(r)
	}
	return nil
}

func hashTensor(h interface{ Write([]byte) (int, error) }, name string, t *stTensor) {
	fmt.Fprintf(h, "%s\x00%s\x00%v\x00%d\x00", name, t.dtype.name, t.shape, len(t.data))
	h.Write(t.data)
}

// Dimensions returns the vector length: the table's second dimension.
func (s *Static) Dimensions() int { return s.dims }

// Identity returns {Provider: "static", Model: "<dimensions>-<hash>"},
// where hash is the first 16 hex digits of a SHA-256 of the table (dtype,
// shape, bytes, weights and mapping), the tokenizer's settings and
// vocabulary, and the algorithm version; "-max<n>" follows when
// [StaticOptions.MaxTokens] is not the default. It depends on the model's
// content only: moving or renaming the folder keeps it, and any change to
// the table or vocabulary changes it.
func (s *Static) Identity() Identity { return s.id }

// Name returns a human-readable name for the model, for logs and the CLI:
// [StaticOptions.Name], config.json's "model_name", or the model folder's
// base name.
func (s *Static) Name() string { return s.name }

// Embed returns one vector per text, in order: L2-normalised, or zero for
// a text with no known token. It never fails except when ctx is done,
// which it checks between texts. The vectors share one backing array, each
// capped at its own length.
//
// The vectors are always L2-normalised, whatever config.json's "normalize"
// says: the engine's index compares vectors by dot product, which is a
// cosine only for unit vectors. Normalising does not change any cosine, so
// rankings are those of the model either way.
func (s *Static) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	out := make([][]float32, len(texts))
	backing := make([]float32, len(texts)*s.dims)
	sc := s.pool.Get().(*staticScratch)
	defer s.putScratch(sc)
	for i, text := range texts {
		if err := ctx.Err(); err != nil {
			return nil, fmt.Errorf("embed static: %w", err)
		}
		v := backing[i*s.dims : (i+1)*s.dims : (i+1)*s.dims]
		s.embedOne(sc, text, v)
		out[i] = v
	}
	return out, nil
}

// staticScratch is the per-call working memory of [Static.Embed].
type staticScratch struct {
	tokenScratch
	acc []float32 // the running sum of rows
}

func (s *Static) putScratch(sc *staticScratch) {
	if cap(sc.word) > maxPooledRunes || cap(sc.ids) > maxPooledRunes {
		return
	}
	s.pool.Put(sc)
}

// embedOne writes the embedding of text into dst (len(dst) == s.dims).
//
// The rows are summed in float32. An unweighted F32 row is added with
// vek's AVX2 kernel (plain Go on other CPUs): BenchmarkStatic/static-F32/long
// took 0.38× the time of a scalar float64 loop (medians of six interleaved
// runs, bench/results/embed.md). F16 and I8 rows are converted in a scalar
// loop, which makes them 2.5-3× slower than F32. float32 holds the sum of at
// most 512 rows to about 1e-5 relative error, far below what changes a
// cosine ranking; a sum that overflows float32 is redone in float64.
func (s *Static) embedOne(sc *staticScratch, text string, dst []float32) {
	sc.ids = sc.ids[:0]
	sc.limit = s.maxTokens
	s.tok.encode(&sc.tokenScratch, text, s.maxRunes)
	if len(sc.ids) == 0 {
		clear(dst)
		return
	}
	d := s.dims
	acc := sc.acc[:d]
	clear(acc)
	for _, id := range sc.ids {
		row, w := s.rowOf(id)
		off := row * d
		switch {
		case s.f32 != nil && w == 1:
			vek32.Add_Inplace(acc, s.f32[off:off+d])
			continue
		case s.f32 != nil:
			r := s.f32[off : off+d]
			a := acc[:len(r)] // no bounds checks in the loop
			for j, x := range r {
				a[j] += w * x
			}
		case s.f16 != nil:
			tab := halfTable()
			r := s.f16[off : off+d]
			a := acc[:len(r)]
			for j, x := range r {
				a[j] += w * tab[x]
			}
		default:
			r := s.i8[off : off+d]
			a := acc[:len(r)]
			for j, x := range r {
				a[j] += w * float32(x)
			}
		}
	}
	var sum float64
	for _, x := range acc {
		sum += float64(x) * float64(x)
	}
	if math.IsInf(sum, 0) || math.IsNaN(sum) {
		s.sum64(sc.ids, dst)
		return
	}
	if sum == 0 {
		clear(dst)
		return
	}
	inv := 1 / math.Sqrt(sum)
	for j, x := range acc {
		dst[j] = float32(float64(x) * inv)
	}
}

// rowOf returns the table row and weight of token id.
func (s *Static) rowOf(id int32) (row int, w float32) {
	row, w = int(id), 1
	if s.mapping != nil {
		row = int(s.mapping[id])
	}
	if s.weights != nil {
		w = s.weights[id]
	}
	return row, w
}

// sum64 is embedOne's float64 path, for sums beyond float32's range (a
// finite table can hold values near 3e38).
func (s *Static) sum64(ids []int32, dst []float32) {
	acc := make([]float64, s.dims)
	d := s.dims
	for _, id := range ids {
		row, w32 := s.rowOf(id)
		w := float64(w32)
		for j := range acc {
			var x float64
			switch {
			case s.f32 != nil:
				x = float64(s.f32[row*d+j])
			case s.f16 != nil:
				x = float64(halfToFloat32(s.f16[row*d+j]))
			default:
				x = float64(s.i8[row*d+j])
			}
			acc[j] += w * x
		}
	}
	// Scale before squaring: the squares of values near 1e40 overflow too.
	var peak float64
	for _, x := range acc {
		peak = max(peak, math.Abs(x))
	}
	if peak == 0 || math.IsInf(peak, 0) {
		clear(dst)
		return
	}
	var sum float64
	for _, x := range acc {
		sum += (x / peak) * (x / peak)
	}
	inv := 1 / (math.Sqrt(sum) * peak)
	for j, x := range acc {
		dst[j] = float32(x * inv)
	}
}

// halfTable maps every IEEE 754 half to its float32 value: 256 KiB, built
// on first use. A lookup is faster than converting the bits per value.
var halfTable = sync.OnceValue(func() *[1 << 16]float32 {
	var t [1 << 16]float32
	for i := range t {
		t[i] = halfToFloat32(uint16(i))
	}
	return &t
})

// halfToFloat32 converts an IEEE 754 half to float32 exactly.
func halfToFloat32(h uint16) float32 {
	sign := uint32(h&0x8000) << 16
	exp := uint32(h>>10) & 0x1f
	mant := uint32(h & 0x3ff)
	switch {
	case exp == 0x1f: // Inf or NaN
		return math.Float32frombits(sign | 0x7f800000 | mant<<13)
	case exp == 0 && mant == 0:
		return math.Float32frombits(sign)
	case exp == 0: // subnormal: mant × 2^-24
		f := float32(mant) / (1 << 24)
		if sign != 0 {
			f = -f
		}
		return f
	}
	return math.Float32frombits(sign | (exp+127-15)<<23 | mant<<13)
}
