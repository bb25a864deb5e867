package wordnet

import (
	"bytes"
	"compress/flate"
	"encoding/binary"
	"errors"
	"io"
	"os"
	"runtime"
	"slices"
	"sync"
	"testing"

	"github.com/engramdb/engram/index/wordnet/internal/wnconv"
)

const wordnetDir = "/usr/share/wordnet"

// TestTableIsFresh checks that the committed wordnet.bin is what the
// converter makes from Debian's wordnet-base files, compared uncompressed
// (DEFLATE's output may change between Go releases).
func TestTableIsFresh(t *testing.T) {
	if _, err := os.Stat(wordnetDir + "/data.noun"); err != nil {
		t.Skipf("no WordNet at %s (apt-get install wordnet-base): %v", wordnetDir, err)
	}
	fresh, err := wnconv.Convert(wordnetDir)
	if err != nil {
		t.Fatal(err)
	}
	committed, err := io.ReadAll(flate.NewReader(bytes.NewReader(table)))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(fresh, committed) {
		t.Fatalf("wordnet.bin (%d bytes uncompressed) differs from a fresh conversion (%d bytes): run go generate in index/wordnet", len(committed), len(fresh))
	}
	if wnconv.Magic != magic || wnconv.Version != version {
		t.Fatal("wnconv and the decoder disagree on magic or version")
	}
}

func TestLoadConcurrent(t *testing.T) {
	var wg sync.WaitGroup
	tabs := make([]*Table, 4)
	for i := range tabs {
		wg.Go(func() {
			tb, err := Load()
			if err != nil {
				t.Error(err)
			}
			tabs[i] = tb
		})
	}
	wg.Wait()
	for _, tb := range tabs[1:] {
		if tb != tabs[0] {
			t.Fatal("Load returned two tables")
		}
	}
}

func mustLoad(t testing.TB) *Table {
	tb, err := Load()
	if err != nil {
		t.Fatal(err)
	}
	return tb
}

func TestBaseForms(t *testing.T) {
	tb := mustLoad(t)
	for _, c := range []struct {
		word string
		pos  POS
		want []string
	}{
		{"cars", Noun, []string{"car"}},
		{"mice", Noun, []string{"mouse"}},
		{"churches", Noun, []string{"church"}},
		{"women", Noun, []string{"woman"}},
		{"bought", Verb, []string{"buy"}},
		{"driving", Verb, []string{"drive"}},
		{"purchased", Verb, []string{"purchase"}},
		{"owns", Verb, []string{"own"}},
		{"car", Noun, []string{"car"}},
		{"car", Verb, nil},
		{"xyzzy", Noun, nil},
		{"", Noun, nil},
		{"car", POS(7), nil},
	} {
		if got := tb.BaseForms(c.word, c.pos); !slices.Equal(got, c.want) {
			t.Errorf("BaseForms(%q, %v) = %q, want %q", c.word, c.pos, got, c.want)
		}
	}
}

func TestSenses(t *testing.T) {
	tb := mustLoad(t)
	car := tb.Senses("car", Noun)
	if len(car) == 0 || car[0].Count == 0 {
		t.Fatalf("car: %v", car)
	}
	if w := tb.Words(car[0].Synset); !slices.Contains(w, "automobile") || !slices.Contains(w, "auto") {
		t.Errorf("car's first sense: %q", w)
	}
	// The cable car of an airship (car's fourth sense, with "gondola") was
	// never tagged, so it is not kept.
	for _, s := range car {
		if slices.Contains(tb.Words(s.Synset), "gondola") {
			t.Errorf("car keeps the gondola sense")
		}
	}
	// Car's hypernym is "motor vehicle", a multiword lemma the table
	// leaves out; dog's is "canine, canid".
	var hyper []string
	for _, h := range tb.Hypernyms(tb.Senses("dog", Noun)[0].Synset) {
		hyper = append(hyper, tb.Words(h)...)
	}
	if !slices.Contains(hyper, "canine") {
		t.Errorf("dog's hypernyms: %q", hyper)
	}
	buy := tb.Senses("buy", Verb)
	if len(buy) == 0 || !slices.Contains(tb.Words(buy[0].Synset), "purchase") {
		t.Errorf("buy: %v", buy)
	}
	if tb.Senses("car", Verb) != nil || tb.Senses("Car", Noun) != nil {
		t.Error("senses for a verb car or an upper-case key")
	}
	if tb.Words(Synset(1<<31)) != nil || tb.Hypernyms(Synset(1<<31)) != nil {
		t.Error("out-of-range synset")
	}
}

func TestDecodeErrors(t *testing.T) {
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(table)))
	if err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		"empty":     nil,
		"magic":     append([]byte("XWN\x00"), raw[4:]...),
		"version":   append(append([]byte{}, raw[:4]...), append([]byte{9}, raw[5:]...)...),
		"truncated": raw[:len(raw)/2],
		"trailing":  append(append([]byte{}, raw...), 0),
	} {
		if _, err := Decode(b); !errors.Is(err, ErrCorrupt) {
			t.Errorf("%s: %v, want ErrCorrupt", name, err)
		}
	}
	if _, err := decodeCompressed([]byte("not deflate")); !errors.Is(err, ErrCorrupt) {
		t.Errorf("bad DEFLATE: %v", err)
	}
	if _, err := Decode(raw); err != nil {
		t.Fatal(err)
	}
}

func FuzzDecode(f *testing.F) {
	raw, err := io.ReadAll(flate.NewReader(bytes.NewReader(table)))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(raw[:200])
	f.Add([]byte("EWN\x00\x01\x00\x00\x00\x00\x00\x00"))
	f.Add([]byte("EWN\x00\x01\x02\x00\x01a\x00\x01b\x01\x01\x00\x00\x00\x01\x01\x01\x00\x05\x00\x00\x00"))
	f.Fuzz(func(t *testing.T, b []byte) {
		tb, err := Decode(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		// Every lookup of a decoded table stays in range.
		for _, w := range tb.words {
			for _, p := range []POS{Noun, Verb} {
				for _, s := range tb.Senses(w, p) {
					tb.Words(s.Synset)
					for _, h := range tb.Hypernyms(s.Synset) {
						tb.Words(h)
					}
				}
				tb.BaseForms(w+"s", p)
			}
		}
	})
}

func BenchmarkLoad(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		if _, err := decodeCompressed(table); err != nil {
			b.Fatal(err)
		}
	}
}

// TestDecodeBoundedMemory: each word of the table can share all of the
// previous one, so a small input could describe a quadratic arena (an
// 83 KB input took 1.34 GB before words were bounded; found in review).
// Decode must refuse it without allocating more than a few times its
// input.
func TestDecodeBoundedMemory(t *testing.T) {
	const n = 20000
	b := []byte(magic + string(rune(version)))
	b = binary.AppendUvarint(b, n)
	for i := range n {
		b = binary.AppendUvarint(b, uint64(i)) // all of the previous word
		b = binary.AppendUvarint(b, 1)
		b = append(b, 'a')
	}
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	_, err := Decode(b)
	runtime.ReadMemStats(&after)
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Decode: %v, want ErrCorrupt", err)
	}
	if got := after.TotalAlloc - before.TotalAlloc; got > 16<<20 {
		t.Fatalf("Decode of %d bytes allocated %d MB", len(b), got>>20)
	}
}
