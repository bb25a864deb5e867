package bench

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
)

// MaxDim is the largest vector dimension the readers accept. The TEXMEX
// sets top out at 960 (GIST) and embedding models at a few thousand; the
// bound keeps a corrupt dimension word from asking for gigabytes.
const MaxDim = 1 << 16

// The TEXMEX formats (http://corpus-texmex.irisa.fr/) have no header and no
// trailer: every vector is a little-endian int32 dimension d followed by d
// little-endian values, float32 in .fvecs and int32 in .ivecs. All vectors
// of a file have the same d.

// vecReader walks the vectors of a TEXMEX stream. It allocates one payload
// buffer of at most 4*MaxDim bytes, after checking the dimension, so a
// corrupt file can make it allocate no more than the bytes it really holds.
type vecReader struct {
	r    io.Reader
	kind string // "fvecs" or "ivecs", for messages
	dim  int    // the first vector's dimension; 0 before it
	n    int    // vectors read so far
	head [4]byte
	buf  []byte
}

// next returns the payload of the next vector, valid until the next call,
// or io.EOF at a clean end of input.
func (vr *vecReader) next() ([]byte, error) {
	k, err := io.ReadFull(vr.r, vr.head[:])
	switch {
	case err == io.EOF:
		return nil, io.EOF
	case errors.Is(err, io.ErrUnexpectedEOF):
		return nil, fmt.Errorf("read %s: vector %d: %d of 4 dimension bytes: %w", vr.kind, vr.n, k, ErrTruncated)
	case err != nil:
		return nil, fmt.Errorf("read %s: vector %d: %w", vr.kind, vr.n, err)
	}
	d := int64(int32(binary.LittleEndian.Uint32(vr.head[:])))
	if d < 1 || d > MaxDim {
		return nil, fmt.Errorf("read %s: vector %d: dimension %d outside [1, %d]: %w", vr.kind, vr.n, d, MaxDim, ErrCorrupt)
	}
	if vr.dim == 0 {
		vr.dim = int(d)
		vr.buf = make([]byte, 4*vr.dim)
	} else if int(d) != vr.dim {
		return nil, fmt.Errorf("read %s: vector %d: dimension %d, earlier vectors have %d: %w", vr.kind, vr.n, d, vr.dim, ErrCorrupt)
	}
	if k, err := io.ReadFull(vr.r, vr.buf); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return nil, fmt.Errorf("read %s: vector %d: %d of %d value bytes: %w", vr.kind, vr.n, k, len(vr.buf), ErrTruncated)
		}
		return nil, fmt.Errorf("read %s: vector %d: %w", vr.kind, vr.n, err)
	}
	vr.n++
	return vr.buf, nil
}

// ReadFvecs reads a whole .fvecs stream and returns its vectors. The rows
// share one backing array and belong to the caller. An empty input gives no
// vectors and no error. It returns [ErrTruncated] when the input ends inside
// a vector and [ErrCorrupt] for a dimension outside [1, MaxDim] or one that
// differs from the first vector's. Values are not checked: NaN and
// infinities are read as they are.
func ReadFvecs(r io.Reader) ([][]float32, error) {
	return readFvecs(r, 0)
}

// readFvecs is ReadFvecs with a size hint (the file's length, or 0), used
// only to reserve the backing array once; it is never trusted beyond that.
func readFvecs(r io.Reader, sizeHint int64) ([][]float32, error) {
	return readVecs(r, sizeHint, "fvecs", math.Float32frombits)
}

// ReadIvecs reads a whole .ivecs stream, such as a ground-truth file of
// neighbour ids, and returns its rows. The rows share one backing array and
// belong to the caller. Errors are those of [ReadFvecs].
func ReadIvecs(r io.Reader) ([][]int, error) {
	return readIvecs(r, 0)
}

func readIvecs(r io.Reader, sizeHint int64) ([][]int, error) {
	return readVecs(r, sizeHint, "ivecs", func(u uint32) int { return int(int32(u)) })
}

// readVecs reads a TEXMEX stream whose 4-byte little-endian values decode
// to T.
func readVecs[T any](r io.Reader, sizeHint int64, kind string, decode func(uint32) T) ([][]T, error) {
	vr := &vecReader{r: bufio.NewReaderSize(r, 1<<16), kind: kind}
	var flat []T
	for {
		p, err := vr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, err
		}
		if flat == nil && sizeHint > 0 {
			flat = make([]T, 0, reserve(sizeHint, vr.dim))
		}
		for i := 0; i < len(p); i += 4 {
			flat = append(flat, decode(binary.LittleEndian.Uint32(p[i:])))
		}
	}
	return rows(flat, vr.dim), nil
}

// reserve returns how many values a file of size bytes holds if every
// vector has dimension dim, capped so a wrong hint cannot over-allocate.
func reserve(size int64, dim int) int {
	n := size / int64(4+4*dim) * int64(dim)
	return int(min(n, 1<<28))
}

// rows cuts flat into rows of length dim without copying.
func rows[T any](flat []T, dim int) [][]T {
	if dim == 0 {
		return nil
	}
	out := make([][]T, len(flat)/dim)
	for i := range out {
		out[i] = flat[i*dim : (i+1)*dim : (i+1)*dim]
	}
	return out
}

// WriteFvecs writes vecs to w in the .fvecs format. Every row must have the
// same length, between 1 and [MaxDim]; otherwise it returns
// [ErrDimensionMismatch] and writes nothing.
func WriteFvecs(w io.Writer, vecs [][]float32) error {
	if err := checkRows(vecs); err != nil {
		return fmt.Errorf("write fvecs: %w", err)
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [4]byte
	for _, v := range vecs {
		binary.LittleEndian.PutUint32(b[:], uint32(len(v)))
		bw.Write(b[:])
		for _, x := range v {
			binary.LittleEndian.PutUint32(b[:], math.Float32bits(x))
			bw.Write(b[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write fvecs: %w", err)
	}
	return nil
}

// WriteIvecs writes rows to w in the .ivecs format. Every row must have the
// same length, between 1 and [MaxDim], or it returns [ErrDimensionMismatch];
// a value outside the int32 range is an error too. Nothing is written when
// it fails.
func WriteIvecs(w io.Writer, ids [][]int) error {
	if err := checkRows(ids); err != nil {
		return fmt.Errorf("write ivecs: %w", err)
	}
	for i, row := range ids {
		for _, x := range row {
			if x < math.MinInt32 || x > math.MaxInt32 {
				return fmt.Errorf("write ivecs: row %d: value %d does not fit in int32", i, x)
			}
		}
	}
	bw := bufio.NewWriterSize(w, 1<<16)
	var b [4]byte
	for _, row := range ids {
		binary.LittleEndian.PutUint32(b[:], uint32(len(row)))
		bw.Write(b[:])
		for _, x := range row {
			binary.LittleEndian.PutUint32(b[:], uint32(int32(x)))
			bw.Write(b[:])
		}
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("write ivecs: %w", err)
	}
	return nil
}

func checkRows[T any](vecs [][]T) error {
	for i, v := range vecs {
		if len(v) < 1 || len(v) > MaxDim {
			return fmt.Errorf("row %d has length %d, outside [1, %d]: %w", i, len(v), MaxDim, ErrDimensionMismatch)
		}
		if len(v) != len(vecs[0]) {
			return fmt.Errorf("row %d has length %d, row 0 has %d: %w", i, len(v), len(vecs[0]), ErrDimensionMismatch)
		}
	}
	return nil
}
