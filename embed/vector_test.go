package embed_test

import (
	"encoding/binary"
	"encoding/hex"
	"errors"
	"math"
	"slices"
	"testing"

	"github.com/engramdb/engram/embed"
)

func TestVectorRoundTrip(t *testing.T) {
	for _, v := range [][]float32{
		{1},
		{0, 0, 0},
		{0.5, -0.25, float32(math.SmallestNonzeroFloat32), math.MaxFloat32, float32(math.Copysign(0, -1))},
		make([]float32, 384),
	} {
		b := embed.AppendVector(nil, v)
		if len(b) != 9+4*len(v) {
			t.Errorf("len %d for %d components", len(b), len(v))
		}
		got, err := embed.DecodeVector(b)
		if err != nil {
			t.Fatalf("DecodeVector(AppendVector(%v)): %v", v, err)
		}
		if len(got) != len(v) {
			t.Fatalf("got %d components, want %d", len(got), len(v))
		}
		for i := range v {
			if math.Float32bits(got[i]) != math.Float32bits(v[i]) {
				t.Errorf("component %d: %v, want %v", i, got[i], v[i])
			}
		}
	}
	// AppendVector appends.
	b := embed.AppendVector([]byte("prefix"), []float32{1})
	if string(b[:6]) != "prefix" {
		t.Errorf("AppendVector overwrote dst: %q", b)
	}
}

// TestVectorFormat pins the stable encoding byte for byte.
func TestVectorFormat(t *testing.T) {
	got := hex.EncodeToString(embed.AppendVector(nil, []float32{1, -2}))
	const want = "454d4256" + "01" + "02000000" + "0000803f" + "000000c0"
	if got != want {
		t.Errorf("encoding %s, want %s", got, want)
	}
}

func TestDecodeVectorErrors(t *testing.T) {
	valid := embed.AppendVector(nil, []float32{1, 2, 3})
	with := func(f func(b []byte) []byte) []byte { return f(slices.Clone(valid)) }
	for _, tc := range []struct {
		name string
		b    []byte
	}{
		{"nil", nil},
		{"empty", []byte{}},
		{"short header", valid[:8]},
		{"bad magic", with(func(b []byte) []byte { b[0] = 'X'; return b })},
		{"bad version", with(func(b []byte) []byte { b[4] = 2; return b })},
		{"zero dimension", with(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[5:], 0); return b[:9] })},
		{"huge dimension", with(func(b []byte) []byte { binary.LittleEndian.PutUint32(b[5:], math.MaxUint32); return b })},
		{"truncated body", valid[:len(valid)-1]},
		{"trailing bytes", append(slices.Clone(valid), 0)},
		{"NaN", with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[9:], math.Float32bits(float32(math.NaN())))
			return b
		})},
		{"Inf", with(func(b []byte) []byte {
			binary.LittleEndian.PutUint32(b[13:], math.Float32bits(float32(math.Inf(-1))))
			return b
		})},
	} {
		t.Run(tc.name, func(t *testing.T) {
			v, err := embed.DecodeVector(tc.b)
			if !errors.Is(err, embed.ErrCorrupt) || v != nil {
				t.Errorf("DecodeVector = (%v, %v), want ErrCorrupt", v, err)
			}
		})
	}
}

func FuzzDecodeVector(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte("EMBV"))
	f.Add([]byte("EMBV\x01\x00\x00\x00\x00"))
	f.Add([]byte("EMBV\x01\xff\xff\xff\xff"))
	f.Add([]byte("EMBV\x02\x01\x00\x00\x00\x00\x00\x80\x3f"))
	f.Add(embed.AppendVector(nil, []float32{1}))
	f.Add(embed.AppendVector(nil, []float32{0.6, -0.8, 0}))
	f.Add(embed.AppendVector(nil, make([]float32, 384)))
	f.Add(embed.AppendVector(nil, []float32{float32(math.NaN())}))
	f.Fuzz(func(t *testing.T, b []byte) {
		v, err := embed.DecodeVector(b)
		if err != nil {
			if !errors.Is(err, embed.ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			if v != nil {
				t.Fatal("non-nil vector with an error")
			}
			return
		}
		// Whatever decodes re-encodes to exactly the same bytes: the format
		// has one encoding per vector.
		if again := embed.AppendVector(nil, v); string(again) != string(b) {
			t.Fatalf("re-encoding differs:\n got %x\nwant %x", again, b)
		}
	})
}
