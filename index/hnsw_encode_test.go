package index

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"math/rand/v2"
	"slices"
	"testing"
)

func TestHNSWEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	n := 1000
	if raceEnabled {
		n = 300
	}
	data := clustered(rng, n+200, 16, 12)
	h, vecs := buildHNSW(t, data[:n], &HNSWOptions{M: 8, Seed: 5})
	for id := range vecs { // some tombstones in the snapshot
		if id%5 == 0 {
			h.Delete(id)
			delete(vecs, id)
		}
	}
	var buf bytes.Buffer
	if err := h.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHNSW(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	if got.Len() != h.Len() || got.Deleted() != h.Deleted() || got.Options() != h.Options() {
		t.Fatalf("decoded Len %d Deleted %d %+v; want %d %d %+v", got.Len(), got.Deleted(), got.Options(), h.Len(), h.Deleted(), h.Options())
	}
	for _, q := range data[n : n+100] {
		a, _ := h.Search(q, 10, nil)
		b, _ := got.Search(q, 10, nil)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("search differs after decode:\n%v\n%v", a, b)
		}
	}
	// Re-encoding gives the same bytes, and the decoded index takes inserts.
	var again bytes.Buffer
	if err := got.Encode(&again); err != nil || !bytes.Equal(again.Bytes(), buf.Bytes()) {
		t.Fatalf("re-encode differs (%v)", err)
	}
	for i, v := range data[n+100:] {
		if err := got.Add(uint64(100000+i), v); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := got.Search(data[n+150], 1, nil); len(r) != 1 || r[0].ID != 100050 {
		t.Fatalf("after inserting into a decoded index: %v", r)
	}
}

func TestHNSWDecodeCorrupt(t *testing.T) {
	rng := rand.New(rand.NewPCG(6, 6))
	h, _ := buildHNSW(t, clustered(rng, 200, 8, 4), &HNSWOptions{M: 4})
	var buf bytes.Buffer
	if err := h.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	good := buf.Bytes()
	// Truncations and single-bit flips all through the file are caught
	// (fewer under -race, which adds nothing to a loop on one goroutine).
	cuts, flips := 300, 500
	if raceEnabled {
		cuts, flips = 60, 100
	}
	for cut := 0; cut < len(good); cut += max(1, len(good)/cuts) {
		if _, err := DecodeHNSW(bytes.NewReader(good[:cut])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d of %d: %v, want ErrCorrupt", cut, len(good), err)
		}
	}
	for i := 0; i < len(good); i += max(1, len(good)/flips) {
		bad := bytes.Clone(good)
		bad[i] ^= 1 << (i % 8)
		if _, err := DecodeHNSW(bytes.NewReader(bad)); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("bit flip at byte %d: %v, want ErrCorrupt", i, err)
		}
	}
	// An empty index round-trips too.
	empty, _ := NewHNSW(3, nil)
	buf.Reset()
	if err := empty.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if e, err := DecodeHNSW(&buf); err != nil || e.Len() != 0 {
		t.Fatalf("empty index: %v, %v", e, err)
	}
}

// sealCRC returns body followed by its CRC-32C, the trailer both index
// encodings end with, so that fuzzed bodies get past the checksum and
// reach the decoder's own checks.
func sealCRC(body []byte) []byte {
	return binary.LittleEndian.AppendUint32(slices.Clip(body), crc32.Checksum(body, castagnoli))
}

// FuzzDecodeHNSW fuzzes the body of an encoding, sealed with a recomputed
// checksum so that mutations reach the decoder proper (the raw input is
// decoded too, for the checksum path). Whatever decodes must search,
// insert and re-encode, and decoding is a fixed point: decode → encode →
// decode gives an equal index and the same bytes again. An encoding made
// by Encode decodes and re-encodes to itself.
func FuzzDecodeHNSW(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	// Few and small: the fuzzer's minimizer takes time quadratic in an
	// input's length, and stalled for a minute at a time on 2 KB seeds.
	for _, n := range []int{0, 1, 5, 12} {
		h, err := NewHNSW(4, &HNSWOptions{M: 2, EfConstruction: 8})
		if err != nil {
			f.Fatal(err)
		}
		for i, v := range clustered(rng, n, 4, 2) {
			_ = h.Add(uint64(i), v)
		}
		if n > 2 {
			h.Delete(1)
		}
		var buf bytes.Buffer
		if err := h.Encode(&buf); err != nil {
			f.Fatal(err)
		}
		if again := reencodeHNSW(f, buf.Bytes()); !bytes.Equal(again, buf.Bytes()) {
			f.Fatalf("an encoding of %d nodes does not re-encode to itself", n)
		}
		f.Add(buf.Bytes()[:buf.Len()-4])
	}
	f.Add([]byte(hnswMagic))
	f.Fuzz(func(t *testing.T, body []byte) {
		if len(body) > 1<<10 {
			return // big inputs only slow the minimizer
		}
		if h, err := DecodeHNSW(bytes.NewReader(body)); err == nil {
			checkDecodedHNSW(t, h)
		} else if !errors.Is(err, ErrCorrupt) {
			t.Fatalf("error does not wrap ErrCorrupt: %v", err)
		}
		h, err := DecodeHNSW(bytes.NewReader(sealCRC(body)))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		checkDecodedHNSW(t, h)
	})
}

// reencodeHNSW decodes b, which must decode, and encodes it again.
func reencodeHNSW(t testing.TB, b []byte) []byte {
	t.Helper()
	h, err := DecodeHNSW(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("decode: %v", err)
	}
	var buf bytes.Buffer
	if err := h.Encode(&buf); err != nil {
		t.Fatalf("encode: %v", err)
	}
	return buf.Bytes()
}

// checkHNSWGraph checks, independently of the decoder's own check, the
// invariants search relies on: every count within its list's capacity,
// every link to another existing node that has the link's layer, and a
// live entry point at the top level when any node is live.
func checkHNSWGraph(t *testing.T, h *HNSW) {
	t.Helper()
	h.mu.RLock()
	defer h.mu.RUnlock()
	n := int(h.n.Load())
	if len(h.ids) != n || len(h.levels) != n || len(h.deleted) != n || len(h.vecs) != n*h.dim {
		t.Fatalf("%d nodes, but %d ids, %d levels, %d deleted flags, %d vector components", n, len(h.ids), len(h.levels), len(h.deleted), len(h.vecs))
	}
	live := 0
	for i := range n {
		if !h.isDeleted(uint32(i)) {
			live++
		}
		for l := 0; l <= int(h.levels[i]); l++ {
			lst := h.list(uint32(i), l)
			if int(lst[0]) > h.maxLinks(l) || int(lst[0]) >= len(lst) {
				t.Fatalf("node %d layer %d: %d links in a list of %d", i, l, lst[0], len(lst)-1)
			}
			for _, x := range lst[1 : 1+lst[0]] {
				if int(x) >= n || int(x) == i || int(h.levels[x]) < l {
					t.Fatalf("node %d layer %d links to node %d (of %d, level %d)", i, l, x, n, h.levels[min(int(x), n-1)])
				}
			}
		}
	}
	if live != h.Len() {
		t.Fatalf("Len %d, but %d live nodes", h.Len(), live)
	}
	if live > 0 && (!h.hasEntry || int(h.entry) >= n || h.isDeleted(h.entry) || int(h.levels[h.entry]) != h.top) {
		t.Fatalf("entry point %d (has %v, top %d) of %d nodes", h.entry, h.hasEntry, h.top, n)
	}
}

// checkDecodedHNSW checks a decoded index round-trips to an equal one,
// then searches and inserts into it.
func checkDecodedHNSW(t *testing.T, h *HNSW) {
	t.Helper()
	checkHNSWGraph(t, h)
	var enc bytes.Buffer
	if err := h.Encode(&enc); err != nil {
		t.Fatalf("encode a decoded index: %v", err)
	}
	h2, err := DecodeHNSW(bytes.NewReader(enc.Bytes()))
	if err != nil {
		t.Fatalf("re-encoded index does not decode: %v", err)
	}
	if h2.Dim() != h.Dim() || h2.Len() != h.Len() || h2.Deleted() != h.Deleted() || h2.Options() != h.Options() {
		t.Fatalf("round trip: dim %d len %d deleted %d %+v; want %d %d %d %+v",
			h2.Dim(), h2.Len(), h2.Deleted(), h2.Options(), h.Dim(), h.Len(), h.Deleted(), h.Options())
	}
	if again := reencodeHNSW(t, enc.Bytes()); !bytes.Equal(again, enc.Bytes()) {
		t.Fatalf("decode → encode is not stable:\n%x\n%x", enc.Bytes(), again)
	}
	q := make([]float32, h.Dim())
	q[0] = 1
	r1, err := h.Search(q, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	r2, err := h2.Search(q, 3, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(r1) != fmt.Sprint(r2) {
		t.Fatalf("search differs after a round trip:\n%v\n%v", r1, r2)
	}
	if len(r1) > h.Len() || (h.Len() > 0 && len(r1) == 0) {
		t.Fatalf("search of %d live vectors found %d", h.Len(), len(r1))
	}
	if err := h.Add(1<<63, q); err != nil {
		t.Fatal(err)
	}
	if r, err := h.Search(q, 1, nil); err != nil || len(r) != 1 {
		t.Fatalf("search after an insert: %v, %v", r, err)
	}
	var buf bytes.Buffer
	if err := h.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	if _, err := DecodeHNSW(&buf); err != nil {
		t.Fatalf("index with an insert does not decode: %v", err)
	}
}
