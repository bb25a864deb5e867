package embed_test

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// tinyVocab is the vocabulary of the hand-checked test model. Its rows
// (tinyRows) are small integers, so every expected vector below is worked
// out by hand: the sum of the rows of the text's tokens, divided by its
// norm.
var tinyVocab = []string{
	"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", // 0-4
	"cafe", "the", "cat", "##s", "play", "##ing", ",", "!", "dog", // 5-13
	"東", "京", // 14-15
}

var tinyRows = [][]float32{
	{5, 5, 5, 5}, {7, -7, 7, -7}, {5, 5, 5, 5}, {5, 5, 5, 5}, {5, 5, 5, 5},
	{1, 0, 0, 0}, // cafe
	{0, 1, 0, 0}, // the
	{0, 0, 1, 0}, // cat
	{0, 0, 0, 1}, // ##s
	{1, 1, 0, 0}, // play
	{0, 0, 1, 1}, // ##ing
	{2, 0, 0, 0}, // ,
	{0, 2, 0, 0}, // !
	{1, 2, 3, 4}, // dog
	{0, 0, 0, 3}, // 東
	{0, 3, 0, 0}, // 京
}

func tinyModel() embedtest.StaticModel {
	return embedtest.StaticModel{Vocab: tinyVocab, Dims: 4, Rows: tinyRows, Normalize: true}
}

func writeModel(t testing.TB, m embedtest.StaticModel) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "tiny-model")
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		t.Fatal(err)
	}
	return dir
}

func newStatic(t testing.TB, dir string, opts *embed.StaticOptions) *embed.Static {
	t.Helper()
	s, err := embed.NewStatic(dir, opts)
	if err != nil {
		t.Fatalf("NewStatic: %v", err)
	}
	return s
}

// unit returns v divided by its norm: the expected output for a token sum v.
func unit(v ...float64) []float32 {
	var s float64
	for _, x := range v {
		s += x * x
	}
	out := make([]float32, len(v))
	if s == 0 {
		return out
	}
	for i, x := range v {
		out[i] = float32(x / math.Sqrt(s))
	}
	return out
}

func embedOne(t testing.TB, e embed.Embedder, text string) []float32 {
	t.Helper()
	v, err := e.Embed(context.Background(), []string{text})
	if err != nil {
		t.Fatal(err)
	}
	return v[0]
}

func near(a, b []float32) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if math.Abs(float64(a[i]-b[i])) > 1e-6 {
			return false
		}
	}
	return true
}

// staticCases are shared by the F32, F16 and I8 tables: their rows are
// small integers, exact in every dtype.
var staticCases = []struct {
	name, text string
	want       []float32
}{
	{"word", "cafe", unit(1, 0, 0, 0)},
	{"accent", "café", unit(1, 0, 0, 0)},
	{"combining accent", "cafe\u0301", unit(1, 0, 0, 0)},
	{"upper case", "CAFÉ", unit(1, 0, 0, 0)},
	{"punctuation", "Café!", unit(1, 2, 0, 0)},                      // cafe + !
	{"punctuation glued", "cat,dog", unit(3, 2, 4, 4)},              // cat + , + dog
	{"continuation", "cats", unit(0, 0, 1, 1)},                      // cat ##s
	{"two continuations", "playing", unit(1, 1, 1, 1)},              // play ##ing
	{"sentence", "The cat, the dog", unit(3, 4, 4, 4)},              // the cat , the dog
	{"unknown word dropped", "the zebra", unit(0, 1, 0, 0)},         // zebra is unknown
	{"unknown piece drops the word", "catx dog", unit(1, 2, 3, 4)},  // catx: cat, then no ##x
	{"only unknown", "zebra", unit(0, 0, 0, 0)},                     // zero vector
	{"empty", "", unit(0, 0, 0, 0)},                                 //
	{"whitespace", " \t\n ", unit(0, 0, 0, 0)},                      //
	{"special tokens dropped", "[CLS] the [SEP]", unit(0, 1, 0, 0)}, // not [, cls, ]
	{"special token glued", "the[MASK]cat", unit(0, 1, 1, 0)},       // the cat
	{"control characters removed", "ca\x00fe\u200b", unit(1, 0, 0, 0)},
	{"chinese characters split", "東京", unit(0, 3, 0, 3)},
	{"long word", "cat" + strings.Repeat("s", 97), unit(0, 0, 1, 97)},             // 100 characters
	{"too long word", "cat" + strings.Repeat("s", 98) + " the", unit(0, 1, 0, 0)}, // 101: unknown
	// The median token length is 3 (lengths 1,1,1,1,3,3,3,3 | 4,4,5,...:
	// (3+4)/2 truncated), so a text is first cut to 512×3 = 1536
	// characters: 384 "the "s, and "dog" is cut off.
	{"long text capped", strings.Repeat("the ", 600) + "dog", unit(0, 1, 0, 0)},
}

func TestStaticVectors(t *testing.T) {
	for _, dtype := range []string{"F32", "F16", "I8"} {
		t.Run(dtype, func(t *testing.T) {
			m := tinyModel()
			m.DType = dtype
			s := newStatic(t, writeModel(t, m), nil)
			if s.Dimensions() != 4 {
				t.Fatalf("Dimensions() = %d", s.Dimensions())
			}
			for _, c := range staticCases {
				if got := embedOne(t, s, c.text); !near(got, c.want) {
					t.Errorf("%s: Embed(%.40q) = %v, want %v", c.name, c.text, got, c.want)
				}
			}
		})
	}
}

func TestStaticMaxTokens(t *testing.T) {
	dir := writeModel(t, tinyModel())
	// MaxTokens 3: the text is cut to 3×3 = 9 characters, "cats cats",
	// whose 4 tokens are capped to cat ##s cat.
	s := newStatic(t, dir, &embed.StaticOptions{MaxTokens: 3})
	if got, want := embedOne(t, s, "cats cats dog"), unit(0, 0, 2, 1); !near(got, want) {
		t.Errorf("MaxTokens 3: %v, want %v", got, want)
	}
	// No limit: 600 "the"s and the dog.
	s = newStatic(t, dir, &embed.StaticOptions{MaxTokens: -1})
	if got, want := embedOne(t, s, strings.Repeat("the ", 600)+"dog"), unit(1, 602, 3, 4); !near(got, want) {
		t.Errorf("no limit: %v, want %v", got, want)
	}
	if _, err := embed.NewStatic(dir, &embed.StaticOptions{MaxTokens: -2}); !errors.Is(err, embed.ErrInvalidOptions) {
		t.Errorf("MaxTokens -2: %v, want ErrInvalidOptions", err)
	}
}

// TestStaticHugeValues: rows near float32's largest value overflow a
// float32 sum; the vector must still be the normalised sum.
func TestStaticHugeValues(t *testing.T) {
	m := embedtest.StaticModel{Vocab: []string{"[UNK]", "big", "small"}, Dims: 2,
		Rows: [][]float32{{0, 0}, {3e38, 1e38}, {1, 0}}}
	s := newStatic(t, writeModel(t, m), nil)
	// (6e38, 2e38) ∝ (3, 1)
	if got, want := embedOne(t, s, "big big"), unit(3, 1); !near(got, want) {
		t.Errorf("Embed(big big) = %v, want %v", got, want)
	}
	if got, want := embedOne(t, s, "small"), unit(1, 0); !near(got, want) {
		t.Errorf("Embed(small) = %v, want %v", got, want)
	}
}

func TestStaticCased(t *testing.T) {
	m := tinyModel()
	m.Cased = true
	s := newStatic(t, writeModel(t, m), nil)
	for text, want := range map[string][]float32{
		"cafe":  unit(1, 0, 0, 0),
		"Cafe":  unit(0, 0, 0, 0), // no lower-casing
		"café":  unit(0, 0, 0, 0), // no accent stripping
		"the C": unit(0, 1, 0, 0),
	} {
		if got := embedOne(t, s, text); !near(got, want) {
			t.Errorf("cased Embed(%q) = %v, want %v", text, got, want)
		}
	}
}

func TestStaticWeightsAndMapping(t *testing.T) {
	weights := make([]float64, len(tinyVocab))
	for i := range weights {
		weights[i] = 1
	}
	weights[2] = 10  // [CLS]: catches weights indexed by row instead of token
	weights[6] = 2   // the
	weights[7] = 0.5 // cat
	weights[8] = 3   // ##s

	t.Run("weights", func(t *testing.T) {
		for _, wd := range []string{"F64", "F32", "F16"} {
			m := tinyModel()
			m.Weights, m.WeightsDType = weights, wd
			s := newStatic(t, writeModel(t, m), nil)
			// 2×the + 0.5×cat + 3×##s
			if got, want := embedOne(t, s, "the cats"), unit(0, 2, 0.5, 3); !near(got, want) {
				t.Errorf("%s weights: %v, want %v", wd, got, want)
			}
		}
	})

	// Four table rows; tokens share them through the mapping.
	rows := [][]float32{{9, 9, 9, 9}, {1, 0, 0, 0}, {0, 1, 1, 0}, {0, 0, 0, 1}}
	mapping := []int{0, 0, 0, 0, 0, 1, 2, 2, 3, 1, 3, 3, 3, 1, 3, 3}
	t.Run("mapping", func(t *testing.T) {
		m := tinyModel()
		m.Rows, m.Mapping = rows, mapping
		s := newStatic(t, writeModel(t, m), nil)
		// the → row 2, cat → row 2, ##s → row 3
		if got, want := embedOne(t, s, "the cats"), unit(0, 2, 2, 1); !near(got, want) {
			t.Errorf("mapping: %v, want %v", got, want)
		}
	})
	t.Run("mapping and weights", func(t *testing.T) {
		m := tinyModel()
		m.Rows, m.Mapping, m.Weights, m.DType = rows, mapping, weights, "I8"
		s := newStatic(t, writeModel(t, m), nil)
		// 2×row2 + 0.5×row2 + 3×row3: weights follow the token, not the row.
		if got, want := embedOne(t, s, "the cats"), unit(0, 2.5, 2.5, 3); !near(got, want) {
			t.Errorf("mapping and weights: %v, want %v", got, want)
		}
	})
}

func TestStaticIdentity(t *testing.T) {
	m := tinyModel()
	dir := writeModel(t, m)
	s := newStatic(t, dir, nil)
	id := s.Identity()
	if id.Provider != "static" || !strings.HasPrefix(id.Model, "4-") || len(id.Model) != 2+16 {
		t.Fatalf("Identity() = %+v, want static/4-<16 hex digits>", id)
	}
	if s.Name() != "tiny-model" {
		t.Errorf("Name() = %q, want the folder name", s.Name())
	}
	if n := newStatic(t, dir, &embed.StaticOptions{Name: "potion"}).Name(); n != "potion" {
		t.Errorf("Name() = %q with Name option potion", n)
	}
	named := tinyModel()
	named.Name = "tiny-potion"
	namedDir := writeModel(t, named)
	if n := newStatic(t, namedDir, nil).Name(); n != "tiny-potion" {
		t.Errorf("Name() = %q with config model_name tiny-potion", n)
	}
	if n := newStatic(t, namedDir, &embed.StaticOptions{Name: "x"}).Name(); n != "x" {
		t.Errorf("Name() = %q: the option must win over the config", n)
	}

	// Moving the folder keeps the identity.
	moved := filepath.Join(t.TempDir(), "elsewhere")
	if err := os.Rename(dir, moved); err != nil {
		t.Fatal(err)
	}
	if got := newStatic(t, moved, nil).Identity(); got != id {
		t.Errorf("identity after a move: %v, want %v", got, id)
	}
	// Any change to the content changes it.
	changes := map[string]func(*embedtest.StaticModel){
		"a row": func(m *embedtest.StaticModel) {
			m.Rows = append([][]float32(nil), m.Rows...)
			m.Rows[6] = []float32{0, 1, 0, 1}
		},
		"dtype": func(m *embedtest.StaticModel) { m.DType = "F16" },
		"a token": func(m *embedtest.StaticModel) {
			m.Vocab = append(append([]string(nil), m.Vocab[:13]...), "cow", "東", "京")
		},
		"case":      func(m *embedtest.StaticModel) { m.Cased = true },
		"max chars": func(m *embedtest.StaticModel) { m.MaxInputCharsPerWord = 50 },
		"weights":   func(m *embedtest.StaticModel) { m.Weights = make([]float64, len(m.Vocab)) },
	}
	for name, change := range changes {
		m := tinyModel()
		change(&m)
		if got := newStatic(t, writeModel(t, m), nil).Identity(); got == id {
			t.Errorf("changing %s kept the identity %v", name, id)
		}
	}
	if got := newStatic(t, moved, &embed.StaticOptions{MaxTokens: 64}).Identity(); got == id || !strings.HasSuffix(got.Model, "-max64") {
		t.Errorf("MaxTokens 64: identity %v", got)
	}
	// The name is not part of it.
	if got := newStatic(t, moved, &embed.StaticOptions{Name: "x"}).Identity(); got != id {
		t.Errorf("a Name changed the identity: %v", got)
	}
}

// TestStaticConcurrent embeds from many goroutines (run with -race) and
// checks every result against a sequential run.
func TestStaticConcurrent(t *testing.T) {
	m := embedtest.StaticModel{Vocab: tinyVocab, Dims: 32, Seed: 3}
	s := newStatic(t, writeModel(t, m), nil)
	texts := []string{"the cat", "Café!", "playing dogs", "", strings.Repeat("cats ", 300), "東京 the"}
	want, err := s.Embed(context.Background(), texts)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	for g := 0; g < 8; g++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := 0; i < 50; i++ {
				got, err := s.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				for j := range got {
					if !near(got[j], want[j]) {
						t.Errorf("goroutine result %d differs", j)
						return
					}
				}
			}
		}()
	}
	wg.Wait()
}

func TestStaticEmbedContract(t *testing.T) {
	s := newStatic(t, writeModel(t, embedtest.StaticModel{Vocab: tinyVocab, Dims: 16, Seed: 1}), nil)
	if v, err := s.Embed(context.Background(), nil); v != nil || err != nil {
		t.Errorf("Embed(nil) = %v, %v", v, err)
	}
	vecs, err := s.Embed(context.Background(), []string{"the cat", "dog"})
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range vecs {
		if len(v) != 16 || cap(v) != 16 || math.Abs(norm(v)-1) > 1e-6 {
			t.Errorf("vector len %d cap %d norm %v", len(v), cap(v), norm(v))
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Embed(ctx, []string{"x"}); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}

// mutateJSON rewrites a JSON file of dir through f.
func mutateJSON(t *testing.T, path string, f func(map[string]any)) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var doc map[string]any
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	f(doc)
	if b, err = json.Marshal(doc); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

func f32bytes(xs ...float32) []byte {
	var b []byte
	for _, x := range xs {
		b = binary.LittleEndian.AppendUint32(b, math.Float32bits(x))
	}
	return b
}

func TestStaticMalformed(t *testing.T) {
	vocab := []string{"[UNK]", "a", "b"}
	table := f32bytes(0, 0, 1, 0, 0, 1) // 3×2
	i64 := func(xs ...int64) []byte {
		var b []byte
		for _, x := range xs {
			b = binary.LittleEndian.AppendUint64(b, uint64(x))
		}
		return b
	}
	tensors := func(ts ...embedtest.Tensor) func(string) []byte {
		return func(string) []byte { return embedtest.EncodeSafetensors(ts) }
	}
	emb := func(dtype string, shape []int, data []byte) embedtest.Tensor {
		return embedtest.Tensor{Name: "embeddings", DType: dtype, Shape: shape, Data: data}
	}
	good := emb("F32", []int{3, 2}, table)
	type fileEdit struct {
		file string
		// table replaces model.safetensors; json edits a JSON file.
		table func(string) []byte
		json  func(map[string]any)
		raw   []byte
		rm    bool
	}
	tokModel := func(doc map[string]any) map[string]any { return doc["model"].(map[string]any) }
	cases := []struct {
		name string
		edit fileEdit
		want error
	}{
		{"missing table", fileEdit{file: "model.safetensors", rm: true}, fs.ErrNotExist},
		{"short table", fileEdit{file: "model.safetensors", raw: []byte{1, 2, 3}}, embed.ErrInvalidModel},
		{"header past the end", fileEdit{file: "model.safetensors", raw: binary.LittleEndian.AppendUint64(nil, 1<<40)}, embed.ErrInvalidModel},
		{"header not JSON", fileEdit{file: "model.safetensors", raw: append(binary.LittleEndian.AppendUint64(nil, 4), "{{{{"...)}, embed.ErrInvalidModel},
		{"unknown dtype", fileEdit{file: "model.safetensors", table: tensors(emb("F13", []int{3, 2}, table))}, embed.ErrInvalidModel},
		{"unsupported dtype", fileEdit{file: "model.safetensors", table: tensors(emb("BF16", []int{3, 2}, table[:12]))}, embed.ErrUnsupportedModel},
		{"shape disagrees with bytes", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{3, 3}, table))}, embed.ErrInvalidModel},
		{"negative dimension", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{-3, -2}, table))}, embed.ErrInvalidModel},
		{"overlapping tensors", fileEdit{file: "model.safetensors", table: func(string) []byte {
			b := embedtest.EncodeSafetensors([]embedtest.Tensor{good, {Name: "weights", DType: "F32", Shape: []int{3}, Data: f32bytes(1, 1, 1)}})
			// Point weights at the table's bytes: same length header.
			return []byte(strings.Replace(string(b), `"data_offsets":[24,36]`, `"data_offsets":[12,24]`, 1))
		}}, embed.ErrInvalidModel},
		{"offsets past the data", fileEdit{file: "model.safetensors", table: func(string) []byte {
			b := embedtest.EncodeSafetensors([]embedtest.Tensor{good})
			return []byte(strings.Replace(string(b), `"data_offsets":[0,24]`, `"data_offsets":[8,32]`, 1))
		}}, embed.ErrInvalidModel},
		{"duplicate tensor", fileEdit{file: "model.safetensors", table: tensors(good, good)}, embed.ErrInvalidModel},
		{"no embeddings", fileEdit{file: "model.safetensors", table: tensors(embedtest.Tensor{Name: "table", DType: "F32", Shape: []int{3, 2}, Data: table})}, embed.ErrInvalidModel},
		{"embeddings rank 1", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{6}, table))}, embed.ErrInvalidModel},
		{"rows differ from vocab", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{2, 3}, table))}, embed.ErrInvalidModel},
		{"NaN in table", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{3, 2}, f32bytes(0, 0, float32(math.NaN()), 0, 0, 1)))}, embed.ErrInvalidModel},
		{"Inf in table", fileEdit{file: "model.safetensors", table: tensors(emb("F32", []int{3, 2}, f32bytes(0, 0, 1, float32(math.Inf(1)), 0, 1)))}, embed.ErrInvalidModel},
		{"Inf in F16 table", fileEdit{file: "model.safetensors", table: tensors(emb("F16", []int{3, 2}, []byte{0, 0, 0, 0, 0, 0x7c, 0, 0, 0, 0, 0, 0}))}, embed.ErrInvalidModel},
		{"weights wrong length", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "weights", DType: "F32", Shape: []int{2}, Data: f32bytes(1, 1)})}, embed.ErrInvalidModel},
		{"weights NaN", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "weights", DType: "F32", Shape: []int{3}, Data: f32bytes(1, float32(math.NaN()), 1)})}, embed.ErrInvalidModel},
		{"weights dtype", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "weights", DType: "I32", Shape: []int{3}, Data: f32bytes(1, 1, 1)})}, embed.ErrUnsupportedModel},
		{"mapping out of range", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "mapping", DType: "I64", Shape: []int{3}, Data: i64(0, 1, 3)})}, embed.ErrInvalidModel},
		{"mapping negative", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "mapping", DType: "I64", Shape: []int{3}, Data: i64(0, -1, 2)})}, embed.ErrInvalidModel},
		{"mapping wrong length", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "mapping", DType: "I64", Shape: []int{2}, Data: i64(0, 1)})}, embed.ErrInvalidModel},
		{"mapping dtype", fileEdit{file: "model.safetensors", table: tensors(good, embedtest.Tensor{Name: "mapping", DType: "F64", Shape: []int{3}, Data: i64(0, 1, 2)})}, embed.ErrUnsupportedModel},

		{"missing tokenizer", fileEdit{file: "tokenizer.json", rm: true}, fs.ErrNotExist},
		{"tokenizer not JSON", fileEdit{file: "tokenizer.json", raw: []byte("{\"model\":")}, embed.ErrInvalidModel},
		{"normalizer ByteLevel", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { d["normalizer"] = map[string]any{"type": "ByteLevel"} }}, embed.ErrUnknownComponent},
		{"Precompiled not base64", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "!!"}
		}}, embed.ErrInvalidModel},
		{"Precompiled trie past the map", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Precompiled", "precompiled_charsmap": "QAAAAAAA"}
		}}, embed.ErrInvalidModel},
		{"normalizer in a Sequence", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Sequence", "normalizers": []any{map[string]any{"type": "NFC"}, map[string]any{"type": "Frobnicate"}}}
		}}, embed.ErrUnknownComponent},
		{"normalizer without a type", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { d["normalizer"] = map[string]any{"lowercase": true} }}, embed.ErrInvalidModel},
		{"Replace regex Go cannot run", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{"Regex": `a(?=b)`}, "content": "x"}
		}}, embed.ErrUnknownComponent},
		{"Replace without a pattern", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["normalizer"] = map[string]any{"type": "Replace", "pattern": map[string]any{}, "content": "x"}
		}}, embed.ErrInvalidModel},
		{"Metaspace scheme", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace", "prepend_scheme": "sometimes"}
		}}, embed.ErrUnknownComponent},
		{"Metaspace replacement", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Metaspace", "replacement": "ab"}
		}}, embed.ErrInvalidModel},
		{"normalizer flag not bool", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { d["normalizer"].(map[string]any)["lowercase"] = "yes" }}, embed.ErrInvalidModel},
		{"pre-tokenizer Split", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { d["pre_tokenizer"] = map[string]any{"type": "Split"} }}, embed.ErrUnknownComponent},
		{"pre-tokenizer in a Sequence", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["pre_tokenizer"] = map[string]any{"type": "Sequence", "pretokenizers": []any{map[string]any{"type": "Whitespace"}, map[string]any{"type": "Split"}}}
		}}, embed.ErrUnknownComponent},
		{"model BPE", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["type"] = "BPE" }}, embed.ErrUnknownComponent},
		{"unigram vocab not pairs", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["model"] = map[string]any{"type": "Unigram", "unk_id": 0, "vocab": []any{[]any{"[UNK]", 0}, []any{"a"}, []any{"b", -1}}}
		}}, embed.ErrInvalidModel},
		{"unigram unk_id out of range", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["model"] = map[string]any{"type": "Unigram", "unk_id": 3, "vocab": []any{[]any{"[UNK]", 0}, []any{"a", -1}, []any{"b", -1}}}
		}}, embed.ErrInvalidModel},
		{"unigram duplicate piece", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["model"] = map[string]any{"type": "Unigram", "unk_id": 0, "vocab": []any{[]any{"[UNK]", 0}, []any{"a", -1}, []any{"a", -2}}}
		}}, embed.ErrInvalidModel},
		{"unigram vocab empty", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["model"] = map[string]any{"type": "Unigram", "unk_id": nil, "vocab": []any{}}
		}}, embed.ErrInvalidModel},
		{"vocab duplicate id", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = map[string]any{"[UNK]": 0, "a": 1, "b": 1} }}, embed.ErrInvalidModel},
		{"vocab id gap", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = map[string]any{"[UNK]": 0, "a": 1, "b": 3} }}, embed.ErrInvalidModel},
		{"vocab negative id", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = map[string]any{"[UNK]": 0, "a": 1, "b": -2} }}, embed.ErrInvalidModel},
		{"vocab fractional id", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = map[string]any{"[UNK]": 0, "a": 1, "b": 1.5} }}, embed.ErrInvalidModel},
		{"vocab empty", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = map[string]any{} }}, embed.ErrInvalidModel},
		{"vocab duplicate token", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["vocab"] = json.RawMessage(`{"[UNK]":0,"a":1,"a":2}`) }}, embed.ErrInvalidModel},
		{"unk missing", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["unk_token"] = "<unk>" }}, embed.ErrInvalidModel},
		{"max chars zero", fileEdit{file: "tokenizer.json", json: func(d map[string]any) { tokModel(d)["max_input_chars_per_word"] = 0 }}, embed.ErrInvalidModel},
		{"non-special added token with lstrip", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 1, "content": "a", "special": false, "lstrip": true}}
		}}, embed.ErrUnknownComponent},
		{"added token past the vocabulary", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 1000, "content": "new york", "special": false}}
		}}, embed.ErrInvalidModel},
		{"added token id mismatch", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 2, "content": "a", "special": true}}
		}}, embed.ErrInvalidModel},
		{"added token id out of range", fileEdit{file: "tokenizer.json", json: func(d map[string]any) {
			d["added_tokens"] = []any{map[string]any{"id": 9, "content": "a", "special": true}}
		}}, embed.ErrInvalidModel},

		{"missing config", fileEdit{file: "config.json", rm: true}, fs.ErrNotExist},
		{"config not an object", fileEdit{file: "config.json", raw: []byte("[true]")}, embed.ErrInvalidModel},
		{"config normalize not bool", fileEdit{file: "config.json", json: func(d map[string]any) { d["normalize"] = "yes" }}, embed.ErrInvalidModel},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dir := t.TempDir()
			if err := embedtest.WriteStaticModel(dir, embedtest.StaticModel{Vocab: vocab, Dims: 2, Rows: [][]float32{{0, 0}, {1, 0}, {0, 1}}}); err != nil {
				t.Fatal(err)
			}
			path := filepath.Join(dir, c.edit.file)
			var err error
			switch {
			case c.edit.rm:
				err = os.Remove(path)
			case c.edit.raw != nil:
				err = os.WriteFile(path, c.edit.raw, 0o644)
			case c.edit.table != nil:
				err = os.WriteFile(path, c.edit.table(path), 0o644)
			case c.edit.json != nil:
				mutateJSON(t, path, c.edit.json)
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = embed.NewStatic(dir, nil)
			t.Log(err)
			if !errors.Is(err, c.want) {
				t.Fatalf("NewStatic: %v, want %v", err, c.want)
			}
			var me *embed.ModelError
			if !errors.As(err, &me) || me.File != path {
				t.Fatalf("NewStatic: %v is not a *ModelError for %s", err, path)
			}
			if c.want == fs.ErrNotExist && !errors.Is(err, embed.ErrInvalidModel) {
				t.Errorf("a missing file: %v does not wrap ErrInvalidModel", err)
			}
			var ce *embed.ComponentError
			if errors.Is(err, embed.ErrUnknownComponent) && (!errors.As(err, &ce) || ce.Type == "" || !strings.Contains(err.Error(), ce.Type)) {
				t.Errorf("%v does not name the component", err)
			}
			if c.want == embed.ErrUnknownComponent && !errors.Is(err, embed.ErrUnsupportedModel) {
				t.Errorf("%v does not wrap ErrUnsupportedModel", err)
			}
			if c.want == embed.ErrInvalidModel && errors.Is(err, embed.ErrUnsupportedModel) ||
				c.want == embed.ErrUnsupportedModel && errors.Is(err, embed.ErrInvalidModel) {
				t.Errorf("%v wraps the wrong class", err)
			}
		})
	}
}

func ExampleNewStatic() {
	// A real model comes from a folder the user downloaded once, such as
	// minishlab/potion-base-8M; this example writes a tiny one.
	dir, err := os.MkdirTemp("", "static-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	err = embedtest.WriteStaticModel(dir, embedtest.StaticModel{
		Vocab: []string{"[UNK]", "car", "automobile", "banana"},
		Dims:  2,
		Rows:  [][]float32{{0, 0}, {1, 0.1}, {0.9, 0.2}, {0, 1}},
	})
	if err != nil {
		panic(err)
	}

	s, err := embed.NewStatic(dir, nil)
	if err != nil {
		panic(err)
	}
	vecs, err := s.Embed(context.Background(), []string{"a red car", "Automobile!", "banana"})
	if err != nil {
		panic(err)
	}
	dot := func(a, b []float32) float32 { return a[0]*b[0] + a[1]*b[1] }
	fmt.Printf("%d dimensions\n", s.Dimensions())
	fmt.Printf("car~automobile %.2f, car~banana %.2f\n", dot(vecs[0], vecs[1]), dot(vecs[0], vecs[2]))
	// Output:
	// 2 dimensions
	// car~automobile 0.99, car~banana 0.10
}

// TestStaticF16Table: an F16 table decodes to the values it holds
// (normal, subnormal, negative, the largest half), weights scale its rows
// as they scale an F32 table's, and its vectors match an F32 copy of the
// same table.
func TestStaticF16Table(t *testing.T) {
	const sub, minNormal = 1.0 / (1 << 24), 1.0 / (1 << 14)
	rows := make([][]float32, len(tinyRows))
	copy(rows, tinyRows)
	rows[5] = []float32{1023 * sub, -minNormal, 512 * sub, 3 * minNormal / 2}           // cafe: subnormals and normals
	rows[6] = []float32{65504, -0.5, 1024, 3}                                           // the: the largest half
	rows[7] = []float32{0.333251953125, -2.5, 1.5, 0.0999755859375}                     // cat
	rows[8] = []float32{-0.0009765625, 4.5, 0.25, -1}                                   // ##s
	rows[9] = []float32{-minNormal, 3 * minNormal / 2, 7 * minNormal, minNormal * 1023} // play: small normals
	rows[13] = []float32{-1.75, 0.5, 2.25, -0.125}                                      // dog
	weights := make([]float64, len(tinyVocab))
	for i := range weights {
		weights[i] = 1
	}
	weights[2] = 10 // [CLS]: catches weights indexed by row instead of token
	// Some with the low bits of a half's mantissa set.
	weights[5], weights[6], weights[7], weights[8], weights[9], weights[13] = 0.5, 0.75, 1281.0/1024, 3, 2, 683.0/1024

	// expect is the normalised weighted sum of the rows of the tokens.
	expect := func(weighted bool, ids ...int) []float32 {
		sum := make([]float64, 4)
		for _, id := range ids {
			w := 1.0
			if weighted {
				w = weights[id]
			}
			for j, x := range rows[id] {
				sum[j] += w * float64(x)
			}
		}
		return unit(sum...)
	}
	texts := []struct {
		text string
		ids  []int
	}{
		{"cafe", []int{5}},
		{"the", []int{6}},
		{"cat", []int{7}},
		{"play", []int{9}},
		{"cat dog", []int{7, 13}},
		{"cats", []int{7, 8}},
		{"dog cats dog", []int{13, 7, 8, 13}},
	}
	for _, weighted := range []bool{false, true} {
		for _, wd := range []string{"F16", "F32", "F64"} {
			if !weighted && wd != "F16" {
				continue
			}
			name := "unweighted"
			if weighted {
				name = wd + " weights"
			}
			t.Run(name, func(t *testing.T) {
				m := tinyModel()
				m.Rows, m.DType = rows, "F16"
				f32 := tinyModel()
				f32.Rows = rows
				if weighted {
					m.Weights, m.WeightsDType = weights, wd
					f32.Weights, f32.WeightsDType = weights, "F32"
				}
				s16, s32 := newStatic(t, writeModel(t, m), nil), newStatic(t, writeModel(t, f32), nil)
				for _, c := range texts {
					got := embedOne(t, s16, c.text)
					if want := expect(weighted, c.ids...); !near(got, want) {
						t.Errorf("F16 Embed(%q) = %v, want %v", c.text, got, want)
					}
					if want := embedOne(t, s32, c.text); !near(got, want) {
						t.Errorf("F16 Embed(%q) = %v, the F32 copy gives %v", c.text, got, want)
					}
				}
			})
		}
	}
}
