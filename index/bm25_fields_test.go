package index

import (
	"bytes"
	"math"
	"testing"
)

// TestBM25AddFields checks the context field's half weight against BM25F
// computed by hand: a term's frequency is its text occurrences plus half
// its context occurrences, and lengths add up the same way.
func TestBM25AddFields(t *testing.T) {
	x := NewBM25(nil)
	x.AddFields(1, "pottery class", "")                       // tf 1, dl 2
	x.AddFields(2, "it was fun", "how was the pottery class") // "was", "how", "the" are stop words: tf ½, dl 1 + 1 = 2
	x.AddFields(3, "garden", "garden")                        // no match, dl 1.5
	res, err := x.Search("pottery", 3, nil)
	if err != nil || len(res) != 2 || res[0].ID != 1 || res[1].ID != 2 {
		t.Fatalf("results %+v, %v", res, err)
	}
	const k1, b = 1.2, 0.75
	n, df := 3.0, 2.0
	idf := math.Log(1 + (n-df+0.5)/(df+0.5))
	avgdl := (2 + 2 + 1.5) / n
	score := func(tf, dl float64) float64 { return idf * tf * (k1 + 1) / (tf + k1*(1-b+b*dl/avgdl)) }
	for i, want := range []float64{score(1, 2), score(0.5, 2)} {
		if got := float64(res[i].Score); math.Abs(got-want) > 1e-5*want {
			t.Errorf("result %d: score %v, want %v", i, got, want)
		}
	}
	// The weights survive an encoding round trip, and AddTerms is AddFields
	// without context.
	var buf bytes.Buffer
	if err := x.Encode(&buf); err != nil {
		t.Fatal(err)
	}
	y, err := DecodeBM25(&buf)
	if err != nil {
		t.Fatal(err)
	}
	again, _ := y.Search("pottery", 3, nil)
	if len(again) != 2 || again[0] != res[0] || again[1] != res[1] {
		t.Fatalf("after decode %+v, want %+v", again, res)
	}
	z := NewBM25(nil)
	z.AddTerms(1, Analyze("pottery class"))
	z.AddFields(2, "pottery class", "")
	r, _ := z.Search("pottery class", 2, nil)
	if len(r) != 2 || r[0].Score != r[1].Score {
		t.Fatalf("AddTerms and AddFields differ: %+v", r)
	}
}
