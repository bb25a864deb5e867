package index

import (
	"bytes"
	"fmt"
	"math"
	"math/rand/v2"
	"testing"
)

// buildQ8Pair builds the same graph twice from one seed with one
// goroutine, once walking int8 copies at search time and once not; the
// build scores floats either way, so the graphs are equal.
func buildQ8Pair(t *testing.T, data [][]float32) (quant, plain *HNSW) {
	t.Helper()
	o := (&HNSWOptions{Seed: 4}).withDefaults()
	quant, plain = newHNSW(len(data[0]), o), newHNSW(len(data[0]), o)
	quant.quant, plain.quant = true, false // the Go kernel where the CPU has no assembly one
	for i, v := range data {
		if err := quant.Add(uint64(i), v); err != nil {
			t.Fatal(err)
		}
		if err := plain.Add(uint64(i), v); err != nil {
			t.Fatal(err)
		}
	}
	return quant, plain
}

// TestHNSWQuantizedSearch pins the int8 walk's contract: the scores it
// returns are the float similarities (re-scored, not the int8
// approximations), sorted, and its recall is within a point of the float
// walk's on the same graph.
func TestHNSWQuantizedSearch(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 32, 30)
	quant, plain := buildQ8Pair(t, data[:n])
	if len(quant.q8) == 0 || len(plain.q8) != 0 {
		t.Fatalf("int8 copies: %d with quant, %d without", len(quant.q8), len(plain.q8))
	}
	vecs := map[uint64][]float32{}
	for i, v := range data[:n] {
		vecs[uint64(i)] = v
	}
	for _, q := range data[n : n+20] {
		qn, _ := Normalize(nil, q)
		got, err := quant.Search(q, 10, &SearchOptions{Ef: 24})
		if err != nil || len(got) != 10 {
			t.Fatalf("Search: %v, %d results", err, len(got))
		}
		for _, r := range got {
			want := dot(qn, quant.vec(quant.byID[r.ID]))
			if math.Abs(float64(r.Score-want)) > 1e-6 {
				t.Fatalf("id %d: score %v, float similarity %v", r.ID, r.Score, want)
			}
		}
	}
	opts := &SearchOptions{Ef: 24}
	rq, rp := meanRecall(t, quant, vecs, data[n:], 10, opts), meanRecall(t, plain, vecs, data[n:], 10, opts)
	t.Logf("recall@10 at ef 24: int8 walk %.4f, float walk %.4f", rq, rp)
	if rq < rp-0.01 {
		t.Fatalf("int8 walk recall %.4f, float walk %.4f", rq, rp)
	}
}

// TestHNSWQuantizedDecode checks that a decoded index rebuilds the int8
// copies it does not store: its searches equal the original's.
func TestHNSWQuantizedDecode(t *testing.T) {
	rng := rand.New(rand.NewPCG(13, 14))
	data := clustered(rng, 600+30, 48, 10)
	h, _ := buildQ8Pair(t, data[:600])
	var buf bytes.Buffer
	if err := h.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	got, err := DecodeHNSW(bytes.NewReader(buf.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	got.quant = true
	if want := int(got.n.Load()) * got.dim; hasQ8Kernel() && len(got.q8) != want {
		t.Fatalf("decoded int8 slab %d long, want %d", len(got.q8), want)
	}
	if len(got.q8) == 0 { // no assembly kernel: the decoder leaves them out
		got.q8 = make([]int8, len(got.vecs))
		got.q8scale = make([]float32, got.nodes)
		for i := range got.nodes {
			got.q8scale[i] = quantize8(got.q8[i*got.dim:(i+1)*got.dim], got.vec(uint32(i)))
		}
	}
	for _, q := range data[600:] {
		a, _ := h.Search(q, 10, nil)
		b, _ := got.Search(q, 10, nil)
		if fmt.Sprint(a) != fmt.Sprint(b) {
			t.Fatalf("search differs after decode:\n%v\n%v", a, b)
		}
	}
}

// TestHNSWQuantizedDeletedFiltered checks the int8 walk through the heaps:
// after deletes, and with a filter, scores are the float similarities,
// no deleted or rejected id comes back, and recall stays within a point of
// the float walk's on the same graph.
func TestHNSWQuantizedDeletedFiltered(t *testing.T) {
	rng := rand.New(rand.NewPCG(15, 16))
	n, nq := testSizes()
	data := clustered(rng, n+nq, 32, 30)
	quant, plain := buildQ8Pair(t, data[:n])
	quant.testExactMatches, plain.testExactMatches = -1, -1 // walk, do not scan
	vecs := map[uint64][]float32{}
	for i, v := range data[:n] {
		if i%7 == 0 {
			quant.Delete(uint64(i))
			plain.Delete(uint64(i))
			continue
		}
		vecs[uint64(i)] = v
	}
	even := func(id uint64) bool { return id%2 == 0 }
	for _, opts := range []*SearchOptions{{Ef: 24}, {Ef: 24, Filter: even}} {
		for _, q := range data[n : n+20] {
			qn, _ := Normalize(nil, q)
			got, err := quant.Search(q, 10, opts)
			if err != nil || len(got) != 10 {
				t.Fatalf("Search: %v, %d results", err, len(got))
			}
			for _, r := range got {
				if _, live := vecs[r.ID]; !live || opts.Filter != nil && !even(r.ID) {
					t.Fatalf("id %d returned: deleted or filtered out", r.ID)
				}
				want := dot(qn, quant.vec(quant.byID[r.ID]))
				if math.Abs(float64(r.Score-want)) > 1e-6 {
					t.Fatalf("id %d: score %v, float similarity %v", r.ID, r.Score, want)
				}
			}
		}
		rq, rp := meanRecall(t, quant, vecs, data[n:], 10, opts), meanRecall(t, plain, vecs, data[n:], 10, opts)
		t.Logf("filter %v: recall@10 at ef 24: int8 walk %.4f, float walk %.4f", opts.Filter != nil, rq, rp)
		if rq < rp-0.01 {
			t.Fatalf("filter %v: int8 walk recall %.4f, float walk %.4f", opts.Filter != nil, rq, rp)
		}
	}
}
