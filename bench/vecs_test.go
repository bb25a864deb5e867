package bench

import (
	"bytes"
	"encoding/binary"
	"errors"
	"math"
	"slices"
	"testing"
)

// le encodes int32 words little-endian, to spell vector files by hand.
func le(words ...int32) []byte {
	b := make([]byte, 0, 4*len(words))
	for _, w := range words {
		b = binary.LittleEndian.AppendUint32(b, uint32(w))
	}
	return b
}

func f32(x float32) int32 { return int32(math.Float32bits(x)) }

func TestReadFvecs(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want [][]float32
		err  error
	}{
		{"empty", nil, nil, nil},
		{"one", le(2, f32(1), f32(-2.5)), [][]float32{{1, -2.5}}, nil},
		{"two", le(1, f32(3), 1, f32(4)), [][]float32{{3}, {4}}, nil},
		{"short dimension", []byte{2, 0}, nil, ErrTruncated},
		{"short values", le(3, f32(1), f32(2)), nil, ErrTruncated},
		{"short second vector", append(le(1, f32(1)), 1, 0, 0, 0, 9), nil, ErrTruncated},
		{"zero dimension", le(0), nil, ErrCorrupt},
		{"negative dimension", le(-1, 0), nil, ErrCorrupt},
		{"huge dimension", le(MaxDim + 1), nil, ErrCorrupt},
		{"inconsistent", le(1, f32(1), 2, f32(1), f32(2)), nil, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadFvecs(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestReadIvecs(t *testing.T) {
	tests := []struct {
		name string
		in   []byte
		want [][]int
		err  error
	}{
		{"empty", nil, nil, nil},
		{"rows", le(2, 7, -1, 2, 0, 1<<30), [][]int{{7, -1}, {0, 1 << 30}}, nil},
		{"short", le(2, 7), nil, ErrTruncated},
		{"bad dimension", le(-5), nil, ErrCorrupt},
		{"inconsistent", le(1, 1, 2, 1, 2), nil, ErrCorrupt},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := ReadIvecs(bytes.NewReader(tt.in))
			if !errors.Is(err, tt.err) {
				t.Fatalf("err = %v, want %v", err, tt.err)
			}
			if err == nil && !slices.EqualFunc(got, tt.want, slices.Equal) {
				t.Fatalf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestWriteRoundTrip(t *testing.T) {
	vecs := [][]float32{{1, 2, 3}, {-0.5, float32(math.Inf(1)), 0}}
	var b bytes.Buffer
	if err := WriteFvecs(&b, vecs); err != nil {
		t.Fatal(err)
	}
	if b.Len() != 2*(4+12) {
		t.Fatalf("fvecs size %d", b.Len())
	}
	got, err := readFvecs(&b, int64(b.Len()))
	if err != nil || !slices.EqualFunc(got, vecs, slices.Equal) {
		t.Fatalf("round trip = %v, %v", got, err)
	}

	ids := [][]int{{0, 5}, {math.MaxInt32, math.MinInt32}}
	b.Reset()
	if err := WriteIvecs(&b, ids); err != nil {
		t.Fatal(err)
	}
	gotIDs, err := readIvecs(&b, int64(b.Len()))
	if err != nil || !slices.EqualFunc(gotIDs, ids, slices.Equal) {
		t.Fatalf("round trip = %v, %v", gotIDs, err)
	}
}

func TestWriteErrors(t *testing.T) {
	var b bytes.Buffer
	if err := WriteFvecs(&b, [][]float32{{1}, {1, 2}}); !errors.Is(err, ErrDimensionMismatch) {
		t.Errorf("ragged fvecs: %v", err)
	}
	if err := WriteFvecs(&b, [][]float32{{}}); !errors.Is(err, ErrDimensionMismatch) {
		t.Errorf("empty row: %v", err)
	}
	if err := WriteIvecs(&b, [][]int{{1}, {}}); !errors.Is(err, ErrDimensionMismatch) {
		t.Errorf("ragged ivecs: %v", err)
	}
	if err := WriteIvecs(&b, [][]int{{math.MaxInt32 + 1}}); err == nil {
		t.Error("int32 overflow accepted")
	}
	if b.Len() != 0 {
		t.Errorf("failed writes wrote %d bytes", b.Len())
	}
}

// vecSeeds are the fuzz corpus shared by both readers: valid files, every
// kind of truncation, bad and inconsistent dimensions.
func vecSeeds() [][]byte {
	return [][]byte{
		nil,
		le(1, 0),
		le(2, f32(1), f32(2), 2, f32(3), f32(4)),
		le(4, 1, 2, 3),
		{1},
		le(0),
		le(-1),
		le(MaxDim+1, 0),
		le(math.MaxInt32),
		le(1, 1, 2, 1, 2),
	}
}

func FuzzReadFvecs(f *testing.F) {
	for _, s := range vecSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		vecs, err := ReadFvecs(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(vecs) == 0 {
			if len(in) != 0 {
				t.Fatalf("%d bytes read as no vectors", len(in))
			}
			return
		}
		var out bytes.Buffer
		if err := WriteFvecs(&out, vecs); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), in) { // bit-exact, NaN payloads included
			t.Fatalf("round trip changed the bytes")
		}
	})
}

func FuzzReadIvecs(f *testing.F) {
	for _, s := range vecSeeds() {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		ids, err := ReadIvecs(bytes.NewReader(in))
		if err != nil {
			if !errors.Is(err, ErrTruncated) && !errors.Is(err, ErrCorrupt) {
				t.Fatalf("untyped error %v", err)
			}
			return
		}
		if len(ids) == 0 {
			if len(in) != 0 {
				t.Fatalf("%d bytes read as no rows", len(in))
			}
			return
		}
		var out bytes.Buffer
		if err := WriteIvecs(&out, ids); err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(out.Bytes(), in) {
			t.Fatalf("round trip changed the bytes")
		}
	})
}
