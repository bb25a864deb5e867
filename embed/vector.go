package embed

import (
	"encoding/binary"
	"fmt"
	"math"
)

// The encoding of one vector, stable across releases (the version byte
// changes if it ever has to):
//
//	offset  size  field
//	0       4     magic "EMBV"
//	4       1     version, 1
//	5       4     dimension d, uint32 little-endian
//	9       4*d   components, IEEE-754 float32 little-endian
const (
	vectorMagic      = "EMBV"
	vectorVersion    = 1
	vectorHeaderSize = len(vectorMagic) + 1 + 4
)

// AppendVector appends the binary encoding of v to dst and returns the
// extended slice. The encoding is a 4-byte magic "EMBV", a version byte (1),
// the dimension as a little-endian uint32 and the components as little-endian
// float32s: 9+4*len(v) bytes. It is the value format of [Cache] entries and
// is stable. [DecodeVector] reverses it.
func AppendVector(dst []byte, v []float32) []byte {
	dst = append(dst, vectorMagic...)
	dst = append(dst, vectorVersion)
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(v)))
	for _, x := range v {
		dst = binary.LittleEndian.AppendUint32(dst, math.Float32bits(x))
	}
	return dst
}

// DecodeVector decodes a vector written by [AppendVector] into a new slice
// the caller owns. It returns an error wrapping [ErrCorrupt] for any other
// input (wrong magic or version, a dimension of 0 or above [MaxDimensions], a
// length that does not match the dimension, a NaN or infinite component) and
// never panics.
func DecodeVector(b []byte) ([]float32, error) {
	if len(b) < vectorHeaderSize {
		return nil, fmt.Errorf("decode vector: %d bytes is shorter than the %d-byte header: %w", len(b), vectorHeaderSize, ErrCorrupt)
	}
	if string(b[:len(vectorMagic)]) != vectorMagic {
		return nil, fmt.Errorf("decode vector: bad magic %q: %w", b[:len(vectorMagic)], ErrCorrupt)
	}
	if v := b[len(vectorMagic)]; v != vectorVersion {
		return nil, fmt.Errorf("decode vector: unknown version %d: %w", v, ErrCorrupt)
	}
	d := binary.LittleEndian.Uint32(b[len(vectorMagic)+1:])
	if d == 0 || d > MaxDimensions {
		return nil, fmt.Errorf("decode vector: dimension %d out of range [1, %d]: %w", d, MaxDimensions, ErrCorrupt)
	}
	body := b[vectorHeaderSize:]
	if uint64(len(body)) != 4*uint64(d) {
		return nil, fmt.Errorf("decode vector: %d body bytes for dimension %d, want %d: %w", len(body), d, 4*uint64(d), ErrCorrupt)
	}
	v := make([]float32, d)
	for i := range v {
		x := math.Float32frombits(binary.LittleEndian.Uint32(body[4*i:]))
		if math.IsNaN(float64(x)) || math.IsInf(float64(x), 0) {
			return nil, fmt.Errorf("decode vector: component %d is %v: %w", i, x, ErrCorrupt)
		}
		v[i] = x
	}
	return v, nil
}
