package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/nquads"
	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

var nquadsOptions = &Options{SingleValued: []string{"renewal owner"}}

// nquadsTestGraph builds a graph that exercises the whole mapping, with
// deterministic fact ids. Every entity is created at the clock's start:
// Load gives the entities it creates the time of loading, so a store that
// imports the export at that same time restores them byte for byte.
func nquadsTestGraph(t testing.TB) (*Store, *kv.DB) {
	t.Helper()
	s, db, clock := newTestGraph(t, nquadsOptions)
	s.ids.entropy = ulid.Monotonic(rand.New(rand.NewSource(1)), 0)
	t0 := clock.now()
	update(t, s, db, func(tx *Tx) error {
		_, err := tx.CreateEntities([]Entity{
			{
				Name: "Ada Lovelace", Type: "Person", Aliases: []string{"Countess of Lovelace", "A. A. L."},
				Observations: []string{
					`wrote "Note G"`,
					`kept notes in C:\notes\g.txt`,
					"first line\nsecond line\r\nthird",
					"tab\tand controls \x00\x01\x1f\x7f\b\f",
					"Zoë — 数学者 🚀",
				},
			},
			{Name: "Charles Babbage", Type: "Person", Aliases: []string{"Babbage"}},
			{Name: "Zoë Ångström"},
			{Name: "Acme, Inc. / R&D", Type: "Organization", Observations: []string{`100% "real" \o/`}},
			{Name: "Dana"},
			{Name: "Eve"},
			{Name: `The "Q" \ Name`},
			{Name: "tab\tname"},
			{Name: "日本 東京"},
		})
		return err
	})
	relate := func(at time.Time, facts ...Fact) []Fact {
		clock.set(at)
		var out []Fact
		update(t, s, db, func(tx *Tx) error {
			for _, f := range facts {
				f, err := tx.Relate(f)
				if err != nil {
					return err
				}
				out = append(out, f)
			}
			return nil
		})
		return out
	}
	zone := time.FixedZone("UTC+5:30", 5*3600+1800)
	relate(t0.Add(time.Hour+123456789),
		Fact{
			Subject: "Ada Lovelace", Predicate: "works with", Object: "babbage",
			ValidFrom: time.Date(1842, 10, 1, 0, 0, 0, 0, time.UTC), ValidTo: time.Date(1843, 9, 1, 0, 0, 0, 0, time.UTC),
			Source: "Sketch of the Analytical Engine", Confidence: 0.9,
		},
		Fact{Subject: "ada lovelace", Predicate: "est née à", Object: "日本 東京", Source: "line1\nline2 \"quoted\" \\", Confidence: 0.25},
		Fact{Subject: `The "Q" \ Name`, Predicate: "knows", Object: "tab\tname", Confidence: 1e-05},
		Fact{Subject: "Acme, Inc. / R&D", Predicate: "renewal owner", Object: "Dana", ValidFrom: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
	)
	zoe := relate(t0.Add(2*time.Hour+1),
		Fact{Subject: "Zoë Ångström", Predicate: "works at", Object: "Acme, Inc. / R&D", ValidFrom: time.Date(2025, 7, 14, 9, 30, 0, 987654321, zone)},
		Fact{Subject: "Acme, Inc. / R&D", Predicate: "renewal owner", Object: "Eve", ValidFrom: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC)},
	)
	relate(t0.Add(3*time.Hour+999),
		Fact{Subject: "Acme, Inc. / R&D", Predicate: "Renewal  Owner", Object: "dana", ValidFrom: time.Date(2026, 7, 1, 0, 0, 0, 0, time.UTC)},
	)
	clock.set(t0.Add(4*time.Hour + 42))
	update(t, s, db, func(tx *Tx) error {
		_, err := tx.Invalidate(zoe[0].ID, time.Date(2025, 12, 31, 23, 59, 59, 1, time.UTC))
		return err
	})
	clock.set(t0)
	return s, db
}

func exportNQuads(t testing.TB, s *Store, db *kv.DB, root []byte) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := s.View(context.Background(), db, root, func(tx *Tx) error { return tx.Export(&buf) }); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// lineDiff lists the lines of want and got that differ, by position.
func lineDiff(want, got []byte) string {
	w, g := strings.Split(string(want), "\n"), strings.Split(string(got), "\n")
	var b strings.Builder
	for i := 0; i < max(len(w), len(g)); i++ {
		var a, c string
		if i < len(w) {
			a = w[i]
		}
		if i < len(g) {
			c = g[i]
		}
		if a != c {
			fmt.Fprintf(&b, "line %d:\n-%s\n+%s\n", i+1, a, c)
		}
	}
	return b.String()
}

func TestNQuadsRoundTrip(t *testing.T) {
	s, db := nquadsTestGraph(t)
	first := exportNQuads(t, s, db, testRoot)

	d, err := ParseNQuads(t.Context(), bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entities) != 9 || len(d.Facts) != 7 {
		t.Errorf("parsed %d entities and %d facts, want 9 and 7", len(d.Entities), len(d.Facts))
	}

	s2, db2, _ := newTestGraph(t, nquadsOptions)
	st, err := s2.Import(t.Context(), db2, testRoot, bytes.NewReader(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st != (LoadStats{Entities: 9, Facts: 7}) {
		t.Errorf("stats %+v", st)
	}
	second := exportNQuads(t, s2, db2, testRoot)
	if !bytes.Equal(first, second) {
		t.Errorf("export after import differs:\n%s", lineDiff(first, second))
	}

	// The history of a single-valued pair survives as it was.
	view(t, s2, db2, func(tx *Tx) error {
		h, err := tx.History("ACME, inc. / r&d", "renewal owner")
		var got []string
		for _, f := range h {
			got = append(got, fmt.Sprintf("%s %s-%s", f.Object, f.ValidFrom.UTC().Format(time.DateOnly), f.ValidTo.UTC().Format(time.DateOnly)))
		}
		want := []string{"Dana 2026-03-01-2026-05-01", "Eve 2026-05-01-2026-07-01", "Dana 2026-07-01-0001-01-01"}
		if !slices.Equal(got, want) {
			t.Errorf("history %q, want %q", got, want)
		}
		return err
	})

	// Importing the same export again adds nothing.
	st, err = s2.Import(t.Context(), db2, testRoot, bytes.NewReader(first), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st.Facts != 0 || st.Entities != 0 {
		t.Errorf("second import stats %+v", st)
	}
	if third := exportNQuads(t, s2, db2, testRoot); !bytes.Equal(first, third) {
		t.Errorf("export after a second import differs:\n%s", lineDiff(first, third))
	}
}

// TestNQuadsTerms checks the term encodings against quad's own formatting
// and nquads's parser.
func TestNQuadsTerms(t *testing.T) {
	rng := rand.New(rand.NewSource(1))
	pool := []rune{'a', 'Z', '0', ' ', '\t', '\n', '\r', '\x00', '\x01', '\x7f', '\b', '\f', '"', '\\', '%', '<', '>', '#', '.', '~', '_', '-', 'é', '東', '🚀', '\u2028', '\uFEFF', '\u0085'}
	for i := range 2000 {
		var sb strings.Builder
		for range rng.Intn(12) {
			sb.WriteRune(pool[rng.Intn(len(pool))])
		}
		s := sb.String()
		if i == 0 {
			s = ""
		}
		lit, err := appendLiteral(nil, s)
		if err != nil {
			t.Fatal(err)
		}
		iri := appendIRI(nil, iriEntity, s)
		if !strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 && r != '\n' && r != '\r' && r != '\t' || r == 0x7f }) {
			if want := quad.String(s).String(); string(lit) != want {
				t.Errorf("literal %q: %s, quad writes %s", s, lit, want)
			}
		}
		q, err := nquads.Parse(string(iri) + " <p> " + string(lit) + " .")
		if err != nil {
			t.Fatalf("%q: %s %s: %v", s, iri, lit, err)
		}
		if got, ok := q.Object.(quad.String); !ok || string(got) != s {
			t.Errorf("literal %q parses as %#v", s, q.Object)
		}
		if name, err := nodeName(q.Subject); err != nil || name != s {
			t.Errorf("IRI %s of %q decodes to %q, %v", iri, s, name, err)
		}
	}
	if _, err := appendLiteral(nil, "a\xffb"); !errors.Is(err, ErrCorrupt) {
		t.Errorf("literal of invalid UTF-8: err %v", err)
	}
	if got := string(appendIRI(nil, iriPredicate, "Zoë's R&D/1.0~x_y")); got != "<urn:engram:predicate:Zo%C3%AB%27s%20R%26D%2F1.0~x_y>" {
		t.Errorf("IRI %s", got)
	}
}

// TestNQuadsZeroLengthFact: Relate closes a single-valued fact at its own
// start when a new value starts at the same time ("a fact that began at f
// is closed at f too"); such a fact exports, and imports again unchanged.
func TestNQuadsZeroLengthFact(t *testing.T) {
	opts := &Options{SingleValued: []string{"owner"}}
	s, db, _ := newTestGraph(t, opts)
	update(t, s, db, func(tx *Tx) error {
		if _, err := tx.Relate(Fact{Subject: "a", Predicate: "owner", Object: "x"}); err != nil {
			return err
		}
		_, err := tx.Relate(Fact{Subject: "a", Predicate: "owner", Object: "y"}) // closes x at its start
		return err
	})
	first := exportNQuads(t, s, db, testRoot)
	s2, db2, _ := newTestGraph(t, opts)
	if _, err := s2.Import(t.Context(), db2, testRoot, bytes.NewReader(first), nil); err != nil {
		t.Fatal(err)
	}
	if second := exportNQuads(t, s2, db2, testRoot); !bytes.Equal(first, second) {
		t.Errorf("export after import differs:\n%s", lineDiff(first, second))
	}
}

// BenchmarkNQuads exports a graph of n facts, parses the export, and
// imports it (parse and Load) into an empty graph:
//
//	go test ./graph/ -run '^$' -bench NQuads -benchtime 3x
func BenchmarkNQuads(b *testing.B) {
	for _, n := range []int{1000, 100_000} {
		s, db, _ := newTestGraph(b, nil)
		ctx := context.Background()
		loaded, err := s.Load(ctx, db, testRoot, benchDump(n), nil)
		if err != nil {
			b.Fatal(err)
		}
		data := exportNQuads(b, s, db, testRoot)
		b.Run(fmt.Sprintf("export/facts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				err := s.View(ctx, db, testRoot, func(tx *Tx) error { return tx.Export(discard{}) })
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "facts/s")
		})
		b.Run(fmt.Sprintf("parse/facts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			for b.Loop() {
				if _, err := ParseNQuads(context.Background(), bytes.NewReader(data)); err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "facts/s")
		})
		b.Run(fmt.Sprintf("import/facts=%d", n), func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(data)))
			i := 0
			for b.Loop() {
				i++
				st, err := s.Import(ctx, db, fmt.Appendf(nil, "import/%d/", i), bytes.NewReader(data), nil)
				if err != nil || st.Facts != loaded.Facts {
					b.Fatal(st, err)
				}
			}
			b.ReportMetric(float64(n)*float64(b.N)/b.Elapsed().Seconds(), "facts/s")
		})
	}
}

// discard is io.Discard without its ReaderFrom, so that Export's writes
// are measured as they are.
type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }

// benchDump returns n facts among n/10 entities with 20 predicates, a
// third of them closed, with sources and confidences.
func benchDump(n int) *Dump {
	rng := rand.New(rand.NewSource(1))
	d := &Dump{}
	ents := max(n/10, 2)
	for i := range ents {
		d.Entities = append(d.Entities, Entity{
			Name: fmt.Sprintf("Entity %d", i), Type: "Thing",
			Observations: []string{fmt.Sprintf("observation %d about \"this\"", i)},
		})
	}
	t0 := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)
	for i := range n {
		f := Fact{
			Subject:    d.Entities[rng.Intn(ents)].Name,
			Predicate:  fmt.Sprintf("predicate %d", rng.Intn(20)),
			Object:     d.Entities[rng.Intn(ents)].Name,
			ValidFrom:  t0.Add(time.Duration(i) * time.Minute),
			Source:     fmt.Sprintf("message %d", i),
			Confidence: float64(rng.Intn(100)+1) / 100,
		}
		if i%3 == 0 {
			f.ValidTo = f.ValidFrom.Add(time.Hour)
		}
		d.Facts = append(d.Facts, f)
	}
	return d
}
