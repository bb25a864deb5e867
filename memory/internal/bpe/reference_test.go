package bpe

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"
)

// TestMatchesOpenAI compares the tokens with OpenAI's own tiktoken (the
// Rust library, through the npm package "tiktoken"): testdata/tiktoken's
// gen.mjs wrote the texts and their ids, and .ci/run writes them again
// with the pinned package and checks they are unchanged.
func TestMatchesOpenAI(t *testing.T) {
	dir := filepath.Join("testdata", "tiktoken")
	var texts []string
	var expected map[string][][]int
	for name, v := range map[string]any{"texts.json": &texts, "expected.json": &expected} {
		b, err := os.ReadFile(filepath.Join(dir, name))
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(b, v); err != nil {
			t.Fatalf("%s: %v", name, err)
		}
	}
	ours, _ := load(t)
	for _, name := range encodings {
		want := expected[name]
		if len(want) != len(texts) {
			t.Fatalf("%s: %d expected id lists for %d texts", name, len(want), len(texts))
		}
		for i, s := range texts {
			if got := ours[name].EncodeOrdinary(s); !slices.Equal(got, want[i]) {
				t.Errorf("%s: EncodeOrdinary(%q)\n got %v\nwant %v", name, s, got, want[i])
			}
		}
	}
}
