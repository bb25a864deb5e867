package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
)

// BM25 encoding, version 1. Fixed-size integers little-endian; uvarint is
// encoding/binary's unsigned varint.
//
//	magic    [8]byte "ENGRBM25"
//	version  uint32  1
//	k1, b    float64 bits, uint64
//	terms    uvarint count, then per term: uvarint length, bytes
//	docs     uvarint count, then per document:
//	           id uint64, uvarint count of distinct terms,
//	           per term: uvarint term id (the first) or gap-1 from the
//	           previous one (the rest), uvarint frequency
//	crc      uint32  CRC-32C of every byte before it
//
// Only live documents and the terms they hold are written, renumbered in
// order, so the encoding is that of an index built from the live documents
// alone and an index decoded and encoded again gives the same bytes. Term
// ids ascend within a document and frequencies are mostly 1, so a posting
// costs about two bytes. Document lengths and frequencies are derived.
//
// Decode checks every count, id and frequency, so a corrupt or truncated
// snapshot is an error ([ErrCorrupt]), never a panic or an index whose
// statistics disagree with its postings.
const (
	bm25Magic   = "ENGRBM25"
	bm25Version = 1
)

// Encode writes the index to w in a versioned binary format with a
// checksum. It holds the read lock: searches continue, writes wait.
func (x *BM25) Encode(w io.Writer) error {
	x.mu.RLock()
	defer x.mu.RUnlock()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	e := &encoder{w: bw}
	e.bytes([]byte(bm25Magic))
	e.u32(bm25Version)
	e.u64(math.Float64bits(x.k1))
	e.u64(math.Float64bits(x.b))

	// Terms no live document holds are left out; the rest are renumbered.
	newTid := make([]uint32, len(x.mu.terms))
	var live uint32
	for tid, n := range x.mu.df {
		if n > 0 {
			newTid[tid] = live
			live++
		}
	}
	e.uvarint(uint64(live))
	for tid, t := range x.mu.terms {
		if x.mu.df[tid] > 0 {
			e.uvarint(uint64(len(t)))
			e.bytes([]byte(t))
		}
	}

	// A document's term frequencies are in the postings, not in fwd: find
	// each with a cursor per term, which only moves forward since slots
	// are visited in order.
	cursor := make([]uint32, len(x.mu.terms))
	e.uvarint(uint64(len(x.mu.ids) - x.mu.dead))
	for s, l := range x.mu.lens {
		if l == deadDoc {
			continue
		}
		tids := x.fwdLocked(uint32(s))
		e.u64(x.mu.ids[s])
		e.uvarint(uint64(len(tids)))
		prev := uint32(0)
		for i, tid := range tids {
			p := x.mu.post[tid]
			c := cursor[tid]
			for p[c].doc != uint32(s) {
				c++
			}
			cursor[tid] = c + 1
			t := newTid[tid]
			if i == 0 {
				e.uvarint(uint64(t))
			} else {
				e.uvarint(uint64(t - prev - 1))
			}
			prev = t
			e.uvarint(uint64(p[c].tf))
		}
	}
	if e.err != nil {
		return fmt.Errorf("encode bm25: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("encode bm25: %w", err)
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("encode bm25: %w", err)
	}
	return nil
}

// DecodeBM25 reads an index written by [BM25.Encode]. It returns an error
// wrapping [ErrCorrupt] for anything but a complete, consistent encoding of
// the current version; it never panics.
func DecodeBM25(r io.Reader) (*BM25, error) {
	crc := crc32.New(castagnoli)
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), crc: crc}
	x, err := d.bm25()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("truncated: %w", err)
		}
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("decode bm25: %w", err)
	}
	return x, nil
}

func (d *decoder) bm25() (*BM25, error) {
	magic := d.bytes(len(bm25Magic))
	if d.err == nil && string(magic) != bm25Magic {
		return nil, fmt.Errorf("%w: bad magic number %q", ErrCorrupt, magic)
	}
	if v := d.u32(); d.err == nil && v != bm25Version {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, v)
	}
	k1, b := math.Float64frombits(d.u64()), math.Float64frombits(d.u64())
	if d.err != nil {
		return nil, d.err
	}
	// Encode writes the parameters NewBM25 settled on: never zero.
	if err := (BM25Options{K1: k1, B: b}).validate(); err != nil || k1 == 0 || b == 0 {
		return nil, fmt.Errorf("%w: parameters k1 %v, b %v", ErrCorrupt, k1, b)
	}
	x := newBM25(k1, b)

	// Slices grow as data arrives rather than from the counts, so a lying
	// count on a short input cannot make Decode allocate gigabytes.
	nt := d.uvarint()
	if d.err == nil && nt > math.MaxUint32 {
		return nil, fmt.Errorf("%w: %d terms", ErrCorrupt, nt)
	}
	for i := uint64(0); i < nt && d.err == nil; i++ {
		n := d.uvarint()
		if d.err != nil {
			break
		}
		if n == 0 || n > maxTermBytes {
			return nil, fmt.Errorf("%w: term %d is %d bytes long", ErrCorrupt, i, n)
		}
		t := d.str(int(n))
		if d.err != nil {
			break
		}
		if _, dup := x.mu.dict[t]; dup {
			return nil, fmt.Errorf("%w: term %q appears twice", ErrCorrupt, t)
		}
		x.mu.dict[t] = uint32(i)
		x.mu.terms = append(x.mu.terms, t)
	}
	if d.err != nil {
		return nil, d.err
	}
	x.mu.post = make([][]posting, len(x.mu.terms))
	x.mu.df = make([]uint32, len(x.mu.terms))

	nd := d.uvarint()
	if d.err == nil && nd >= deadDoc-1 {
		return nil, fmt.Errorf("%w: %d documents", ErrCorrupt, nd)
	}
	for i := uint64(0); i < nd && d.err == nil; i++ {
		id, n := d.u64(), d.uvarint()
		if d.err != nil {
			break
		}
		if _, dup := x.mu.slot[id]; dup {
			return nil, fmt.Errorf("%w: id %d appears twice", ErrCorrupt, id)
		}
		if n > nt {
			return nil, fmt.Errorf("%w: document %d has %d distinct terms of %d", ErrCorrupt, id, n, nt)
		}
		s := uint32(len(x.mu.ids))
		var dl, tid uint64
		for j := uint64(0); j < n && d.err == nil; j++ {
			v, tf := d.uvarint(), d.uvarint()
			if j == 0 {
				tid = v
			} else {
				tid += v + 1
			}
			if d.err != nil {
				break
			}
			// tid only grows (by at most 2^64 per step, so test v too).
			if tid >= nt || v >= nt || tf == 0 || tf > math.MaxUint32 {
				return nil, fmt.Errorf("%w: document %d: term id %d, frequency %d", ErrCorrupt, id, tid, tf)
			}
			x.mu.post[tid] = append(x.mu.post[tid], posting{doc: s, tf: uint32(tf)})
			x.mu.df[tid]++
			x.mu.fwd = append(x.mu.fwd, uint32(tid))
			if dl += tf; dl >= deadDoc || uint64(len(x.mu.fwd)) > math.MaxUint32 {
				return nil, fmt.Errorf("%w: document %d is too long", ErrCorrupt, id)
			}
		}
		if d.err != nil {
			break
		}
		x.mu.ids = append(x.mu.ids, id)
		x.mu.lens = append(x.mu.lens, uint32(dl))
		x.mu.fwdEnd = append(x.mu.fwdEnd, uint32(len(x.mu.fwd)))
		x.mu.slot[id] = s
		x.mu.total += dl
	}
	if d.err != nil {
		return nil, d.err
	}
	want := d.crc.Sum32()
	if got := d.u32(); d.err != nil {
		return nil, d.err
	} else if got != want {
		return nil, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	for tid, n := range x.mu.df {
		if n == 0 {
			return nil, fmt.Errorf("%w: term %q is in no document", ErrCorrupt, x.mu.terms[tid])
		}
	}
	return x, nil
}

// str reads an n-byte string. (decoder.bytes serves only n <= 8.)
func (d *decoder) str(n int) string {
	if d.err != nil {
		return ""
	}
	b := make([]byte, n)
	if _, d.err = io.ReadFull(d.r, b); d.err != nil {
		return ""
	}
	d.crc.Write(b)
	return string(b)
}

// uvarint writes v as an unsigned varint.
func (e *encoder) uvarint(v uint64) {
	var b [binary.MaxVarintLen64]byte
	e.bytes(b[:binary.PutUvarint(b[:], v)])
}

// uvarint reads an unsigned varint; one longer than ten bytes or
// overflowing 64 bits is corrupt.
func (d *decoder) uvarint() uint64 {
	var v uint64
	for i := 0; i < binary.MaxVarintLen64; i++ {
		c := d.u8()
		if d.err != nil {
			return 0
		}
		if i == binary.MaxVarintLen64-1 && c > 1 {
			break
		}
		v |= uint64(c&0x7f) << (7 * i)
		if c < 0x80 {
			return v
		}
	}
	d.err = fmt.Errorf("%w: varint overflows 64 bits", ErrCorrupt)
	return 0
}
