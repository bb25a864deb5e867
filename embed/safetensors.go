package embed

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
)

// The safetensors format (https://github.com/huggingface/safetensors): an
// 8-byte little-endian header length n, n bytes of a JSON object mapping
// each tensor name to {"dtype", "shape", "data_offsets": [begin, end]}
// (offsets relative to the byte after the header) plus an optional
// "__metadata__" object of strings, then the tensor data, little-endian.

// maxSafetensorsHeader bounds the JSON header, like the reference
// implementation's 100 MB limit: a Model2Vec header is a few hundred bytes,
// and a corrupt length must not make the reader allocate gigabytes.
const maxSafetensorsHeader = 100 << 20

// stDType is a safetensors element type.
type stDType struct {
	name string
	size int // bytes per element
}

// stDTypes lists every dtype the format defines, so an unknown name is an
// invalid file while a known but unusable one is an unsupported model.
var stDTypes = map[string]int{
	"BOOL": 1, "U8": 1, "I8": 1, "F8_E5M2": 1, "F8_E4M3": 1,
	"I16": 2, "U16": 2, "F16": 2, "BF16": 2,
	"I32": 4, "U32": 4, "F32": 4,
	"I64": 8, "U64": 8, "F64": 8,
}

// decodeSTEntry decodes the header entry of tensor name from dec and
// checks it against data, the bytes after the header: a known dtype, a
// non-negative shape whose size in bytes equals its data_offsets range,
// inside data. The tensor returned aliases data[begin:end].
func decodeSTEntry(dec *json.Decoder, name string, data []byte) (t *stTensor, begin, end int, err error) {
	var e struct {
		DType       *string `json:"dtype"`
		Shape       []int64 `json:"shape"`
		DataOffsets []int64 `json:"data_offsets"`
	}
	if err := dec.Decode(&e); err != nil {
		return nil, 0, 0, fmt.Errorf("header entry %q: %v: %w", name, err, ErrInvalidModel)
	}
	if e.DType == nil || e.Shape == nil || len(e.DataOffsets) != 2 {
		return nil, 0, 0, fmt.Errorf("header entry %q lacks dtype, shape or a [begin, end] data_offsets: %w", name, ErrInvalidModel)
	}
	size, ok := stDTypes[*e.DType]
	if !ok {
		return nil, 0, 0, fmt.Errorf("tensor %q has unknown dtype %q: %w", name, *e.DType, ErrInvalidModel)
	}
	elems := int64(1)
	for _, d := range e.Shape {
		if d < 0 {
			return nil, 0, 0, fmt.Errorf("tensor %q has negative dimension %d: %w", name, d, ErrInvalidModel)
		}
		if d != 0 && elems > math.MaxInt32*int64(256)/d {
			return nil, 0, 0, fmt.Errorf("tensor %q shape %v is too large: %w", name, e.Shape, ErrInvalidModel)
		}
		elems *= d
	}
	b, en := e.DataOffsets[0], e.DataOffsets[1]
	if b < 0 || en < b || en > int64(len(data)) {
		return nil, 0, 0, fmt.Errorf("tensor %q data_offsets [%d, %d] outside the %d data bytes: %w", name, b, en, len(data), ErrInvalidModel)
	}
	if elems*int64(size) != en-b {
		return nil, 0, 0, fmt.Errorf("tensor %q: shape %v of %s is %d bytes, data_offsets span %d: %w", name, e.Shape, *e.DType, elems*int64(size), en-b, ErrInvalidModel)
	}
	shape := make([]int, len(e.Shape))
	for i, d := range e.Shape {
		shape[i] = int(d)
	}
	return &stTensor{dtype: stDType{*e.DType, size}, shape: shape, data: data[b:en:en]}, int(b), int(en), nil
}

// stTensor is one tensor of a safetensors file; data aliases the file.
type stTensor struct {
	dtype stDType
	shape []int
	data  []byte
}

// elems returns the number of elements (the product of the shape).
func (t *stTensor) elems() int { return len(t.data) / t.dtype.size }

// parseSafetensors parses a whole safetensors file. Every error wraps
// ErrInvalidModel. It checks the header length against the file and
// [maxSafetensorsHeader], that the header is one JSON object with no
// duplicate names, that every dtype is known, that each shape's element
// count times its dtype size equals its byte range, that every range lies
// in the file, and that no two ranges overlap. The returned tensors alias b.
func parseSafetensors(b []byte) (map[string]*stTensor, error) {
	if len(b) < 8 {
		return nil, fmt.Errorf("%d bytes is shorter than the 8-byte header length: %w", len(b), ErrInvalidModel)
	}
	n := binary.LittleEndian.Uint64(b)
	if n > maxSafetensorsHeader || n > uint64(len(b)-8) {
		return nil, fmt.Errorf("header length %d exceeds the file (%d bytes) or the %d-byte limit: %w", n, len(b), maxSafetensorsHeader, ErrInvalidModel)
	}
	header, data := b[8:8+n], b[8+n:]
	dec := json.NewDecoder(bytes.NewReader(header))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, fmt.Errorf("header is not a JSON object: %w", ErrInvalidModel)
	}
	type span struct {
		name       string
		begin, end int
	}
	var spans []span
	tensors := make(map[string]*stTensor)
	seen := make(map[string]bool)
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("header: %v: %w", err, ErrInvalidModel)
		}
		name, _ := tok.(string)
		if seen[name] {
			return nil, fmt.Errorf("header names %q twice: %w", name, ErrInvalidModel)
		}
		seen[name] = true
		if name == "__metadata__" {
			var meta map[string]string
			if err := dec.Decode(&meta); err != nil {
				return nil, fmt.Errorf("header __metadata__ is not an object of strings: %w", ErrInvalidModel)
			}
			continue
		}
		t, begin, end, err := decodeSTEntry(dec, name, data)
		if err != nil {
			return nil, err
		}
		tensors[name] = t
		spans = append(spans, span{name, begin, end})
	}
	if _, err := dec.Token(); err != nil { // the closing brace
		return nil, fmt.Errorf("header: %v: %w", err, ErrInvalidModel)
	}
	if _, err := dec.Token(); !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("header has data after its JSON object: %w", ErrInvalidModel)
	}
	sort.Slice(spans, func(i, j int) bool {
		if spans[i].begin != spans[j].begin {
			return spans[i].begin < spans[j].begin
		}
		return spans[i].end < spans[j].end
	})
	for i := 1; i < len(spans); i++ {
		if spans[i].begin < spans[i-1].end {
			return nil, fmt.Errorf("tensors %q and %q overlap: %w", spans[i-1].name, spans[i].name, ErrInvalidModel)
		}
	}
	return tensors, nil
}
