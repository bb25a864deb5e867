package graph

import (
	"bytes"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// FuzzDecodeFact: decoding arbitrary bytes never panics, and what decodes
// encodes back to the same bytes.
func FuzzDecodeFact(f *testing.F) {
	t0 := time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)
	for _, fact := range []Fact{
		{Subject: "Alice", Predicate: "knows", Object: "Bob", ValidFrom: t0, CreatedAt: t0, Confidence: 1},
		{Subject: "ä", Predicate: "p", Object: "o", ValidFrom: t0, ValidTo: t0.Add(time.Hour), CreatedAt: t0, ExpiredAt: t0, Source: "msg", Confidence: 0.5},
	} {
		f.Add(appendFact(nil, &fact))
	}
	f.Add([]byte{factVersion})
	id := bytes.Repeat([]byte{7}, 16)
	f.Fuzz(func(t *testing.T, b []byte) {
		fact, err := decodeFact(b, id)
		if err != nil {
			if _, verr := readValidity(b); verr == nil && len(b) < factHead {
				t.Fatalf("readValidity accepted %d bytes", len(b))
			}
			return
		}
		if _, err := readValidity(b); err != nil {
			t.Fatalf("decodeFact accepted what readValidity refuses: %v", err)
		}
		// Times come back in local time; the encoding is of instants.
		if got := appendFact(nil, &fact); !bytes.Equal(got, b) {
			t.Fatalf("re-encoded\n%x\nwant\n%x", got, b)
		}
	})
}

// FuzzDecodeEntity: entity records never panic the decoder.
func FuzzDecodeEntity(f *testing.F) {
	e := Entity{Name: "Alice", Type: "person", Observations: []string{"likes tea"}, Aliases: []string{"Al"}}
	b, _ := encodeEntity(&e)
	f.Add(b)
	f.Add([]byte{entityVersion, '{'})
	f.Fuzz(func(t *testing.T, b []byte) {
		e, err := decodeEntity(b)
		if err != nil {
			return
		}
		again, err := encodeEntity(&e)
		if err != nil {
			t.Fatal(err)
		}
		if e2, err := decodeEntity(again); err != nil || e2.Name != e.Name || len(e2.Observations) != len(e.Observations) {
			t.Fatalf("round trip: %+v, %v", e2, err)
		}
	})
}

// FuzzKeys: index keys and fact records parse back to what built them, and
// arbitrary bytes never panic the parsers.
func FuzzKeys(f *testing.F) {
	f.Add("alice", "knows", "bob", []byte("x\x00y\x00z\x00"))
	f.Add("a b", "p", "ü", []byte{0, 0, 0})
	f.Fuzz(func(t *testing.T, s, p, o string, raw []byte) {
		splitTriple(raw)
		parseFactRef(raw)
		s, p, o = Fold(s), Fold(p), Fold(o)
		if s == "" || p == "" || o == "" || bytes.IndexByte([]byte(s+p+o), 0) >= 0 {
			return
		}
		k := keys{root: []byte("r")}
		var id ulid.ULID
		id[3] = 9
		key := k.triple(tagSPO, s, p, o, &id)
		a, b, c, gotID, ok := splitTriple(key[2:])
		if !ok || string(a) != s || string(b) != p || string(c) != o || !bytes.Equal(gotID, id[:]) {
			t.Fatalf("splitTriple(%q) = %q %q %q %x %v", key, a, b, c, gotID, ok)
		}
		gs, gp, gop, ok := parseFactRef(appendFactRef(nil, s, p, o))
		if !ok || gs != s || gp != p || gop != o {
			t.Fatalf("parseFactRef: %q %q %q %v", gs, gp, gop, ok)
		}
	})
}
