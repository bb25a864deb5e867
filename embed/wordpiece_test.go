package embed

import (
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// testTokenizerJSON returns a tokenizer.json for vocab with the given
// normalizer options (nil: BertNormalizer defaults) and the BERT specials
// that are in vocab.
func testTokenizerJSON(vocab []string, normalizer map[string]any) []byte {
	ids := make(map[string]int, len(vocab))
	var added []map[string]any
	for i, w := range vocab {
		ids[w] = i
		if strings.HasPrefix(w, "[") && strings.HasSuffix(w, "]") && len(w) > 2 {
			added = append(added, map[string]any{"id": i, "content": w, "special": true})
		}
	}
	nz := map[string]any{"type": "BertNormalizer"}
	for k, v := range normalizer {
		nz[k] = v
	}
	b, _ := json.Marshal(map[string]any{
		"added_tokens":  added,
		"normalizer":    nz,
		"pre_tokenizer": map[string]any{"type": "BertPreTokenizer"},
		"model":         map[string]any{"type": "WordPiece", "unk_token": "[UNK]", "continuing_subword_prefix": "##", "max_input_chars_per_word": 100, "vocab": ids},
	})
	return b
}

var testVocab = []string{
	"[UNK]", "[CLS]", "[SEP]",
	"un", "##aff", "##able", "runn", "##ing", "run", "a", "b", ",", ".", "$", "'",
	"i", "\u0307", "ǖ", "u", "한", "ᄒ", "##ᅡ", "##ᆫ", "東", "\u8c48", "é", "e", "hello", "world", "##s",
}

// tokens returns the tokens tp produces for text.
func tokens(tp *tokenizer, text string, limit int) []string {
	s := &tokenScratch{limit: limit}
	tp.encode(s, text, 0)
	out := make([]string, len(s.ids))
	for i, id := range s.ids {
		out[i] = tp.tokens[id]
	}
	return out
}

func TestWordPieceTokens(t *testing.T) {
	uncased, err := parseTokenizer(testTokenizerJSON(testVocab, nil))
	if err != nil {
		t.Fatal(err)
	}
	cased, err := parseTokenizer(testTokenizerJSON(testVocab, map[string]any{"lowercase": false}))
	if err != nil {
		t.Fatal(err)
	}
	noCJK, err := parseTokenizer(testTokenizerJSON(testVocab, map[string]any{"handle_chinese_chars": false}))
	if err != nil {
		t.Fatal(err)
	}
	casedStrip, err := parseTokenizer(testTokenizerJSON(testVocab, map[string]any{"lowercase": false, "strip_accents": true}))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		tp   *tokenizer
		text string
		want []string
	}{
		{uncased, "unaffable", []string{"un", "##aff", "##able"}},
		{uncased, "UNAFFABLE running", []string{"un", "##aff", "##able", "runn", "##ing"}},
		{uncased, "run,a.b", []string{"run", ",", "a", ".", "b"}},
		{uncased, "$a's", []string{"$", "a", "'"}},            // "s" alone is not in the vocabulary
		{uncased, "unx a", []string{"a"}},                     // un + ##x fails: the whole word is unknown
		{uncased, "[CLS] a [SEP]", []string{"a"}},             // specials cut from the raw text
		{uncased, "a[SEP]b", []string{"a", "b"}},              // and split words
		{uncased, "ǖ", []string{"u"}},                         // NFD is complete: u + two marks
		{uncased, "한", []string{"ᄒ", "##ᅡ", "##ᆫ"}},           // Hangul decomposes to jamo, one word
		{uncased, "İ", []string{"i"}},                         // I + dot above, stripped
		{uncased, "東京", []string{"東"}},                        // each ideograph a word; 京 unknown
		{uncased, "\uf900", []string{"\u8c48"}},               // the compatibility ideograph decomposes
		{uncased, "a\u00a0b\u3000a", []string{"a", "b", "a"}}, // Unicode spaces split
		{uncased, "a\u0085b", []string{}},                     // NEL is a control character: removed, "ab" is unknown
		{uncased, "hello\u200bworld", []string{}},             // zero-width space is Cf: removed, one unknown word
		{uncased, "a\x0bb", []string{}},                       // \v is a control character: "ab"
		{uncased, "a\tb\r\na", []string{"a", "b", "a"}},
		{uncased, "hello\ufffdworld", []string{}},
		{uncased, "a—b", []string{"a", "b"}}, // the dash is punctuation, and unknown
		{uncased, "Éé", []string{}},          // "ee" is not a token
		{cased, "É é", []string{"é"}},        // no stripping: É is unknown
		{cased, "İ", []string{}},             // kept as is
		{casedStrip, "É é", []string{"e"}},   // stripped but not lowercased: É -> E, unknown
		{noCJK, "東京", []string{}},            // one unknown word
		{uncased, "hellos worlds", []string{"hello", "##s", "world", "##s"}},
	} {
		got := tokens(c.tp, c.text, math.MaxInt)
		if !slices.Equal(got, c.want) {
			t.Errorf("tokens(%q) = %q, want %q", c.text, got, c.want)
		}
	}
	if got := tokens(uncased, "a b a b a", 3); !slices.Equal(got, []string{"a", "b", "a"}) {
		t.Errorf("limit 3: %q", got)
	}
	if got := tokens(uncased, "unaffable a", 2); !slices.Equal(got, []string{"un", "##aff"}) {
		t.Errorf("limit 2 inside a word: %q", got)
	}
}

func TestWordPieceMedian(t *testing.T) {
	for _, c := range []struct {
		vocab []string
		want  int
	}{
		{[]string{"[UNK]", "a", "bb"}, 2},         // 1 2 5
		{[]string{"[UNK]", "a", "bb", "ccc"}, 2},  // 1 2 3 5: 2.5 truncated
		{[]string{"[UNK]", "é", "東京", "abcd"}, 3}, // characters, not bytes: 1 2 4 5
	} {
		tp, err := parseTokenizer(testTokenizerJSON(c.vocab, nil))
		if err != nil {
			t.Fatal(err)
		}
		if tp.medianRunes != c.want {
			t.Errorf("median of %q = %d, want %d", c.vocab, tp.medianRunes, c.want)
		}
	}
}

func TestHalfToFloat32(t *testing.T) {
	for _, c := range []struct {
		h    uint16
		want float32
	}{
		{0x0000, 0}, {0x3c00, 1}, {0xc000, -2}, {0x7bff, 65504}, {0x0001, 5.960464477539063e-08},
		{0x03ff, 6.097555160522461e-05}, {0x0400, 6.103515625e-05}, {0x3555, 0.333251953125},
	} {
		if got := halfToFloat32(c.h); got != c.want {
			t.Errorf("halfToFloat32(%#04x) = %v, want %v", c.h, got, c.want)
		}
	}
	if !math.IsInf(float64(halfToFloat32(0x7c00)), 1) || !math.IsNaN(float64(halfToFloat32(0x7e00))) {
		t.Error("Inf or NaN half")
	}
	if got := halfToFloat32(0x8000); got != 0 || !math.Signbit(float64(got)) {
		t.Errorf("negative zero: %v", got)
	}
}

// safetensorsSeed builds a small valid safetensors file (package embedtest
// has the general writer, but importing it here would be a cycle).
func safetensorsSeed(header string, data []byte) []byte {
	for len(header)%8 != 0 {
		header += " "
	}
	b := make([]byte, 8, 8+len(header)+len(data))
	b[0] = byte(len(header))
	b[1] = byte(len(header) >> 8)
	return append(append(b, header...), data...)
}

// FuzzSafetensors checks that parseSafetensors never panics, that it
// returns only ErrInvalidModel errors, and that what it accepts is
// consistent: every tensor's bytes match its shape and lie in the file.
func FuzzSafetensors(f *testing.F) {
	f.Add(safetensorsSeed(`{"embeddings":{"dtype":"F32","shape":[2,2],"data_offsets":[0,16]}}`, make([]byte, 16)))
	f.Add(safetensorsSeed(`{"__metadata__":{"format":"pt"},"embeddings":{"dtype":"I8","shape":[3,2],"data_offsets":[0,6]},"mapping":{"dtype":"I64","shape":[1],"data_offsets":[6,14]}}`, make([]byte, 14)))
	f.Add(safetensorsSeed(`{"a":{"dtype":"F16","shape":[],"data_offsets":[0,2]},"b":{"dtype":"F64","shape":[0],"data_offsets":[2,2]}}`, make([]byte, 2)))
	f.Add(safetensorsSeed(`{"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]},"a":{"dtype":"F16","shape":[1],"data_offsets":[0,2]}}`, make([]byte, 2)))
	f.Add([]byte{})
	f.Add([]byte{255, 255, 255, 255, 255, 255, 255, 255})
	f.Fuzz(func(t *testing.T, b []byte) {
		ts, err := parseSafetensors(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidModel) {
				t.Fatalf("error %v does not wrap ErrInvalidModel", err)
			}
			return
		}
		for name, tn := range ts {
			n := 1
			for _, d := range tn.shape {
				n *= d
			}
			if n*tn.dtype.size != len(tn.data) {
				t.Fatalf("tensor %q: shape %v × %d != %d bytes", name, tn.shape, tn.dtype.size, len(tn.data))
			}
		}
	})
}

// FuzzTokenizer checks that parseTokenizer never panics and returns only
// ErrInvalidModel or ErrUnsupportedModel errors, and that a tokenizer it
// accepts encodes text without panicking, within the limit, to ids in
// range that are neither unknown nor special.
func FuzzTokenizer(f *testing.F) {
	f.Add(testTokenizerJSON(testVocab, nil), "UNaffable, running! 東京 한 [CLS]")
	f.Add(testTokenizerJSON(testVocab, map[string]any{"lowercase": false, "strip_accents": true, "clean_text": false}), "a\x0bb\x00c")
	f.Add(testTokenizerJSON([]string{"[UNK]", "##", "#"}, nil), "## # ###")
	f.Add([]byte(`{"normalizer":{"type":"BertNormalizer"},"pre_tokenizer":{"type":"BertPreTokenizer"},"model":{"type":"WordPiece","vocab":{"[UNK]":0},"continuing_subword_prefix":""}}`), "abc")
	f.Add([]byte(`{"model":{"type":"WordPiece"}}`), "")
	f.Add([]byte(`{"normalizer":{"type":"Sequence","normalizers":[{"type":"BertNormalizer"},{"type":"Replace","pattern":{"Regex":"\\s+"},"content":" "},{"type":"Strip"}]},`+
		`"pre_tokenizer":{"type":"Metaspace","replacement":"▁","prepend_scheme":"always","split":false},`+
		`"model":{"type":"Unigram","unk_id":0,"vocab":[["[UNK]",0],["▁a",-1],["b",-2],["▁",-3],["ab",-1.5]]}}`), "a b\xffab  ▁ab")
	f.Add([]byte(`{"normalizer":{"type":"Nmt"},"pre_tokenizer":{"type":"Sequence","pretokenizers":[{"type":"WhitespaceSplit"},{"type":"Metaspace","prepend_scheme":"first"},{"type":"Digits"}]},`+
		`"model":{"type":"Unigram","unk_id":null,"byte_fallback":true,"vocab":[["<0x41>",-1],["a",-1],["",-1]]}}`), "A a 12 \x00é")
	f.Add([]byte(`{"pre_tokenizer":{"type":"ByteLevel","add_prefix_space":true,"use_regex":true},`+
		`"model":{"type":"Unigram","unk_id":0,"vocab":[["<unk>",0],["Ġ",-1],["a",-2]]}}`), "a\u3000\u3000b 's  \t x")
	f.Add([]byte(`{"normalizer":{"type":"Lowercase"},"pre_tokenizer":{"type":"Whitespace"},"model":{"type":"WordPiece","vocab":{"[UNK]":0,"a":1,"##b":2}}}`), "ab a-b AB")
	f.Add([]byte(`null`), "x")
	f.Fuzz(func(t *testing.T, b []byte, text string) {
		tp, err := parseTokenizer(b)
		if err != nil {
			if !errors.Is(err, ErrInvalidModel) && !errors.Is(err, ErrUnsupportedModel) {
				t.Fatalf("error %v wraps neither ErrInvalidModel nor ErrUnsupportedModel", err)
			}
			return
		}
		for _, limit := range []int{3, math.MaxInt} {
			s := &tokenScratch{limit: limit}
			tp.encode(s, text, 0)
			if len(s.ids) > limit {
				t.Fatalf("%d tokens past the limit %d", len(s.ids), limit)
			}
			for _, id := range s.ids {
				if id < 0 || int(id) >= len(tp.tokens) || id == tp.unk || tp.dropped[id] {
					t.Fatalf("id %d (vocabulary %d, unk %d)", id, len(tp.tokens), tp.unk)
				}
			}
		}
	})
}

// TestSpecialsModel compares the splitting of special tokens with the
// plain algorithm it replaced (search every special in the rest of the
// text, take the earliest, repeat): the same ids on random texts of
// specials, their fragments, words and spaces.
func TestSpecialsModel(t *testing.T) {
	tp, err := parseTokenizer(testTokenizerJSON(testVocab, nil))
	if err != nil {
		t.Fatal(err)
	}
	ref := func(text string) []int32 {
		s := &tokenScratch{limit: math.MaxInt}
		for !s.full {
			at, size := -1, 0
			for _, sp := range tp.specials {
				if i := strings.Index(text, sp); i >= 0 && (at < 0 || i < at) {
					at, size = i, len(sp)
				}
			}
			if at < 0 {
				break
			}
			tp.segment(s, text[:at])
			tp.flush(s)
			text = text[at+size:]
		}
		if !s.full {
			tp.segment(s, text)
			tp.flush(s)
		}
		return s.ids
	}
	parts := []string{"[CLS]", "[SEP]", "[CL", "S]", "[", "]", "hello", "world", " ", "running", "a", "[[CLS]]", "[SEP][CLS]"}
	rng := rand.New(rand.NewPCG(7, 8))
	for range 2000 {
		var b strings.Builder
		for range rng.IntN(12) {
			b.WriteString(parts[rng.IntN(len(parts))])
		}
		text := b.String()
		s := &tokenScratch{limit: math.MaxInt}
		tp.encode(s, text, 0)
		if want := ref(text); !slices.Equal(s.ids, want) {
			t.Fatalf("%q: ids %v, want %v", text, s.ids, want)
		}
	}
}
