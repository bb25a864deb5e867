package index

import (
	"bytes"
	"errors"
	"fmt"
	"math/rand/v2"
	"testing"
)

func TestHNSWEncodeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(5, 5))
	data := clustered(rng, 1200, 16, 12)
	h, vecs := buildHNSW(t, data[:1000], &HNSWOptions{M: 8, Seed: 5})
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
	for _, q := range data[1000:1100] {
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
	for i, v := range data[1100:] {
		if err := got.Add(uint64(100000+i), v); err != nil {
			t.Fatal(err)
		}
	}
	if r, _ := got.Search(data[1150], 1, nil); len(r) != 1 || r[0].ID != 100050 {
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
	// Every truncation and every single-bit flip is caught.
	for cut := 0; cut < len(good); cut += max(1, len(good)/300) {
		if _, err := DecodeHNSW(bytes.NewReader(good[:cut])); !errors.Is(err, ErrCorrupt) {
			t.Fatalf("truncated at %d of %d: %v, want ErrCorrupt", cut, len(good), err)
		}
	}
	for i := 0; i < len(good); i += max(1, len(good)/500) {
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

// FuzzDecodeHNSW: arbitrary input must decode to an error or to an index
// that searches, inserts and re-encodes without panicking.
func FuzzDecodeHNSW(f *testing.F) {
	rng := rand.New(rand.NewPCG(7, 7))
	for _, n := range []int{0, 1, 5, 40} {
		h, err := NewHNSW(4, &HNSWOptions{M: 2, EfConstruction: 8})
		if err != nil {
			f.Fatal(err)
		}
		for i, v := range clustered(rng, n, 4, 2) {
			_ = h.Add(uint64(i), v)
		}
		var buf bytes.Buffer
		if err := h.Encode(&buf); err != nil {
			f.Fatal(err)
		}
		f.Add(buf.Bytes())
	}
	f.Add([]byte(hnswMagic))
	f.Fuzz(func(t *testing.T, b []byte) {
		h, err := DecodeHNSW(bytes.NewReader(b))
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error does not wrap ErrCorrupt: %v", err)
			}
			return
		}
		q := make([]float32, h.Dim())
		q[0] = 1
		if _, err := h.Search(q, 3, nil); err != nil {
			t.Fatal(err)
		}
		if err := h.Add(1<<63, q); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := h.Encode(&buf); err != nil {
			t.Fatal(err)
		}
		if _, err := DecodeHNSW(&buf); err != nil {
			t.Fatalf("re-encoded index does not decode: %v", err)
		}
	})
}
