package embed_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"unicode"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// potionVocabSize and potionDims are the shape of minishlab/potion-base-8M
// (29,528 tokens of 256 dimensions), which the benchmark model imitates.
const (
	potionVocabSize = 29528
	potionDims      = 256
)

// benchSentences returns the turns of the LoCoMo sample conversation (419
// turns, 25 words on average), or the two hashing benchmark texts when the
// shared data is missing.
func benchSentences(tb testing.TB) []string {
	b, err := os.ReadFile(filepath.Join("..", "..", "shared", "data", "locomo", "locomo-sample.json"))
	if err != nil {
		tb.Logf("LoCoMo sample not found (%v): using the hashing benchmark texts", err)
		return []string{benchShort, benchLong}
	}
	var samples []struct {
		Conversation map[string]json.RawMessage `json:"conversation"`
	}
	if err := json.Unmarshal(b, &samples); err != nil {
		tb.Fatal(err)
	}
	var out []string
	for i := 1; ; i++ {
		raw, ok := samples[0].Conversation[fmt.Sprintf("session_%d", i)]
		if !ok {
			break
		}
		var turns []struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal(raw, &turns); err != nil {
			tb.Fatal(err)
		}
		for _, t := range turns {
			out = append(out, t.Text)
		}
	}
	return out
}

// potionLikeModel returns a model of potion-base-8M's size whose
// vocabulary covers the words of sentences: BERT's specials, single
// letters and digits with their "##" continuations (so every word can be
// tokenized), 90% of the sentences' distinct lower-cased words (every tenth
// is left out, so it is split into pieces as a rare word would be), then
// filler tokens up to potionVocabSize.
func potionLikeModel(sentences []string, dtype string) embedtest.StaticModel {
	vocab := []string{"[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"}
	seen := map[string]bool{}
	add := func(w string) {
		if !seen[w] {
			seen[w] = true
			vocab = append(vocab, w)
		}
	}
	for _, set := range []string{"abcdefghijklmnopqrstuvwxyz0123456789", `!"#$%&'()*+,-./:;<=>?@[\]^_{|}~`} {
		for _, r := range set {
			add(string(r))
			if unicode.IsLetter(r) || unicode.IsDigit(r) {
				add("##" + string(r))
			}
		}
	}
	n := 0
	for _, s := range sentences {
		for _, w := range strings.FieldsFunc(strings.ToLower(s), func(r rune) bool { return !unicode.IsLetter(r) && !unicode.IsDigit(r) }) {
			if seen[w] {
				continue
			}
			if n++; n%10 == 0 {
				seen[w] = true // left out
				continue
			}
			add(w)
		}
	}
	for i := 0; len(vocab) < potionVocabSize; i++ {
		add(fmt.Sprintf("##filler%d", i))
	}
	return embedtest.StaticModel{Vocab: vocab, Dims: potionDims, DType: dtype, Seed: 42, Normalize: true}
}

// BenchmarkStatic compares Static on a potion-sized model with Hashing (384
// dimensions, the default) on the same texts in the same run: "sentence"
// embeds one LoCoMo turn per call (cycling through all of them),
// "long" the 214-word benchLong, "batch32" 32 turns per call.
func BenchmarkStatic(b *testing.B) {
	sentences := benchSentences(b)
	ctx := context.Background()
	embedders := []struct {
		name string
		e    embed.Embedder
	}{{"hashing", newHashing(b, 0)}}
	for _, dtype := range []string{"F32", "F16", "I8"} {
		dir := b.TempDir()
		if err := embedtest.WriteStaticModel(dir, potionLikeModel(sentences, dtype)); err != nil {
			b.Fatal(err)
		}
		embedders = append(embedders, struct {
			name string
			e    embed.Embedder
		}{"static-" + dtype, newStatic(b, dir, nil)})
	}
	for _, em := range embedders {
		b.Run(em.name+"/sentence", func(b *testing.B) {
			b.ReportAllocs()
			one := make([]string, 1)
			i := 0
			for b.Loop() {
				one[0] = sentences[i%len(sentences)]
				i++
				if _, err := em.e.Embed(ctx, one); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(em.name+"/long", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := em.e.Embed(ctx, []string{benchLong}); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(em.name+"/batch32", func(b *testing.B) {
			b.ReportAllocs()
			i := 0
			batch := make([]string, 32)
			for b.Loop() {
				for j := range batch {
					batch[j] = sentences[(i+j)%len(sentences)]
				}
				i += len(batch)
				if _, err := em.e.Embed(ctx, batch); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkStaticLoad measures NewStatic on a potion-sized model and
// reports the heap the loaded model holds (heap-MB, after a GC, against
// the heap before loading) and its file size (file-MB).
func BenchmarkStaticLoad(b *testing.B) {
	sentences := benchSentences(b)
	for _, dtype := range []string{"F32", "F16", "I8"} {
		dir := b.TempDir()
		if err := embedtest.WriteStaticModel(dir, potionLikeModel(sentences, dtype)); err != nil {
			b.Fatal(err)
		}
		var size int64
		for _, f := range []string{"model.safetensors", "tokenizer.json", "config.json"} {
			fi, err := os.Stat(filepath.Join(dir, f))
			if err != nil {
				b.Fatal(err)
			}
			size += fi.Size()
		}
		b.Run(dtype, func(b *testing.B) {
			var heap float64
			for b.Loop() {
				var before, after runtime.MemStats
				runtime.GC()
				runtime.ReadMemStats(&before)
				s, err := embed.NewStatic(dir, nil)
				if err != nil {
					b.Fatal(err)
				}
				runtime.GC()
				runtime.ReadMemStats(&after)
				heap = float64(after.HeapAlloc) - float64(before.HeapAlloc)
				runtime.KeepAlive(s)
			}
			b.ReportMetric(heap/(1<<20), "heap-MB")
			b.ReportMetric(float64(size)/(1<<20), "file-MB")
		})
	}
}

// BenchmarkStaticSpecials embeds a long text full of special tokens with
// no token cap: finding them must cost in proportion to the text, not
// its square (found in review: 200 KB of "[CLS]" took 2.4 s).
func BenchmarkStaticSpecials(b *testing.B) {
	dir := b.TempDir()
	m := embedtest.StaticModel{Vocab: []string{"[UNK]", "[CLS]", "[SEP]", "car"}, Dims: 4, Seed: 1}
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		b.Fatal(err)
	}
	s, err := embed.NewStatic(dir, &embed.StaticOptions{MaxTokens: -1})
	if err != nil {
		b.Fatal(err)
	}
	text := []string{strings.Repeat("[CLS] car ", 20000)}
	for b.Loop() {
		if _, err := s.Embed(context.Background(), text); err != nil {
			b.Fatal(err)
		}
	}
}
