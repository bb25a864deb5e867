package embed

import (
	"encoding/json"
	"errors"
	"io/fs"
	"math"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

// refDir holds the reference token ids (see its gen.mjs).
const refDir = "testdata/tokenizers"

// sharedModel2Vec is the shared data's model2vec folder, from the package
// directory.
var sharedModel2Vec = filepath.Join("..", "..", "shared", "data", "model2vec")

// refTokenizer is one expected/*.json file: the tokenizer file (in refDir,
// or "shared:<path>" under ../shared/data) and the ids of each sentence.
type refTokenizer struct {
	Tokenizer string    `json:"tokenizer"`
	IDs       [][]int32 `json:"ids"`
}

func readJSON(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestTokenizerReference checks every tokenizer format against the ids
// Hugging Face's tokenizers gives for 420 sentences (accents, CJK, emoji,
// numbers, long words, punctuation, whitespace runs, mixed case, control
// characters, special tokens' text): the tiny tokenizers in testdata,
// one per format, and the two real Model2Vec tokenizers of the shared
// data when it is there. The ids are compared before the unknown and
// special tokens are dropped, so their places are checked too.
func TestTokenizerReference(t *testing.T) {
	var texts []string
	readJSON(t, filepath.Join(refDir, "sentences.json"), &texts)
	files, err := filepath.Glob(filepath.Join(refDir, "expected", "*.json"))
	if err != nil || len(files) < 10 {
		t.Fatalf("expected files %v: %v", files, err)
	}
	for _, f := range files {
		t.Run(strings.TrimSuffix(filepath.Base(f), ".json"), func(t *testing.T) {
			var ref refTokenizer
			readJSON(t, f, &ref)
			path := filepath.Join(refDir, ref.Tokenizer)
			if rel, ok := strings.CutPrefix(ref.Tokenizer, "shared:model2vec/"); ok {
				path = filepath.Join(sharedModel2Vec, rel)
			}
			b, err := os.ReadFile(path)
			if errors.Is(err, fs.ErrNotExist) && strings.HasPrefix(ref.Tokenizer, "shared:") {
				t.Skipf("%s is absent (the shared data folder, ../shared/data from the repository root, is not here)", path)
			}
			if err != nil {
				t.Fatal(err)
			}
			tp, err := parseTokenizer(b)
			if err != nil {
				t.Fatal(err)
			}
			if len(ref.IDs) != len(texts) {
				t.Fatalf("%d id lists for %d sentences: rerun gen.mjs", len(ref.IDs), len(texts))
			}
			bad := 0
			for i, text := range texts {
				s := &tokenScratch{limit: math.MaxInt, keepAll: true}
				tp.encode(s, text, 0)
				want := ref.IDs[i]
				if !slices.Equal(s.ids, want) && !(len(s.ids) == 0 && len(want) == 0) {
					if bad++; bad <= 8 {
						t.Errorf("%q:\n got  %v %q\n want %v %q", text, s.ids, pieces(tp, s.ids), want, pieces(tp, want))
					}
				}
				// What is pooled: the unknown and special tokens
				// dropped, the first 3 kept.
				var pooled []int32
				for _, id := range want {
					if id != tp.unk && !tp.dropped[id] && len(pooled) < 3 {
						pooled = append(pooled, id)
					}
				}
				s = &tokenScratch{limit: 3}
				tp.encode(s, text, 0)
				if !slices.Equal(s.ids, pooled) && !(len(s.ids) == 0 && len(pooled) == 0) {
					if bad++; bad <= 8 {
						t.Errorf("%q, pooled, limit 3: %v, want %v", text, s.ids, pooled)
					}
				}
			}
			if bad > 0 {
				t.Errorf("%d of %d sentences differ", bad, len(texts))
			}
		})
	}
}

// pieces returns the vocabulary entries of ids, for messages.
func pieces(tp *tokenizer, ids []int32) []string {
	out := make([]string, len(ids))
	for i, id := range ids {
		if id >= 0 && int(id) < len(tp.tokens) {
			out[i] = tp.tokens[id]
		} else {
			out[i] = "?"
		}
	}
	return out
}
