package embed_test

import (
	"encoding/binary"
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// quantizedModel writes a vocabulary-quantized model in the newer
// Model2Vec format: testdata's hand-written Model2Vec-style Unigram
// tokenizer (14 pieces), a table of four rows of three dimensions in
// dtype, a mapping sending token id to row (id*7)%4 and a weight per
// token id 0.5 + 0.25×(id%5) in weightsDType.
func quantizedModel(t *testing.T, dtype, weightsDType, mappingDType string) string {
	t.Helper()
	tok, err := os.ReadFile(filepath.Join("testdata", "tokenizers", "hand-unigram-model2vec.json"))
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Model struct {
			Vocab [][]any `json:"vocab"`
		} `json:"model"`
	}
	if err := json.Unmarshal(tok, &doc); err != nil {
		t.Fatal(err)
	}
	vocab := len(doc.Model.Vocab)
	rows := []float64{
		1, 0, 0,
		0, 1, 0,
		0, 0, 1,
		1, 1, 1,
	}
	var emb, weights, mapping []byte
	for _, x := range rows {
		switch dtype {
		case "F32":
			emb = binary.LittleEndian.AppendUint32(emb, math.Float32bits(float32(x)))
		case "F64":
			emb = binary.LittleEndian.AppendUint64(emb, math.Float64bits(x))
		case "F16":
			emb = binary.LittleEndian.AppendUint16(emb, embedtest.Float16Bits(float32(x)))
		case "I8":
			emb = append(emb, byte(int8(x)))
		}
	}
	for id := range vocab {
		w := 0.5 + 0.25*float64(id%5)
		switch weightsDType {
		case "F64":
			weights = binary.LittleEndian.AppendUint64(weights, math.Float64bits(w))
		case "F32":
			weights = binary.LittleEndian.AppendUint32(weights, math.Float32bits(float32(w)))
		case "F16":
			weights = binary.LittleEndian.AppendUint16(weights, embedtest.Float16Bits(float32(w)))
		}
		row := id * 7 % 4
		if mappingDType == "I32" {
			mapping = binary.LittleEndian.AppendUint32(mapping, uint32(row))
		} else {
			mapping = binary.LittleEndian.AppendUint64(mapping, uint64(row))
		}
	}
	dir := t.TempDir()
	err = embedtest.WriteSafetensors(filepath.Join(dir, "model.safetensors"), []embedtest.Tensor{
		{Name: "embeddings", DType: dtype, Shape: []int{4, 3}, Data: emb},
		{Name: "mapping", DType: mappingDType, Shape: []int{vocab}, Data: mapping},
		{Name: "weights", DType: weightsDType, Shape: []int{vocab}, Data: weights},
	})
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{"tokenizer.json": tok, "config.json": []byte(`{"model_type":"model2vec","normalize":true}`)} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// TestStaticQuantized checks a vocabulary-quantized model in every table
// dtype against vectors computed by hand, as Model2Vec's
// StaticModel._encode_batch computes them: the mean of the rows of the
// text's token ids through mapping, each times its weight, normalised.
// The token ids are those Hugging Face's tokenizers gives (see
// testdata/tokenizers/expected/hand-unigram-model2vec.json).
func TestStaticQuantized(t *testing.T) {
	cases := []struct {
		text string
		want []float32
	}{
		// Rows: 0 (1,0,0), 1 (0,1,0), 2 (0,0,1), 3 (1,1,1).
		// "▁hello" 3 -> row 1, weight 1.25; "▁world" 4 -> row 0, 1.5.
		{"hello world", unit(1.5, 1.25, 0)},
		// ...and "▁" 2 twice (row 2, 1.0), "," 5 (row 3, 0.5), "!" 6
		// (row 2, 0.75): row 0 × 1.5, row 1 × 1.25, row 2 × 2.75, row 3 × 0.5.
		{"Hello, World!", unit(2, 1.75, 3.25)},
		// "▁caf" 9 (row 3, 1.5), "e" 10 twice (row 2, 0.5), "▁na" 11
		// (row 1, 0.75), "i" 12 (row 0, 1.0), "v" 13 (row 3, 1.25): row 0 ×
		// 1, row 1 × 0.75, row 2 × 1, row 3 × 2.75.
		{"Café naïve", unit(3.75, 3.5, 3.75)},
		// "▁hello" 3, "▁" 2, and the unknown "😀", dropped.
		{"hello 😀", unit(0, 1.25, 1)},
		{"", unit(0, 0, 0)},
	}
	for _, dt := range []struct{ emb, weights, mapping string }{
		{"F32", "F64", "I32"}, {"F64", "F64", "I32"}, {"F16", "F32", "I64"}, {"I8", "F16", "I32"},
	} {
		t.Run(dt.emb+"-"+dt.weights+"-"+dt.mapping, func(t *testing.T) {
			s := newStatic(t, quantizedModel(t, dt.emb, dt.weights, dt.mapping), nil)
			if s.Dimensions() != 3 {
				t.Fatalf("Dimensions %d, want 3", s.Dimensions())
			}
			for _, c := range cases {
				if got := embedOne(t, s, c.text); !near(got, c.want) {
					t.Errorf("%q: %v, want %v", c.text, got, c.want)
				}
			}
		})
	}
	// With MaxTokens 1 the text is first cut, as Model2Vec does, to 1 ×
	// the median piece length (2 characters): "He" is "▁", "h" (unknown)
	// and "e", of which "▁" (row 2) is kept; uncut, "▁hello" (row 1)
	// would be.
	s := newStatic(t, quantizedModel(t, "F32", "F64", "I32"), &embed.StaticOptions{MaxTokens: 1})
	if got := embedOne(t, s, "Hello, World!"); !near(got, unit(0, 0, 1)) {
		t.Errorf("MaxTokens 1: %v, want %v", got, unit(0, 0, 1))
	}
}

// TestStaticVocabQuantizedUnigram loads the shared data's
// vocab-quantized-unigram model (a Unigram tokenizer with a Sequence
// normalizer and a Metaspace pre-tokenizer; F32 embeddings [128, 64],
// I32 mapping, F64 weights) and checks the vector of every reference
// sentence against the one computed from the model's tensors and the ids
// Hugging Face's tokenizers gives, with the unknown token dropped, as
// Model2Vec does (and the special [PAD], which Static drops too).
func TestStaticVocabQuantizedUnigram(t *testing.T) {
	dir := filepath.Join("..", "..", "shared", "data", "model2vec", "vocab-quantized-unigram")
	if _, err := os.Stat(dir); errors.Is(err, fs.ErrNotExist) {
		t.Skipf("%s is absent (the shared data folder, ../shared/data from the repository root, is not here)", dir)
	}
	s := newStatic(t, dir, nil)
	if s.Dimensions() != 64 {
		t.Fatalf("Dimensions %d, want 64", s.Dimensions())
	}
	emb, mapping, weights := readQuantized(t, filepath.Join(dir, "model.safetensors"))
	var texts []string
	var ref struct {
		IDs [][]int `json:"ids"`
	}
	readFileJSON(t, filepath.Join("testdata", "tokenizers", "sentences.json"), &texts)
	readFileJSON(t, filepath.Join("testdata", "tokenizers", "expected", "vocab-quantized-unigram.json"), &ref)
	// Model2Vec drops the unknown token; Static also drops special
	// tokens typed in the text ("[PAD]"; see [embed.Static]).
	const pad, unk = 0, 1
	vecs, err := s.Embed(t.Context(), texts)
	if err != nil {
		t.Fatal(err)
	}
	for i, text := range texts {
		sum := make([]float64, 64)
		for _, id := range ref.IDs[i] {
			if id == unk || id == pad {
				continue
			}
			row := emb[int(mapping[id])*64:][:64]
			for j := range sum {
				sum[j] += weights[id] * float64(row[j])
			}
		}
		if want := unit(sum...); !near(vecs[i], want) {
			t.Errorf("%q: %v, want %v", text, vecs[i], want)
		}
	}
}

// readQuantized decodes the F32 embeddings, I32 mapping and F64 weights of
// a safetensors file, independently of the package's reader.
func readQuantized(t *testing.T, path string) (emb []float32, mapping []int32, weights []float64) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(b)
	var header map[string]struct {
		DType   string  `json:"dtype"`
		Offsets [2]int  `json:"data_offsets"`
		Shape   []int64 `json:"shape"`
	}
	if err := json.Unmarshal(b[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	data := b[8+n:]
	want := map[string]string{"embeddings": "F32", "mapping": "I32", "weights": "F64"}
	for name, dt := range want {
		if header[name].DType != dt {
			t.Fatalf("%s is %s, want %s", name, header[name].DType, dt)
		}
	}
	part := func(name string) []byte { o := header[name].Offsets; return data[o[0]:o[1]] }
	for p := part("embeddings"); len(p) > 0; p = p[4:] {
		emb = append(emb, math.Float32frombits(binary.LittleEndian.Uint32(p)))
	}
	for p := part("mapping"); len(p) > 0; p = p[4:] {
		mapping = append(mapping, int32(binary.LittleEndian.Uint32(p)))
	}
	for p := part("weights"); len(p) > 0; p = p[8:] {
		weights = append(weights, math.Float64frombits(binary.LittleEndian.Uint64(p)))
	}
	return emb, mapping, weights
}

func readFileJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestStaticGeneralConcurrent embeds from several goroutines through the
// general pipeline (testdata's Unigram tokenizer in sentencepiece's form,
// with the Precompiled map, and the hand-written Model2Vec one) and checks
// every result equals the sequential one; under -race it checks the
// pipeline shares nothing mutable.
func TestStaticGeneralConcurrent(t *testing.T) {
	var texts []string
	readFileJSON(t, filepath.Join("testdata", "tokenizers", "sentences.json"), &texts)
	for _, tok := range []string{"spm-unigram-nmt-nfkc.json", "tiny-unigram-added.json", "hand-unigram-model2vec.json"} {
		dir := quantizedModel(t, "F32", "F64", "I32")
		b, err := os.ReadFile(filepath.Join("testdata", "tokenizers", tok))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "tokenizer.json"), b, 0o644); err != nil {
			t.Fatal(err)
		}
		// The mapping and weights of quantizedModel cover 14 tokens: drop
		// them and give every token its own row.
		var doc struct {
			Model struct {
				Vocab json.RawMessage `json:"vocab"`
			} `json:"model"`
			Added []any `json:"added_tokens"`
		}
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		var vocab []any
		if err := json.Unmarshal(doc.Model.Vocab, &vocab); err != nil {
			t.Fatal(err)
		}
		n := len(vocab)
		rows := make([][]float32, n)
		for i := range rows {
			rows[i] = []float32{float32(i%7) + 1, float32(i%5) - 2, float32(i % 3)}
		}
		var data []byte
		for _, r := range rows {
			for _, x := range r {
				data = binary.LittleEndian.AppendUint32(data, math.Float32bits(x))
			}
		}
		if err := embedtest.WriteSafetensors(filepath.Join(dir, "model.safetensors"), []embedtest.Tensor{
			{Name: "embeddings", DType: "F32", Shape: []int{n, 3}, Data: data},
		}); err != nil {
			t.Fatal(err)
		}
		s := newStatic(t, dir, nil)
		want, err := s.Embed(t.Context(), texts)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for range 4 {
			wg.Go(func() {
				for range 3 {
					got, err := s.Embed(t.Context(), texts)
					if err != nil {
						t.Error(err)
						return
					}
					for j := range got {
						if !near(got[j], want[j]) {
							t.Errorf("%s: %q differs", tok, texts[j])
							return
						}
					}
				}
			})
		}
		wg.Wait()
	}
}
