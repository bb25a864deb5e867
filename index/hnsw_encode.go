package index

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"
	"hash/crc32"
	"io"
	"math"
	"math/rand/v2"
	"sync/atomic"
)

// HNSW encoding, version 1. All integers little-endian.
//
//	magic    [8]byte "ENGRHNSW"
//	version  uint32  1
//	dim, m, efConstruction, efSearch  uint32
//	seed     uint64
//	n        uint32  nodes, deleted ones included
//	entry    uint32  entry node (ignored when n has no live node)
//	per node:  id uint64, level uint8, deleted uint8
//	vectors  n·dim float32 (normalised)
//	layer 0  n·(2m+1) uint32: count, then neighbours
//	upper    for each node of level L > 0: L·(m+1) uint32
//	crc      uint32  CRC-32C of every byte before it
//
// Decode checks every count and link against the header, so a corrupt or
// truncated snapshot is an error ([ErrCorrupt]), never a panic or a graph
// with dangling links.
const (
	hnswMagic   = "ENGRHNSW"
	hnswVersion = 1
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Encode writes the index to w in a versioned binary format with a
// checksum. It holds the read lock: searches continue, inserts wait.
func (h *HNSW) Encode(w io.Writer) error {
	h.mu.RLock()
	defer h.mu.RUnlock()
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	e := &encoder{w: bw}
	e.bytes([]byte(hnswMagic))
	e.u32(hnswVersion)
	e.u32(uint32(h.dim))
	e.u32(uint32(h.m))
	e.u32(uint32(h.efConstruction))
	e.u32(uint32(h.efSearch))
	e.u64(h.seed)
	// Inserts may publish nodes while Encode runs (they hold the read lock
	// too): the snapshot takes the first n and drops links to later ones,
	// which stays a valid graph; the engine replays newer records anyway.
	n := h.n.Load()
	e.u32(n)
	e.u32(h.entry)
	for i := range n {
		e.u64(h.ids[i])
		e.u8(h.levels[i])
		e.u8(uint8(atomic.LoadUint32(&h.deleted[i])))
	}
	for _, f := range h.vecs[:int(n)*h.dim] {
		e.u32(math.Float32bits(f))
	}
	// Concurrent inserts also hold the read lock and change lists under
	// their link locks: copy each list under its lock. No node can be
	// allocated meanwhile, so n is fixed and every link is to a node below n.
	var buf []uint32
	for i := range n {
		buf = h.copyList(buf, i, 0, n)
		for _, x := range buf {
			e.u32(x)
		}
	}
	for i := range n {
		for l := 1; l <= int(h.levels[i]); l++ {
			buf = h.copyList(buf, i, l, n)
			for _, x := range buf {
				e.u32(x)
			}
		}
	}
	if e.err != nil {
		return fmt.Errorf("encode hnsw: %w", e.err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("encode hnsw: %w", err)
	}
	var sum [4]byte
	binary.LittleEndian.PutUint32(sum[:], crc.Sum32())
	if _, err := w.Write(sum[:]); err != nil {
		return fmt.Errorf("encode hnsw: %w", err)
	}
	return nil
}

// copyList copies node i's whole layer-l list (count and all slots) under
// its link lock, leaving out links to nodes at or past n and zeroing the
// unused slots.
func (h *HNSW) copyList(dst []uint32, i uint32, l int, n uint32) []uint32 {
	mu := h.linkLock(i)
	mu.Lock()
	lst := h.list(i, l)
	dst = append(dst[:0], 0)
	for _, x := range lst[1 : 1+lst[0]] {
		if x < n {
			dst = append(dst, x)
		}
	}
	mu.Unlock()
	dst[0] = uint32(len(dst) - 1)
	for len(dst) < len(lst) {
		dst = append(dst, 0)
	}
	return dst
}

// DecodeHNSW reads an index written by [HNSW.Encode]. It returns an error
// wrapping [ErrCorrupt] for anything but a complete, consistent encoding of
// the current version.
func DecodeHNSW(r io.Reader) (*HNSW, error) {
	crc := crc32.New(castagnoli)
	d := &decoder{r: bufio.NewReaderSize(r, 1<<16), crc: crc}
	h, err := d.hnsw()
	if err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("truncated: %w", err)
		}
		if !errors.Is(err, ErrCorrupt) {
			err = fmt.Errorf("%w: %w", ErrCorrupt, err)
		}
		return nil, fmt.Errorf("decode hnsw: %w", err)
	}
	return h, nil
}

func (d *decoder) hnsw() (*HNSW, error) {
	magic := d.bytes(len(hnswMagic))
	if d.err == nil && string(magic) != hnswMagic {
		return nil, fmt.Errorf("%w: bad magic number %q", ErrCorrupt, magic)
	}
	if v := d.u32(); d.err == nil && v != hnswVersion {
		return nil, fmt.Errorf("%w: unknown version %d", ErrCorrupt, v)
	}
	dim, m, efc, efs := int(d.u32()), int(d.u32()), int(d.u32()), int(d.u32())
	seed := d.u64()
	n, entry := int(d.u32()), d.u32()
	if d.err != nil {
		return nil, d.err
	}
	o := HNSWOptions{M: m, EfConstruction: efc, EfSearch: efs, Seed: seed}
	if err := o.validate(dim); err != nil {
		return nil, fmt.Errorf("%w: header: %w", ErrCorrupt, err)
	}
	h := newHNSW(dim, o)
	// Slabs grow as data arrives rather than from the header's counts, so a
	// lying header on a short input cannot make Decode allocate gigabytes.
	for i := 0; i < n && d.err == nil; i++ {
		id, level, del := d.u64(), d.u8(), d.u8()
		if d.err != nil {
			break
		}
		if level > maxLevel || del > 1 {
			return nil, fmt.Errorf("%w: node %d: level %d, deleted flag %d", ErrCorrupt, i, level, del)
		}
		h.ids = append(h.ids, id)
		h.levels = append(h.levels, level)
		h.deleted = append(h.deleted, uint32(del))
		h.anyDeleted = h.anyDeleted || del == 1
		if del == 0 {
			if _, dup := h.byID[id]; dup {
				return nil, fmt.Errorf("%w: id %d appears twice", ErrCorrupt, id)
			}
			h.byID[id] = uint32(i)
			h.live.Add(1)
		}
	}
	for i := 0; i < n*dim && d.err == nil; i++ {
		f := math.Float32frombits(d.u32())
		if math.IsNaN(float64(f)) || math.IsInf(float64(f), 0) {
			return nil, fmt.Errorf("%w: non-finite vector component", ErrCorrupt)
		}
		h.vecs = append(h.vecs, f)
	}
	for i := 0; i < n*(h.m0+1) && d.err == nil; i++ {
		h.links0 = append(h.links0, d.u32())
	}
	h.upperOff = make([]uint32, 0, len(h.levels))
	for i := 0; i < len(h.levels) && d.err == nil; i++ {
		h.upperOff = append(h.upperOff, uint32(len(h.upper)))
		for j := 0; j < int(h.levels[i])*(m+1) && d.err == nil; j++ {
			h.upper = append(h.upper, d.u32())
		}
	}
	if d.err != nil {
		return nil, d.err
	}
	h.n.Store(uint32(n))
	h.nodes = n
	if h.quant {
		h.q8 = make([]int8, n*dim)
		h.q8scale = make([]float32, n)
		for i := range n {
			h.q8scale[i] = quantize8(h.q8[i*dim:(i+1)*dim], h.vec(uint32(i)))
		}
	}
	h.upperUsed = len(h.upper)
	want := d.crc.Sum32()
	if got := d.u32(); d.err != nil {
		return nil, d.err
	} else if got != want {
		return nil, fmt.Errorf("%w: checksum %08x, computed %08x", ErrCorrupt, got, want)
	}
	if err := h.check(entry); err != nil {
		return nil, err
	}
	// In-degrees are derived, so not stored: count them.
	h.indeg = make([]int32, n)
	for i := range n {
		lst := h.list(uint32(i), 0)
		for _, x := range lst[1 : 1+lst[0]] {
			h.indeg[x]++
		}
	}
	// The level generator continues from a state derived from the seed and
	// the node count, so later inserts do not replay the first levels.
	h.rng = rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15^uint64(n)))
	return h, nil
}

// check validates a decoded graph: every count within its list, every link
// to an existing node of a high enough level, and a live entry point of the
// top level.
func (h *HNSW) check(entry uint32) error {
	n := int(h.n.Load())
	for i := range n {
		for l := 0; l <= int(h.levels[i]); l++ {
			lst := h.list(uint32(i), l)
			if int(lst[0]) > h.maxLinks(l) {
				return fmt.Errorf("%w: node %d layer %d has %d links, limit %d", ErrCorrupt, i, l, lst[0], h.maxLinks(l))
			}
			for _, x := range lst[1 : 1+lst[0]] {
				if int(x) >= n || int(h.levels[x]) < l || int(x) == i {
					return fmt.Errorf("%w: node %d layer %d links to %d", ErrCorrupt, i, l, x)
				}
			}
		}
	}
	if h.live.Load() == 0 {
		return nil
	}
	if int(entry) >= n || h.isDeleted(entry) {
		return fmt.Errorf("%w: entry point %d is not a live node", ErrCorrupt, entry)
	}
	h.entry, h.top, h.hasEntry = entry, int(h.levels[entry]), true
	for i := range n {
		if !h.isDeleted(uint32(i)) && int(h.levels[i]) > h.top {
			return fmt.Errorf("%w: node %d is above the entry point", ErrCorrupt, i)
		}
	}
	return nil
}

type encoder struct {
	w   *bufio.Writer
	buf [8]byte
	err error
}

func (e *encoder) bytes(b []byte) {
	if e.err == nil {
		_, e.err = e.w.Write(b)
	}
}
func (e *encoder) u8(v uint8) { e.bytes([]byte{v}) }
func (e *encoder) u32(v uint32) {
	binary.LittleEndian.PutUint32(e.buf[:4], v)
	e.bytes(e.buf[:4])
}
func (e *encoder) u64(v uint64) {
	binary.LittleEndian.PutUint64(e.buf[:8], v)
	e.bytes(e.buf[:8])
}

// decoder reads little-endian values, feeding every byte to crc until the
// trailer; after the first error every read returns zero.
type decoder struct {
	r   *bufio.Reader
	crc hash.Hash32
	buf [8]byte
	err error
}

func (d *decoder) bytes(n int) []byte {
	if d.err != nil {
		return d.buf[:0]
	}
	var b []byte
	if n <= len(d.buf) {
		b = d.buf[:n]
	} else {
		b = make([]byte, n)
	}
	if _, d.err = io.ReadFull(d.r, b); d.err != nil {
		return b[:0]
	}
	d.crc.Write(b)
	return b
}

func (d *decoder) u8() uint8 {
	if b := d.bytes(1); len(b) == 1 {
		return b[0]
	}
	return 0
}

func (d *decoder) u32() uint32 {
	if b := d.bytes(4); len(b) == 4 {
		return binary.LittleEndian.Uint32(b)
	}
	return 0
}

func (d *decoder) u64() uint64 {
	if b := d.bytes(8); len(b) == 8 {
		return binary.LittleEndian.Uint64(b)
	}
	return 0
}
