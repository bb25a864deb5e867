package embedtest

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"sort"
)

// StaticModel describes a small Model2Vec model folder for
// [WriteStaticModel]: the folder layout [embed.NewStatic] reads
// (model.safetensors, tokenizer.json, config.json). The zero value of every
// field but Vocab and Dims means the documented default.
type StaticModel struct {
	// Vocab lists the WordPiece vocabulary in token-id order: Vocab[i] has
	// id i. Continuation pieces start with "##". It must contain UnkToken.
	// The writer writes it exactly as given.
	Vocab []string

	// Specials lists the tokens of Vocab written as special added tokens
	// (special: true), which the embedder drops. Nil means those of
	// "[PAD]", "[UNK]", "[CLS]", "[SEP]" and "[MASK]" that are in Vocab.
	Specials []string

	// UnkToken is the WordPiece unknown token. Empty means "[UNK]".
	UnkToken string

	// Dims is the vector length, at least 1.
	Dims int

	// DType is the table's safetensors dtype: "F32" (the default, for
	// empty), "F16" or "I8". F16 rounds each value to the nearest half;
	// I8 rounds each value to the nearest integer, which must lie in
	// [-128, 127].
	DType string

	// Rows is the embedding table, one row of Dims values per table row:
	// len(Vocab) rows without Mapping, or any number the Mapping points
	// into. Nil means pseudo-random rows drawn from Seed (uniform in
	// [-1, 1), or integers in [-127, 127] for I8), TableRows of them.
	Rows [][]float32

	// TableRows is the number of random rows when Rows is nil and Mapping
	// is set. Zero means len(Vocab).
	TableRows int

	// Seed seeds the random rows.
	Seed uint64

	// Weights, when not nil, is written as the "weights" tensor: one
	// scale per token id (len(Vocab) values), dtype WeightsDType.
	Weights []float64

	// WeightsDType is the dtype of Weights: "F64" (the default, what
	// numpy writes), "F32" or "F16".
	WeightsDType string

	// Mapping, when not nil, is written as the "mapping" tensor in I64:
	// the table row of each token id (len(Vocab) values).
	Mapping []int

	// Cased keeps case and accents: the BertNormalizer's lowercase is
	// false. The default, false, lower-cases and strips accents, like
	// potion-base-8M.
	Cased bool

	// MaxInputCharsPerWord is the WordPiece limit above which a word is
	// unknown. Zero means 100, the BERT default.
	MaxInputCharsPerWord int

	// Normalize is config.json's "normalize".
	Normalize bool

	// Name, when not empty, is written as config.json's "model_name".
	Name string
}

// Tensor is one tensor for [WriteSafetensors]: Data is its raw
// little-endian bytes, written as given, so a test can write shapes,
// dtypes and sizes that disagree.
type Tensor struct {
	Name  string
	DType string
	Shape []int
	Data  []byte
}

// WriteStaticModel writes m as a Model2Vec model folder in dir (created if
// missing): model.safetensors, tokenizer.json and config.json. The output
// depends only on m, so equal models give byte-identical folders. It
// returns an error for an inconsistent m (no UnkToken in Vocab, rows of the
// wrong length, a Mapping or Weights of the wrong length, an unknown dtype)
// without writing anything.
func WriteStaticModel(dir string, m StaticModel) error {
	tensors, err := m.tensors()
	if err != nil {
		return fmt.Errorf("embedtest: write static model: %w", err)
	}
	tok, err := m.TokenizerJSON()
	if err != nil {
		return fmt.Errorf("embedtest: write static model: %w", err)
	}
	cfg := map[string]any{"normalize": m.Normalize, "model_type": "model2vec", "hidden_dim": m.Dims}
	if m.Name != "" {
		cfg["model_name"] = m.Name
	}
	cfgJSON, err := json.MarshalIndent(cfg, "", "    ")
	if err != nil {
		return fmt.Errorf("embedtest: write static model: %w", err)
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("embedtest: write static model: %w", err)
	}
	if err := WriteSafetensors(filepath.Join(dir, "model.safetensors"), tensors); err != nil {
		return err
	}
	for name, b := range map[string][]byte{"tokenizer.json": tok, "config.json": cfgJSON} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return fmt.Errorf("embedtest: write static model: %w", err)
		}
	}
	return nil
}

// TokenizerJSON returns the tokenizer.json [WriteStaticModel] writes for m:
// a Hugging Face tokenizers file with a BertNormalizer, a BertPreTokenizer
// and a WordPiece model.
func (m StaticModel) TokenizerJSON() ([]byte, error) {
	unk := m.unk()
	if !slices.Contains(m.Vocab, unk) {
		return nil, fmt.Errorf("unk token %q is not in Vocab", unk)
	}
	specials := m.Specials
	if specials == nil {
		for _, s := range []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"} {
			if slices.Contains(m.Vocab, s) {
				specials = append(specials, s)
			}
		}
	}
	ids := make(map[string]int, len(m.Vocab))
	for i, w := range m.Vocab {
		if _, dup := ids[w]; dup {
			return nil, fmt.Errorf("token %q appears twice in Vocab", w)
		}
		ids[w] = i
	}
	type added struct {
		ID         int    `json:"id"`
		Content    string `json:"content"`
		SingleWord bool   `json:"single_word"`
		LStrip     bool   `json:"lstrip"`
		RStrip     bool   `json:"rstrip"`
		Normalized bool   `json:"normalized"`
		Special    bool   `json:"special"`
	}
	var addedTokens []added
	for _, s := range specials {
		id, ok := ids[s]
		if !ok {
			return nil, fmt.Errorf("special token %q is not in Vocab", s)
		}
		addedTokens = append(addedTokens, added{ID: id, Content: s, Special: true})
	}
	sort.Slice(addedTokens, func(i, j int) bool { return addedTokens[i].ID < addedTokens[j].ID })
	maxChars := m.MaxInputCharsPerWord
	if maxChars == 0 {
		maxChars = 100
	}
	// json.Marshal sorts map keys, so the vocabulary is written in a stable
	// order; tokenizers writes it in id order, which readers must not rely
	// on either.
	doc := map[string]any{
		"version":      "1.0",
		"truncation":   nil,
		"padding":      nil,
		"added_tokens": addedTokens,
		"normalizer": map[string]any{
			"type":                 "BertNormalizer",
			"clean_text":           true,
			"handle_chinese_chars": true,
			"strip_accents":        nil,
			"lowercase":            !m.Cased,
		},
		"pre_tokenizer":  map[string]any{"type": "BertPreTokenizer"},
		"post_processor": nil,
		"decoder":        map[string]any{"type": "WordPiece", "prefix": "##", "cleanup": true},
		"model": map[string]any{
			"type":                      "WordPiece",
			"unk_token":                 unk,
			"continuing_subword_prefix": "##",
			"max_input_chars_per_word":  maxChars,
			"vocab":                     ids,
		},
	}
	return json.Marshal(doc)
}

func (m StaticModel) unk() string {
	if m.UnkToken == "" {
		return "[UNK]"
	}
	return m.UnkToken
}

// tensors builds the safetensors content of m.
func (m StaticModel) tensors() ([]Tensor, error) {
	if m.Dims < 1 {
		return nil, fmt.Errorf("Dims %d < 1", m.Dims)
	}
	if len(m.Vocab) == 0 {
		return nil, errors.New("empty Vocab")
	}
	dtype := m.DType
	if dtype == "" {
		dtype = "F32"
	}
	rows := m.Rows
	if rows == nil {
		n := m.TableRows
		if n == 0 {
			n = len(m.Vocab)
		}
		rng := rand.New(rand.NewPCG(m.Seed, 0x5eed))
		rows = make([][]float32, n)
		for i := range rows {
			rows[i] = make([]float32, m.Dims)
			for j := range rows[i] {
				if dtype == "I8" {
					rows[i][j] = float32(rng.IntN(255) - 127)
				} else {
					rows[i][j] = float32(rng.Float64()*2 - 1)
				}
			}
		}
	}
	if m.Mapping == nil && len(rows) != len(m.Vocab) {
		return nil, fmt.Errorf("%d rows for %d tokens and no Mapping", len(rows), len(m.Vocab))
	}
	var table []byte
	for i, r := range rows {
		if len(r) != m.Dims {
			return nil, fmt.Errorf("row %d has %d values, want %d", i, len(r), m.Dims)
		}
		for _, x := range r {
			switch dtype {
			case "F32":
				table = binary.LittleEndian.AppendUint32(table, math.Float32bits(x))
			case "F16":
				table = binary.LittleEndian.AppendUint16(table, Float16Bits(x))
			case "I8":
				v := math.Round(float64(x))
				if v < -128 || v > 127 {
					return nil, fmt.Errorf("row %d: %v does not fit in I8", i, x)
				}
				table = append(table, byte(int8(v)))
			default:
				return nil, fmt.Errorf("unknown DType %q", dtype)
			}
		}
	}
	out := []Tensor{{Name: "embeddings", DType: dtype, Shape: []int{len(rows), m.Dims}, Data: table}}
	if m.Weights != nil {
		if len(m.Weights) != len(m.Vocab) {
			return nil, fmt.Errorf("%d weights for %d tokens", len(m.Weights), len(m.Vocab))
		}
		wd := m.WeightsDType
		if wd == "" {
			wd = "F64"
		}
		var b []byte
		for _, w := range m.Weights {
			switch wd {
			case "F64":
				b = binary.LittleEndian.AppendUint64(b, math.Float64bits(w))
			case "F32":
				b = binary.LittleEndian.AppendUint32(b, math.Float32bits(float32(w)))
			case "F16":
				b = binary.LittleEndian.AppendUint16(b, Float16Bits(float32(w)))
			default:
				return nil, fmt.Errorf("unknown WeightsDType %q", wd)
			}
		}
		out = append(out, Tensor{Name: "weights", DType: wd, Shape: []int{len(m.Weights)}, Data: b})
	}
	if m.Mapping != nil {
		if len(m.Mapping) != len(m.Vocab) {
			return nil, fmt.Errorf("%d mapping entries for %d tokens", len(m.Mapping), len(m.Vocab))
		}
		var b []byte
		for _, r := range m.Mapping {
			b = binary.LittleEndian.AppendUint64(b, uint64(int64(r)))
		}
		out = append(out, Tensor{Name: "mapping", DType: "I64", Shape: []int{len(m.Mapping)}, Data: b})
	}
	return out, nil
}

// EncodeSafetensors returns the safetensors encoding of tensors: an 8-byte
// little-endian header length, a JSON header mapping each name to its
// dtype, shape and [begin, end) data offsets, then the data of each tensor
// in order. It writes what it is given, consistent or not, so tests can
// build malformed files; duplicate names are the caller's business (the
// JSON would hold the key twice).
func EncodeSafetensors(tensors []Tensor) []byte {
	header := []byte("{")
	off := 0
	for i, t := range tensors {
		if i > 0 {
			header = append(header, ',')
		}
		name, _ := json.Marshal(t.Name)
		shape, _ := json.Marshal(t.Shape)
		if t.Shape == nil {
			shape = []byte("[]")
		}
		header = append(header, name...)
		header = fmt.Appendf(header, `:{"dtype":%q,"shape":%s,"data_offsets":[%d,%d]}`, t.DType, shape, off, off+len(t.Data))
		off += len(t.Data)
	}
	header = append(header, '}')
	// The format pads the header with spaces to a multiple of 8 bytes so the
	// data is aligned.
	for len(header)%8 != 0 {
		header = append(header, ' ')
	}
	out := binary.LittleEndian.AppendUint64(nil, uint64(len(header)))
	out = append(out, header...)
	for _, t := range tensors {
		out = append(out, t.Data...)
	}
	return out
}

// WriteSafetensors writes [EncodeSafetensors](tensors) to path.
func WriteSafetensors(path string, tensors []Tensor) error {
	if err := os.WriteFile(path, EncodeSafetensors(tensors), 0o644); err != nil {
		return fmt.Errorf("embedtest: write safetensors: %w", err)
	}
	return nil
}

// Float16Bits returns the IEEE 754 half-precision encoding of x, rounded to
// nearest even; values beyond the half range become infinities and NaN
// stays NaN.
func Float16Bits(x float32) uint16 {
	b := math.Float32bits(x)
	sign := uint16(b>>16) & 0x8000
	exp := int(b>>23&0xff) - 127 + 15
	mant := b & 0x7fffff
	switch {
	case b&0x7fffffff > 0x7f800000: // NaN
		return sign | 0x7e00
	case exp >= 31: // Inf, or 65536 and beyond
		return sign | 0x7c00
	case exp <= 0: // subnormal half or zero
		if exp < -10 {
			return sign
		}
		mant |= 0x800000
		shift := uint(14 - exp)
		half := mant >> shift
		rem := mant & (1<<shift - 1)
		mid := uint32(1) << (shift - 1)
		if rem > mid || (rem == mid && half&1 == 1) {
			half++
		}
		return sign | uint16(half)
	}
	half := uint32(exp)<<10 | mant>>13
	rem := mant & 0x1fff
	if rem > 0x1000 || (rem == 0x1000 && half&1 == 1) {
		half++ // may carry into the exponent, which is correct rounding
	}
	return sign | uint16(half)
}
