package embedtest_test

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/engramdb/engram/embed/embedtest"
)

func TestFloat16Bits(t *testing.T) {
	for _, c := range []struct {
		x    float32
		want uint16
	}{
		{0, 0}, {1, 0x3c00}, {-2, 0xc000}, {0.5, 0x3800}, {65504, 0x7bff},
		{65520, 0x7c00}, {1e6, 0x7c00}, {float32(math.Inf(-1)), 0xfc00},
		{5.960464477539063e-08, 0x0001}, {1.0009765625, 0x3c01},
		{1.00048828125, 0x3c00}, // halfway, rounds to even
		{float32(math.NaN()), 0x7e00},
	} {
		if got := embedtest.Float16Bits(c.x); got != c.want {
			t.Errorf("Float16Bits(%v) = %#04x, want %#04x", c.x, got, c.want)
		}
	}
}

func TestWriteStaticModel(t *testing.T) {
	dir := t.TempDir()
	m := embedtest.StaticModel{Vocab: []string{"[PAD]", "[UNK]", "cat", "##s"}, Dims: 3, Seed: 7, Normalize: true, Name: "tiny"}
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		t.Fatal(err)
	}
	st, err := os.ReadFile(filepath.Join(dir, "model.safetensors"))
	if err != nil {
		t.Fatal(err)
	}
	n := binary.LittleEndian.Uint64(st)
	var header map[string]struct {
		DType       string `json:"dtype"`
		Shape       []int  `json:"shape"`
		DataOffsets [2]int `json:"data_offsets"`
	}
	if err := json.Unmarshal(st[8:8+n], &header); err != nil {
		t.Fatal(err)
	}
	e := header["embeddings"]
	if e.DType != "F32" || len(e.Shape) != 2 || e.Shape[0] != 4 || e.Shape[1] != 3 || e.DataOffsets != [2]int{0, 48} || uint64(len(st)) != 8+n+48 {
		t.Fatalf("header %+v, file %d bytes", header, len(st))
	}
	again := t.TempDir()
	if err := embedtest.WriteStaticModel(again, m); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"model.safetensors", "tokenizer.json", "config.json"} {
		a, _ := os.ReadFile(filepath.Join(dir, f))
		b, _ := os.ReadFile(filepath.Join(again, f))
		if !bytes.Equal(a, b) {
			t.Errorf("%s differs between two writes of the same model", f)
		}
	}
	for _, bad := range []embedtest.StaticModel{
		{Vocab: []string{"a"}, Dims: 2},                                     // no [UNK]
		{Vocab: []string{"[UNK]", "a"}, Dims: 0},                            // no dims
		{Vocab: []string{"[UNK]", "a"}, Dims: 2, Rows: [][]float32{{1, 2}}}, // too few rows
		{Vocab: []string{"[UNK]", "a"}, Dims: 1, DType: "I8", Rows: [][]float32{{1}, {300}}},
		{Vocab: []string{"[UNK]", "a"}, Dims: 1, Weights: []float64{1}},
		{Vocab: []string{"[UNK]", "[UNK]"}, Dims: 1},
	} {
		if err := embedtest.WriteStaticModel(t.TempDir(), bad); err == nil {
			t.Errorf("WriteStaticModel(%+v) = nil, want an error", bad)
		}
	}
}
