package memory

import (
	"errors"
	"strings"
	"testing"

	"github.com/engramdb/engram/embed"
	"github.com/engramdb/engram/embed/embedtest"
)

// staticModel writes a tiny Model2Vec model in which "car" and
// "automobile" share a row, as a trained model's neighbours would, and
// returns it loaded. Every other content word has a row of its own; the
// function words share a small common one. seed varies nothing but the
// last column, to make a different model of the same shape.
func staticModel(t *testing.T, seed float32) *embed.Static {
	t.Helper()
	const dims = 8
	row := func(i int, v float32) []float32 {
		r := make([]float32, dims)
		r[i] = v
		r[dims-1] += seed
		return r
	}
	words := []struct {
		w   string
		row []float32
	}{
		{"[UNK]", row(0, 0)},
		{"car", row(0, 1)},
		{"automobile", row(0, 1)},
		{"drives", row(1, 1)},
		{"red", row(2, 1)},
		{"alice", row(3, 1)},
		{"bob", row(4, 1)},
		{"plays", row(5, 1)},
		{"piano", row(5, 1)},
		{"a", row(6, 0.1)},
		{"the", row(6, 0.1)},
		{"what", row(6, 0.1)},
		{"does", row(6, 0.1)},
		{"she", row(6, 0.1)},
		{"own", row(6, 0.1)},
	}
	m := embedtest.StaticModel{Dims: dims}
	for _, w := range words {
		m.Vocab = append(m.Vocab, w.w)
		m.Rows = append(m.Rows, w.row)
	}
	dir := t.TempDir()
	if err := embedtest.WriteStaticModel(dir, m); err != nil {
		t.Fatal(err)
	}
	s, err := embed.NewStatic(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// TestStaticEmbedderRecallsByMeaning is the new user: with the
// memory "Alice drives a red car", "What automobile does she own?" recalled
// nothing with the offline default. With a static model, vector search
// takes part in hybrid recall by default and finds it; the model is not
// wrapped in the embedding cache; and another model of the same dimension
// is refused on the store.
func TestStaticEmbedderRecallsByMeaning(t *testing.T) {
	scope := Scope{Tenant: "acme", User: "alice"}
	query := Query{Scope: scope, Text: "What automobile does she own?"}
	recalled := func(s *Store) bool {
		t.Helper()
		rec, err := s.Recall(bg, query)
		if err != nil {
			t.Fatal(err)
		}
		for _, it := range rec.Items {
			if strings.Contains(it.Text, "red car") {
				return true
			}
		}
		return false
	}
	fill := func(s *Store) {
		t.Helper()
		for _, m := range []string{"Alice drives a red car", "Bob plays the piano"} {
			if _, err := s.Remember(bg, scope, Memory{Text: m}); err != nil {
				t.Fatal(err)
			}
		}
	}

	def, err := Open("", &Options{Durability: Async, SweepInterval: -1})
	if err != nil {
		t.Fatal(err)
	}
	defer def.Close()
	fill(def)
	if recalled(def) {
		t.Fatal("the lexical default recalled the car by \"automobile\": the test no longer shows the gap")
	}

	dir := t.TempDir()
	model := staticModel(t, 0)
	s, err := Open(dir, &Options{Durability: Async, SweepInterval: -1, Embedder: model})
	if err != nil {
		t.Fatal(err)
	}
	if s.cache != nil || s.vectorWeight != 1 {
		t.Fatalf("static model: cache %v, vector weight %v; want no cache, weight 1", s.cache != nil, s.vectorWeight)
	}
	fill(s)
	if !recalled(s) {
		t.Fatal("a static model with car ~ automobile did not recall the car")
	}
	if err := s.Close(); err != nil {
		t.Fatal(err)
	}
	other := staticModel(t, 0.5)
	if model.Identity() == other.Identity() {
		t.Fatalf("two tables, one identity %v", model.Identity())
	}
	if s, err := Open(dir, &Options{Durability: Async, SweepInterval: -1, Embedder: other}); !errors.Is(err, ErrEmbedderMismatch) {
		if err == nil {
			s.Close()
		}
		t.Fatalf("another static model: %v, want ErrEmbedderMismatch", err)
	}
	// The same table loaded again is the same model.
	s, err = Open(dir, &Options{Durability: Async, SweepInterval: -1, Embedder: staticModel(t, 0)})
	if err != nil {
		t.Fatalf("the same model again: %v", err)
	}
	defer s.Close()
	if !recalled(s) {
		t.Fatal("not recalled after reopening")
	}
}
