package graph

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/kv"
)

// Export writes the whole graph of tx as N-Quads to w: every entity, and
// every fact of every time (closed facts and histories included), so that
// [Store.Import] of the output into an empty graph restores it with the
// same fact ids and record times. Export reads one record at a time from
// the transaction's snapshot and keeps nothing else in memory; it writes
// entities in order of their folded names, then facts in SPO index order
// (subject, predicate, object, id), so an unchanged graph always exports
// to the same bytes.
//
// # Mapping
//
// IRIs. An entity is <urn:engram:entity:NAME> and a predicate
// <urn:engram:predicate:NAME>, where NAME is the display name with every
// byte outside A-Z a-z 0-9 - . _ ~ percent-encoded as %XX (upper-case
// hex), so the IRI spells the name exactly, case and white space
// included. A fact is <urn:engram:fact:ID>, ID its ULID.
//
// Literals are written in double quotes with \\ \" \n \r \t \b \f escaped,
// other control characters as \u00XX, and everything else as UTF-8. Times
// are typed literals "…"^^<http://www.w3.org/2001/XMLSchema#dateTime> in
// RFC 3339, UTC, with nanoseconds (trailing zeros dropped, as
// [time.RFC3339Nano] does); zero times are left out.
//
// Entities are in the default graph (no label): the display name, the type
// (left out when empty), one quad per alias and per observation in stored
// order, and the creation time:
//
//	<urn:engram:entity:Ada%20Lovelace> <http://www.w3.org/2000/01/rdf-schema#label> "Ada Lovelace" .
//	<urn:engram:entity:Ada%20Lovelace> <urn:engram:entityType> "Person" .
//	<urn:engram:entity:Ada%20Lovelace> <urn:engram:alias> "Countess of Lovelace" .
//	<urn:engram:entity:Ada%20Lovelace> <urn:engram:observation> "wrote \"Note G\"" .
//	<urn:engram:entity:Ada%20Lovelace> <urn:engram:createdAt> "2026-01-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> .
//
// A fact is its triple in a graph of its own, labelled with the fact IRI
// (the main quad), followed by its metadata in the same graph, with the
// fact IRI as subject: validFrom, validTo, createdAt and expiredAt as
// times (zero ones left out), source as a plain literal (left out when
// empty) and confidence as an xsd:double ("0.9", "1", "1e-05": the
// shortest decimal that parses back to the same float64):
//
//	<urn:engram:entity:Ada%20Lovelace> <urn:engram:predicate:works_with> <urn:engram:entity:Charles%20Babbage> <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:validFrom> "1842-10-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:validTo> "1843-09-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:createdAt> "2026-01-01T00:00:00.000000001Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:expiredAt> "2026-02-01T00:00:00Z"^^<http://www.w3.org/2001/XMLSchema#dateTime> <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:source> "Sketch of the Analytical Engine" <urn:engram:fact:01JH…> .
//	<urn:engram:fact:01JH…> <urn:engram:confidence> "0.9"^^<http://www.w3.org/2001/XMLSchema#double> <urn:engram:fact:01JH…> .
//
// # Reading
//
// [ParseNQuads] and [Store.Import] read what Export writes and any other
// N-Quads, in any order: metadata may come before or after its main quad,
// entity quads anywhere. Each quad is read by its predicate:
//
//   - <urn:engram:predicate:NAME>, or any IRI or literal outside the
//     urn:engram: vocabulary (other than rdfs:label of an entity IRI):
//     a fact with that predicate. With a fact IRI label it is that fact's
//     main quad; with no label it is a new fact; with any other label it
//     is a new fact whose Source is the label's text. A new fact's
//     ValidFrom is left zero, so it holds from the time of the import.
//   - validFrom, validTo, expiredAt, source, confidence, and createdAt of
//     a fact IRI: metadata of that fact, in its graph or the default one.
//   - entityType, alias, observation, and createdAt of anything else:
//     details of the entity the subject names, in the default graph.
//   - rdfs:label of an entity IRI, in the default graph: the entity's
//     display name; it must fold (see [Fold]) to the name the IRI spells.
//
// A subject, predicate or object names what its engram entity or
// predicate IRI spells; any other IRI names its own text (<alice> is
// "alice"), a blank node its label with the "_:" prefix ("_:b1"), a
// literal its lexical form (a typed literal that nquads converts, such as
// an xsd:integer, its canonical form). Repeating a quad, or a metadata
// value, changes nothing. Dates may be any literal whose text is RFC 3339
// and confidences any literal whose text is a number. The Dump carries
// entity creation times, but [Store.Load] gives the entities it creates
// the time of loading.
//
// The input is invalid ([ErrInvalidNQuads], naming the line) when a line
// is not N-Quads or not UTF-8; a fact id has metadata but no main quad, or
// two different main quads, or two different values for one metadata
// term; a date or confidence does not parse; an engram IRI has a bad
// percent-encoding or a fact IRI a bad ULID; a fact IRI stands where an
// entity or predicate belongs; a urn:engram: predicate is not in the
// vocabulary; or a quad sits in a graph its predicate does not allow.
func (tx *Tx) Export(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	var buf []byte
	if err := tx.exportEntities(bw, &buf); err != nil {
		return fmt.Errorf("export n-quads: %w", err)
	}
	if err := tx.exportFacts(bw, &buf); err != nil {
		return fmt.Errorf("export n-quads: %w", err)
	}
	if err := bw.Flush(); err != nil {
		return fmt.Errorf("export n-quads: %w", err)
	}
	return nil
}

// exportEntities writes every entity record; *buf is reused between
// records.
func (tx *Tx) exportEntities(w *bufio.Writer, buf *[]byte) error {
	it := tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagEntity), KeysOnly: true})
	defer it.Close()
	var val, iri []byte
	var err error
	for it.Seek(nil); it.Valid(); it.Next() {
		if val, err = it.Value(val[:0]); err != nil {
			return err
		}
		e, err := decodeEntity(val)
		if err != nil {
			return err
		}
		iri = appendIRI(iri[:0], iriEntity, e.Name)
		b := (*buf)[:0]
		literal := func(predicate, value string) {
			if err == nil {
				b, err = appendLiteral(appendHead(b, iri, predicate), value)
				b = appendEnd(b, nil)
			}
		}
		literal(iriLabel, e.Name)
		if e.Type != "" {
			literal(iriEntityType, e.Type)
		}
		for _, a := range e.Aliases {
			literal(iriAlias, a)
		}
		for _, o := range e.Observations {
			literal(iriObservation, o)
		}
		if err != nil {
			return err
		}
		if !e.CreatedAt.IsZero() {
			b = appendEnd(appendTime(appendHead(b, iri, iriCreatedAt), e.CreatedAt), nil)
		}
		*buf = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// exportFacts writes every fact of the SPO index; *buf is reused between
// facts.
func (tx *Tx) exportFacts(w *bufio.Writer, buf *[]byte) error {
	it := tx.t.NewIterator(kv.IterOptions{Prefix: tx.k.start(tagSPO), KeysOnly: true})
	defer it.Close()
	root := len(tx.k.root) + 1
	var val, fact []byte
	var err error
	for it.Seek(nil); it.Valid(); it.Next() {
		_, _, _, id, ok := splitTriple(it.Key()[root:])
		if !ok {
			return fmt.Errorf("%w: index key", ErrCorrupt)
		}
		if val, err = it.Value(val[:0]); err != nil {
			return err
		}
		f, err := decodeFact(val, id)
		if err != nil {
			return err
		}
		fact = append(append(append(fact[:0], '<'), iriFact...), f.ID...)
		fact = append(fact, '>')
		b := appendIRI((*buf)[:0], iriEntity, f.Subject)
		b = appendIRI(append(b, ' '), iriPredicate, f.Predicate)
		b = appendIRI(append(b, ' '), iriEntity, f.Object)
		b = appendEnd(b, fact)
		for _, t := range [...]struct {
			predicate string
			t         time.Time
		}{{iriValidFrom, f.ValidFrom}, {iriValidTo, f.ValidTo}, {iriCreatedAt, f.CreatedAt}, {iriExpiredAt, f.ExpiredAt}} {
			if !t.t.IsZero() {
				b = appendEnd(appendTime(appendHead(b, fact, t.predicate), t.t), fact)
			}
		}
		if f.Source != "" {
			if b, err = appendLiteral(appendHead(b, fact, iriSource), f.Source); err != nil {
				return err
			}
			b = appendEnd(b, fact)
		}
		b = append(appendHead(b, fact, iriConfidence), '"')
		b = strconv.AppendFloat(b, f.Confidence, 'g', -1, 64)
		b = appendEnd(append(b, `"^^<`+xsdDouble+`>`...), fact)
		*buf = b
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

// appendIRI appends <prefix + name percent-encoded>.
func appendIRI(b []byte, prefix, name string) []byte {
	b = append(append(b, '<'), prefix...)
	b = appendEscapedName(b, name)
	return append(b, '>')
}

// appendHead appends the subject, as written, and <predicate> of a quad.
func appendHead(b, subject []byte, predicate string) []byte {
	b = append(append(append(b, subject...), " <"...), predicate...)
	return append(b, "> "...)
}

// appendEnd ends a quad: " label .\n", or " .\n" for a nil label.
func appendEnd(b, label []byte) []byte {
	if label != nil {
		b = append(append(b, ' '), label...)
	}
	return append(b, " .\n"...)
}

// appendTime appends t as an xsd:dateTime literal, in UTC with nanoseconds
// (quad.Time would drop them).
func appendTime(b []byte, t time.Time) []byte {
	b = append(b, '"')
	b = t.UTC().AppendFormat(b, time.RFC3339Nano)
	return append(b, `"^^<`+xsdDateTime+`>`...)
}

// appendLiteral appends s as a quoted N-Quads literal. Stored strings are
// UTF-8 (names, types, observations and sources are checked on the way
// in), so a string that is not is a corrupt record.
func appendLiteral(b []byte, s string) ([]byte, error) {
	const hex = "0123456789ABCDEF"
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		switch c := s[i]; c {
		case '"':
			b = append(b, `\"`...)
		case '\\':
			b = append(b, `\\`...)
		case '\n':
			b = append(b, `\n`...)
		case '\r':
			b = append(b, `\r`...)
		case '\t':
			b = append(b, `\t`...)
		case '\b':
			b = append(b, `\b`...)
		case '\f':
			b = append(b, `\f`...)
		default:
			switch {
			case c < 0x20 || c == 0x7f:
				b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&15])
			case c < utf8.RuneSelf:
				b = append(b, c)
			default:
				r, n := utf8.DecodeRuneInString(s[i:])
				if r == utf8.RuneError && n == 1 {
					return b, fmt.Errorf("%w: string is not UTF-8", ErrCorrupt)
				}
				b = append(b, s[i:i+n]...)
				i += n - 1
			}
		}
	}
	return append(b, '"'), nil
}

// appendEscapedName percent-encodes every byte of name outside the URI
// unreserved set A-Z a-z 0-9 - . _ ~.
func appendEscapedName(b []byte, name string) []byte {
	const hex = "0123456789ABCDEF"
	for i := 0; i < len(name); i++ {
		c := name[i]
		if unreserved(c) {
			b = append(b, c)
		} else {
			b = append(b, '%', hex[c>>4], hex[c&15])
		}
	}
	return b
}

func unreserved(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
