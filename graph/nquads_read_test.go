package graph

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/kv"
)

// rootKeys counts the keys under root.
func rootKeys(t testing.TB, db *kv.DB, root []byte) int {
	t.Helper()
	n := 0
	err := db.View(context.Background(), func(txn *kv.Txn) error {
		it := txn.NewIterator(kv.IterOptions{Prefix: root, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// checkEmpty fails when the graph under testRoot holds anything.
func checkEmpty(t *testing.T, s *Store, db *kv.DB) {
	t.Helper()
	view(t, s, db, func(tx *Tx) error {
		g, err := tx.ReadGraph(ReadOptions{})
		if len(g.Entities) != 0 || len(g.Relations) != 0 {
			t.Errorf("the graph is not empty: %+v", g.Graph)
		}
		return err
	})
	if n := rootKeys(t, db, testRoot); n != 0 {
		t.Errorf("%d keys written", n)
	}
}

// TestImportOrderIndependent imports the export with its lines shuffled:
// metadata before main quads, entity quads among facts. Aliases and
// observations are lists, read in the order they come, so they keep
// theirs.
func TestImportOrderIndependent(t *testing.T) {
	s, db := nquadsTestGraph(t)
	want := exportNQuads(t, s, db, testRoot)
	lines := strings.SplitAfter(string(want), "\n")
	for seed := range int64(5) {
		shuffled := slices.Clone(lines)
		rand.New(rand.NewSource(seed)).Shuffle(len(shuffled), func(i, j int) { shuffled[i], shuffled[j] = shuffled[j], shuffled[i] })
		isList := func(l string) bool {
			return strings.Contains(l, "<"+iriAlias+">") || strings.Contains(l, "<"+iriObservation+">")
		}
		lists := slices.DeleteFunc(slices.Clone(lines), func(l string) bool { return !isList(l) })
		for i, l := range shuffled {
			if isList(l) {
				shuffled[i], lists = lists[0], lists[1:]
			}
		}
		s2, db2, _ := newTestGraph(t, nquadsOptions)
		if _, err := s2.Import(t.Context(), db2, testRoot, strings.NewReader(strings.Join(shuffled, "")), nil); err != nil {
			t.Fatalf("seed %d: %v", seed, err)
		}
		if got := exportNQuads(t, s2, db2, testRoot); !bytes.Equal(got, want) {
			t.Errorf("seed %d: export differs:\n%s", seed, lineDiff(want, got))
		}
	}
}

// TestImportAnyForm reads values written the ways other tools write them:
// a default-graph fact with metadata, plain and typed dates, numbers of
// other types, escapes in IRIs, comments and blank lines.
func TestImportAnyForm(t *testing.T) {
	const id = "01JH0000000000000000000000"
	in := `# a comment

<urn:engram:fact:` + id + `> <urn:engram:validFrom> "2024-02-29T12:00:00.5+01:00" .
<urn:engram:fact:01jh0000000000000000000000> <urn:engram:confidence> "1"^^<http://www.w3.org/2001/XMLSchema#integer> <urn:engram:fact:` + id + `> .
<urn:engram:fact:` + id + `> <urn:engram:createdAt> "2025-01-01T00:00:00Z"^^<schema:DateTime> .
<urn:engram:fact:` + id + `> <urn:engram:source> "chat"@en .
	<urn:engram:entity:caf\u00E9> <urn:engram:predicate:likes> <urn:engram:entity:t%c3%A9a> <urn:engram:fact:` + id + `> . # trailing comment
<urn:engram:entity:caf%C3%A9> <http://www.w3.org/2000/01/rdf-schema#label> "Café" .
<urn:engram:entity:caf%C3%A9> <urn:engram:createdAt> "2020-01-01T00:00:00Z" .
<urn:engram:entity:caf%C3%A9> <urn:engram:alias> "Le Café" .
<urn:engram:entity:caf%C3%A9> <urn:engram:alias> "Le Café" .
<urn:engram:fact:` + id + `> <urn:engram:validFrom> "2024-02-29T11:00:00.5Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
`
	d, err := ParseNQuads(t.Context(), strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	want := Dump{
		Entities: []Entity{{Name: "Café", Aliases: []string{"Le Café"}, CreatedAt: time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC)}},
		Facts: []Fact{{
			ID: id, Subject: "café", Predicate: "likes", Object: "téa",
			ValidFrom: time.Date(2024, 2, 29, 11, 0, 0, 5e8, time.UTC), CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC),
			Source: "chat", Confidence: 1,
		}},
	}
	if !dumpsEqual(d, &want) {
		t.Errorf("parsed\n%+v\nwant\n%+v", *d, want)
	}
	// The same with a byte order mark and CRLF line ends.
	d, err = ParseNQuads(t.Context(), strings.NewReader("\uFEFF"+strings.ReplaceAll(in, "\n", "\r\n")))
	if err != nil {
		t.Fatal(err)
	}
	if !dumpsEqual(d, &want) {
		t.Errorf("with BOM and CRLF: parsed\n%+v\nwant\n%+v", *d, want)
	}
}

// dumpsEqual compares dumps with times compared by instant.
func dumpsEqual(a, b *Dump) bool {
	return slices.EqualFunc(a.Entities, b.Entities, func(x, y Entity) bool {
		return x.Name == y.Name && x.Type == y.Type && slices.Equal(x.Aliases, y.Aliases) &&
			slices.Equal(x.Observations, y.Observations) && x.CreatedAt.Equal(y.CreatedAt)
	}) && slices.EqualFunc(a.Facts, b.Facts, func(x, y Fact) bool {
		return x.ID == y.ID && x.Subject == y.Subject && x.Predicate == y.Predicate && x.Object == y.Object &&
			x.ValidFrom.Equal(y.ValidFrom) && x.ValidTo.Equal(y.ValidTo) && x.CreatedAt.Equal(y.CreatedAt) &&
			x.ExpiredAt.Equal(y.ExpiredAt) && x.Source == y.Source && x.Confidence == y.Confidence
	})
}

func TestImportForeign(t *testing.T) {
	s, db, clock := newTestGraph(t, nil)
	in, err := os.ReadFile(filepath.Join("testdata", "cayley.nq"))
	if err != nil {
		t.Fatal(err)
	}
	extra := `_:b1 <http://xmlns.com/foaf/0.1/knows> "Bob"@en .
<http://example.org/alice> <http://xmlns.com/foaf/0.1/age> "42"^^<http://www.w3.org/2001/XMLSchema#integer> _:g .
<alice> <http://www.w3.org/2000/01/rdf-schema#label> "Alice" .
<caf\u00E9> <serves> <urn:engram:entity:t%C3%A9a> .
`
	st, err := s.Import(t.Context(), db, testRoot, bytes.NewReader(append(in, extra...)), nil)
	if err != nil {
		t.Fatal(err)
	}
	if st != (LoadStats{Facts: 19}) {
		t.Errorf("stats %+v", st)
	}
	now := clock.now()
	view(t, s, db, func(tx *Tx) error {
		facts, err := tx.Facts(FactQuery{Limit: MaxPageSize})
		if err != nil {
			return err
		}
		var got []string
		for _, f := range facts {
			if !f.ValidFrom.Equal(now) || !f.CreatedAt.Equal(now) || f.Confidence != 1 {
				t.Errorf("%+v: want ValidFrom and CreatedAt now and confidence 1", f)
			}
			s := f.Subject + " " + f.Predicate + " " + f.Object
			if f.Source != "" {
				s += " @" + f.Source
			}
			got = append(got, s)
		}
		want := []string{
			"_:b1 http://xmlns.com/foaf/0.1/knows bob", // "Bob" names the entity bob
			"alice follows bob",
			"alice http://www.w3.org/2000/01/rdf-schema#label alice",
			"bob follows fred",
			"bob status cool_person",
			"café serves téa",
			"charlie follows bob",
			"charlie follows dani",
			"dani follows bob",
			"dani follows greg",
			"dani status cool_person",
			"emily follows fred",
			"emily status smart_person @smart_graph",
			"fred follows greg",
			"greg status cool_person",
			"greg status smart_person @smart_graph",
			"http://example.org/alice http://xmlns.com/foaf/0.1/age 42 @_:g",
			"predicates are follows",
			"predicates are status",
		}
		if !slices.Equal(got, want) {
			t.Errorf("facts:\n got %q\nwant %q", got, want)
		}
		return nil
	})
}

// malformedNQuads are inputs that Import must refuse with ErrInvalidNQuads
// at the line given, writing nothing. They serve as fuzz seeds too.
var malformedNQuads = []struct {
	name string
	line int
	in   string
}{
	{"incomplete", 1, `<a> <b> .`},
	{"unterminated IRI", 2, "<a> <b> <c> .\n<a> <b> <c"},
	{"bare newline in literal", 1, "<a> <b> \"x\r\" ."},
	{"escape that panics nquads", 2, "<a> <b> <c> .\n<a> <b> \"\\UFFFFFFFF\" ."},
	{"not UTF-8", 1, "<a> <b> \"\xff\" ."},
	{"metadata without main quad", 2, `<a> <b> <c> .
<urn:engram:fact:01JH0000000000000000000000> <urn:engram:validFrom> "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:engram:fact:01JH0000000000000000000000> .
<d> <e> <f> .`},
	{"two main quads", 3, `<a> <b> <c> <urn:engram:fact:01JH0000000000000000000000> .
<a> <b> <c> <urn:engram:fact:01JH0000000000000000000000> .
<a> <b> <d> <urn:engram:fact:01JH0000000000000000000000> .`},
	{"two values", 2, `<urn:engram:fact:01JH0000000000000000000000> <urn:engram:source> "x" .
<urn:engram:fact:01JH0000000000000000000000> <urn:engram:source> "y" .
<a> <b> <c> <urn:engram:fact:01JH0000000000000000000000> .`},
	{"bad date", 1, `<urn:engram:fact:01JH0000000000000000000000> <urn:engram:validTo> "yesterday"^^<http://www.w3.org/2001/XMLSchema#dateTime> .`},
	{"date is an IRI", 1, `<urn:engram:fact:01JH0000000000000000000000> <urn:engram:validTo> <http://example.org/2026> .`},
	{"bad entity date", 1, `<a> <urn:engram:createdAt> "2026-13-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .`},
	{"bad confidence", 1, `<urn:engram:fact:01JH0000000000000000000000> <urn:engram:confidence> "high"^^<http://www.w3.org/2001/XMLSchema#double> .`},
	{"truncated percent", 1, `<urn:engram:entity:a%2> <b> <c> .`},
	{"bad hex", 1, `<a> <b> <urn:engram:entity:%zz> .`},
	{"percent-decoded not UTF-8", 1, `<urn:engram:entity:%FF> <urn:engram:alias> "x" .`},
	{"bad predicate encoding", 1, `<a> <urn:engram:predicate:%> <c> .`},
	{"unknown engram predicate", 1, `<a> <urn:engram:colour> "red" .`},
	{"engram IRI as predicate", 1, `<a> <urn:engram:entity:b> <c> .`},
	{"bad fact id", 1, `<a> <b> <c> <urn:engram:fact:not-a-ulid> .`},
	{"fact IRI as entity", 1, `<urn:engram:fact:01JH0000000000000000000000> <b> <c> .`},
	{"engram label", 1, `<a> <b> <c> <urn:engram:entity:x> .`},
	{"metadata of an entity", 1, `<a> <urn:engram:validFrom> "2026-01-01T00:00:00Z" .`},
	{"metadata in another fact's graph", 1, `<urn:engram:fact:01JH0000000000000000000000> <urn:engram:source> "x" <urn:engram:fact:01JH0000000000000000000001> .`},
	{"entity quad in a graph", 1, `<a> <urn:engram:alias> "x" <g> .`},
	{"alias is an IRI", 1, `<a> <urn:engram:alias> <x> .`},
	{"label of another name", 1, `<urn:engram:entity:Ada> <http://www.w3.org/2000/01/rdf-schema#label> "Bob" .`},
	{"two labels", 2, `<urn:engram:entity:Ada> <http://www.w3.org/2000/01/rdf-schema#label> "ADA" .
<urn:engram:entity:Ada> <http://www.w3.org/2000/01/rdf-schema#label> "ada" .`},
	{"two types", 2, `<a> <urn:engram:entityType> "x" .
<a> <urn:engram:entityType> "y" .`},
	{"bad IRI escape", 1, `<a\U0010FFFF\U00110000> <b> <c> .`},
}

func TestImportMalformed(t *testing.T) {
	for _, c := range malformedNQuads {
		t.Run(c.name, func(t *testing.T) {
			s, db, _ := newTestGraph(t, nil)
			_, perr := ParseNQuads(t.Context(), strings.NewReader(c.in))
			_, err := s.Import(t.Context(), db, testRoot, strings.NewReader(c.in), nil)
			for _, err := range []error{perr, err} {
				if !errors.Is(err, ErrInvalidNQuads) {
					t.Fatalf("err %v, want ErrInvalidNQuads", err)
				}
				if want := fmt.Sprintf(": line %d: ", c.line); !strings.Contains(err.Error(), want) {
					t.Errorf("err %q does not name line %d", err, c.line)
				}
			}
			checkEmpty(t, s, db)
		})
	}
}

// TestImportInvalidFact imports well-formed quads that the graph refuses.
func TestImportInvalidFact(t *testing.T) {
	const fact = "<urn:engram:fact:01JH0000000000000000000000>"
	for _, c := range []struct {
		name string
		line int
		in   string
		want error
	}{
		{"empty subject", 2, "<a> <b> <c> .\n\"\" <urn:engram:predicate:p> <urn:engram:entity:o> .", ErrInvalidFact},
		{"empty entity IRI", 1, "<urn:engram:entity:> <b> <c> .", ErrInvalidName},
		{"validTo before validFrom", 1, `<a> <b> <c> ` + fact + ` .
` + fact + ` <urn:engram:validFrom> "2026-01-02T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
` + fact + ` <urn:engram:validTo> "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .`, ErrInvalidFact},
		{"validTo before now", 2, `<x> <y> <z> .
<a> <b> <c> ` + fact + ` .
` + fact + ` <urn:engram:validTo> "2000-01-01T00:00:00Z" .`, ErrInvalidFact},
		{"confidence", 3, `<x> <y> <z> .
` + fact + ` <urn:engram:confidence> "1.5"^^<http://www.w3.org/2001/XMLSchema#double> .
<a> <b> <c> ` + fact + ` .`, ErrInvalidFact},
		{"NaN confidence", 1, `<a> <b> <c> ` + fact + ` .
` + fact + ` <urn:engram:confidence> "NaN" .`, ErrInvalidFact},
		{"year 3000", 1, `<a> <b> <c> ` + fact + ` .
` + fact + ` <urn:engram:validFrom> "3000-01-01T00:00:00Z" .`, ErrInvalidFact},
		{"long source", 1, `<a> <b> <c> <` + strings.Repeat("s", MaxSourceLength+1) + `> .`, ErrInvalidFact},
		{"control character in name", 1, `<a> <b> "c\u0000" .`, ErrInvalidFact},
		{"empty observation", 2, "<a> <b> <c> .\n<d> <urn:engram:observation> \"\" .", ErrInvalidEntity},
	} {
		t.Run(c.name, func(t *testing.T) {
			s, db, _ := newTestGraph(t, nil)
			d, err := ParseNQuads(t.Context(), strings.NewReader(c.in))
			if err != nil {
				t.Fatalf("ParseNQuads: %v", err)
			}
			check := func(how string, err error) {
				t.Helper()
				if !errors.Is(err, ErrInvalidNQuads) || !errors.Is(err, c.want) {
					t.Fatalf("%s: err %v, want ErrInvalidNQuads and %v", how, err, c.want)
				}
				if want := fmt.Sprintf(": line %d: ", c.line); !strings.Contains(err.Error(), want) {
					t.Errorf("%s: err %q does not name line %d", how, err, c.line)
				}
				checkEmpty(t, s, db)
			}
			_, err = s.Import(t.Context(), db, testRoot, strings.NewReader(c.in), nil)
			check("Import", err)
			// Loading the parsed Dump names the line too: package memory
			// and the CLI import N-Quads that way.
			_, err = s.Load(t.Context(), db, testRoot, d, nil)
			check("ParseNQuads then Load", err)
		})
	}
}

func TestImportLongLine(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	ok := "<a> <urn:engram:observation> \"" + strings.Repeat("o", MaxObservationLength) + "\" .\n"
	long := "<a> <b> \"" + strings.Repeat("x", maxNQuadsLine) + "\" .\n"
	if _, err := s.Import(t.Context(), db, testRoot, strings.NewReader(ok+long), nil); !errors.Is(err, ErrInvalidNQuads) || !strings.Contains(err.Error(), "line 2:") {
		t.Fatalf("err %v, want ErrInvalidNQuads at line 2", err)
	}
	checkEmpty(t, s, db)
	// A line longer than the reader's buffer but within the limit parses.
	obs := strings.Repeat("é", 100_000)
	in := ok + "<b> <urn:engram:observation> \"" + obs + "\" .\n<a> <b> <c> ."
	d, err := ParseNQuads(t.Context(), strings.NewReader(in))
	if err != nil {
		t.Fatal(err)
	}
	if len(d.Entities) != 2 || len(d.Entities[1].Observations) != 1 || d.Entities[1].Observations[0] != obs || len(d.Facts) != 1 {
		t.Errorf("parsed %d entities, %d facts", len(d.Entities), len(d.Facts))
	}
}

func TestImportCancelled(t *testing.T) {
	s, db, _ := newTestGraph(t, nil)
	ctx, cancel := context.WithCancel(t.Context())
	cancel()
	in := strings.Repeat("<a> <b> <c> .\n", 10000)
	if _, err := s.Import(ctx, db, testRoot, strings.NewReader(in), nil); !errors.Is(err, context.Canceled) {
		t.Fatalf("err %v, want context.Canceled", err)
	}
	if _, err := ParseNQuads(ctx, strings.NewReader(in)); !errors.Is(err, context.Canceled) {
		t.Fatalf("ParseNQuads: err %v, want context.Canceled", err)
	}
	checkEmpty(t, s, db)
}

func FuzzImport(f *testing.F) {
	s, db := nquadsTestGraph(f)
	f.Add(exportNQuads(f, s, db, testRoot))
	for _, name := range []string{"export.nq", "cayley.nq"} {
		b, err := os.ReadFile(filepath.Join("testdata", name))
		if err != nil {
			f.Fatal(err)
		}
		f.Add(b)
	}
	for _, c := range malformedNQuads {
		f.Add([]byte(c.in))
	}
	f.Add([]byte("\"\" <urn:engram:predicate:p> <urn:engram:entity:o> ."))
	f.Add([]byte("<a> <urn:engram:predicate:renewal%20owner> <x> .\n<a> <urn:engram:predicate:renewal%20owner> <y> ."))
	f.Add([]byte("<a> <b> \"\\u00e9\\U0001F680\\t\"@en-GB _:g .\n_:x <p> \"1\"^^<http://www.w3.org/2001/XMLSchema#boolean> ."))

	// Deleting each input's graph would leave tombstones that slow every
	// later import down (ten times over a thousand inputs), so inputs get
	// roots of their own and the store is replaced now and then.
	s, db, _ = newTestGraph(f, nquadsOptions)
	ctx := context.Background()
	n := 0
	f.Cleanup(func() { db.Close() })
	f.Fuzz(func(t *testing.T, data []byte) {
		d, err := ParseNQuads(t.Context(), bytes.NewReader(data))
		if err != nil {
			if !errors.Is(err, ErrInvalidNQuads) {
				t.Fatalf("ParseNQuads: %v does not wrap ErrInvalidNQuads", err)
			}
			return
		}
		for _, f := range d.Facts {
			if !utf8.ValidString(f.Subject) || !utf8.ValidString(f.Predicate) || !utf8.ValidString(f.Object) || !utf8.ValidString(f.Source) {
				t.Fatalf("fact not UTF-8: %+v", f)
			}
		}
		if n++; n%1000 == 0 {
			db.Close()
			var err error
			if db, err = kv.Open("", nil); err != nil {
				t.Fatal(err)
			}
		}
		root := fmt.Appendf(nil, "fuzz/%d/", n)
		if _, err := s.Import(ctx, db, root, bytes.NewReader(data), nil); err != nil {
			if errors.Is(err, ErrInvalidNQuads) && rootKeys(t, db, root) != 0 {
				t.Fatalf("Import failed with %v but wrote keys", err)
			}
			return
		}
		// What Import wrote exports to N-Quads that import again to the
		// same graph.
		first := exportNQuads(t, s, db, root)
		root2 := fmt.Appendf(nil, "fuzz/%d.again/", n)
		if _, err := s.Import(ctx, db, root2, bytes.NewReader(first), nil); err != nil {
			t.Fatalf("importing the export: %v\n%s", err, first)
		}
		if second := exportNQuads(t, s, db, root2); !bytes.Equal(first, second) {
			t.Fatalf("export of the re-imported graph differs:\n%s", lineDiff(first, second))
		}
	})
}
