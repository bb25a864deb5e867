package graph

import (
	"bytes"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/oklog/ulid/v2"
)

// FuzzDecodeFact: decoding arbitrary bytes never panics, what decodes
// encodes back to the same bytes, and decoding with the strings in a
// larger shared string (as Traverse does) gives the same fact or error.
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
		if len(b) >= factHead && b[0] == factVersion {
			shared := "<" + ulid.ULID(id).String() + string(b[factHead:]) + ">"
			var g Fact
			gerr := decodeFactInto(&g, b, shared[1:27], shared[27:len(shared)-1])
			// Compared encoded: a NaN Confidence is not equal to itself.
			if (gerr == nil) != (err == nil) || g.ID != fact.ID || !bytes.Equal(appendFact(nil, &g), appendFact(nil, &fact)) {
				t.Fatalf("decodeFactInto = %+v, %v; decodeFact = %+v, %v", g, gerr, fact, err)
			}
		}
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

// FuzzDecodeEntity: entity records decode to an entity or an error
// wrapping ErrCorrupt, never a panic, and a decoded entity round-trips:
// encoding it and decoding again gives an equal entity and the same bytes.
func FuzzDecodeEntity(f *testing.F) {
	e := Entity{Name: "Alice", Type: "person", Observations: []string{"likes tea"}, Aliases: []string{"Al"}}
	b, _ := encodeEntity(&e)
	f.Add(b)
	e = Entity{Name: "Zoë", Type: "", Observations: []string{}, CreatedAt: time.Date(2026, 1, 2, 3, 4, 5, 6, time.FixedZone("", -7200))}
	b, _ = encodeEntity(&e)
	f.Add(b)
	f.Add([]byte{entityVersion, '{'})
	f.Add([]byte("\x01{\"name\":\"a\",\"observations\":null,\"aliases\":[\"\"]}"))
	f.Fuzz(func(t *testing.T, b []byte) {
		// An entity with every field set, its strings from the input,
		// decodes from its encoding to itself.
		s := strings.ToValidUTF8(string(b), "?")
		v := Entity{Name: s, Type: s, Observations: []string{s, "o"}, Aliases: []string{s}, CreatedAt: time.Unix(int64(len(b)), 7).UTC()}
		if enc, err := encodeEntity(&v); err != nil {
			t.Fatalf("encode %+v: %v", v, err)
		} else if back, err := decodeEntity(enc); err != nil || back.Name != v.Name || back.Type != v.Type ||
			!slices.Equal(back.Observations, v.Observations) || !slices.Equal(back.Aliases, v.Aliases) || !back.CreatedAt.Equal(v.CreatedAt) {
			t.Fatalf("%+v encodes and decodes to %+v, %v", v, back, err)
		}

		e, err := decodeEntity(b)
		if err != nil {
			if !errors.Is(err, ErrCorrupt) {
				t.Fatalf("error %v does not wrap ErrCorrupt", err)
			}
			return
		}
		enc, err := encodeEntity(&e)
		if err != nil {
			t.Fatalf("encode a decoded entity %+v: %v", e, err)
		}
		e2, err := decodeEntity(enc)
		if err != nil {
			t.Fatalf("decode of re-encoded %+v: %v", e, err)
		}
		if e2.Name != e.Name || e2.Type != e.Type || !slices.Equal(e2.Observations, e.Observations) ||
			!slices.Equal(e2.Aliases, e.Aliases) || !e2.CreatedAt.Equal(e.CreatedAt) {
			t.Fatalf("round trip changed the entity:\n%+v\n%+v", e, e2)
		}
		if enc2, err := encodeEntity(&e2); err != nil || !bytes.Equal(enc2, enc) {
			t.Fatalf("encode is not stable (%v):\n%s\n%s", err, enc, enc2)
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
