package graph

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/cayleygraph/quad"
	"github.com/cayleygraph/quad/nquads"
	"github.com/oklog/ulid/v2"

	"github.com/engramdb/engram/kv"
)

// maxNQuadsLine bounds one line of input. The longest line Export writes
// is an observation of MaxObservationLength bytes, each escaped to at
// most 6, next to an entity IRI of 3*MaxNameLength bytes: about 26 KiB.
const maxNQuadsLine = 1 << 20

// ParseNQuads reads N-Quads, as [Tx.Export] writes them or from any other
// tool, into a Dump for [Store.Load], writing nothing; see [Tx.Export] for
// how quads map to entities and facts. The Dump lists the entities that
// have quads of their own (Load creates the others from the facts that
// name them) and the facts, each in the order of its first quad. The
// whole input is held in memory; ParseNQuads is safe for concurrent use.
//
// Errors wrap [ErrInvalidNQuads] and name the line; checking the facts and
// entities against the graph's rules (names, times, confidence) is left to
// Load, which names the line of what it refuses in a parsed Dump, as
// [Store.Import] does. ctx is checked every few thousand lines.
func ParseNQuads(ctx context.Context, r io.Reader) (*Dump, error) {
	p, err := parseNQuads(ctx, r)
	if err != nil {
		return nil, err
	}
	d := p.dump
	d.lines = &p.lines
	return &d, nil
}

// Import parses r completely (see [ParseNQuads]) and writes what it holds
// into the graph under root with [Store.Load], which checks every entity
// and fact before writing anything and keeps fact ids and record times.
//
// Input that is not N-Quads, or does not follow the mapping of
// [Tx.Export], is an error wrapping [ErrInvalidNQuads] and writes nothing.
// So is a fact or entity the graph refuses (an empty name, ValidTo not
// after ValidFrom, a confidence outside [0, 1], ...): the error then wraps
// [ErrInvalidNQuads], names the line, and wraps the graph's error too
// ([ErrInvalidFact], [ErrInvalidName] or [ErrInvalidEntity]). Errors found
// while writing (an alias that names another entity, a storage failure)
// are Load's, and a large import may then have written some chunks, as
// Load documents.
func (s *Store) Import(ctx context.Context, db *kv.DB, root []byte, r io.Reader, opts *LoadOptions) (LoadStats, error) {
	p, err := parseNQuads(ctx, r)
	if err != nil {
		return LoadStats{}, err
	}
	if err := s.checkDump(&p.dump); err != nil {
		return LoadStats{}, p.lines.locate(s, &p.dump, err)
	}
	st, err := s.Load(ctx, db, root, &p.dump, opts)
	if err != nil {
		return st, fmt.Errorf("import n-quads: %w", err)
	}
	return st, nil
}

// parsedNQuads is a Dump with the line each entity and fact starts at.
type parsedNQuads struct {
	dump  Dump
	lines dumpLines
}

// dumpLines is the input line of each entity and fact of a parsed Dump.
type dumpLines struct {
	entities []int
	facts    []int
}

// locate turns the error of checkDump for the whole dump d into one naming
// the line of the first entity or fact it refuses, by checking them one at
// a time (checkDump stays the one place that knows the rules). A Dump
// changed after parsing may hold items without a line; those are checked
// last and reported as checkDump reports them.
func (l *dumpLines) locate(s *Store, d *Dump, err error) error {
	for i := range min(len(d.Entities), len(l.entities)) {
		if e := s.checkDump(&Dump{Entities: d.Entities[i : i+1]}); e != nil {
			return lineError("import n-quads", l.entities[i], unwrapIndex(e))
		}
	}
	for i := range min(len(d.Facts), len(l.facts)) {
		if e := s.checkDump(&Dump{Facts: d.Facts[i : i+1]}); e != nil {
			return lineError("import n-quads", l.facts[i], unwrapIndex(e))
		}
	}
	if len(d.Entities) > len(l.entities) || len(d.Facts) > len(l.facts) {
		return err
	}
	return fmt.Errorf("import n-quads: %w: %w", ErrInvalidNQuads, err)
}

// unwrapIndex drops the "fact 0: " that checkDump puts before the error of
// a one-item dump.
func unwrapIndex(err error) error {
	if inner := errors.Unwrap(err); inner != nil {
		return inner
	}
	return err
}

// lineError wraps ErrInvalidNQuads and err, naming op and the line.
func lineError(op string, line int, err error) error {
	return fmt.Errorf("%s: %w: line %d: %w", op, ErrInvalidNQuads, line, err)
}

// The metadata terms of a fact, as bits of factDraft.set.
const (
	metaValidFrom = 1 << iota
	metaValidTo
	metaCreatedAt
	metaExpiredAt
	metaSource
	metaConfidence
)

// factDraft is a fact being collected from quads.
type factDraft struct {
	f        Fact
	line     int // first line that mentions the fact
	mainLine int // line of the main quad; 0 until seen
	set      int // metadata terms seen
}

// entityDraft is an entity being collected from quads.
type entityDraft struct {
	e                          Entity
	line                       int // first line that mentions the entity
	hasLabel, hasType, hasTime bool
}

// nqParser collects drafts from quads in any order.
type nqParser struct {
	entities   map[string]*entityDraft // by the name the subject spells
	entityList []*entityDraft
	facts      map[ulid.ULID]*factDraft // facts with a fact IRI
	factList   []*factDraft
}

// parseNQuads reads r line by line; ctx is checked every few thousand
// lines.
func parseNQuads(ctx context.Context, r io.Reader) (*parsedNQuads, error) {
	p := nqParser{entities: map[string]*entityDraft{}, facts: map[ulid.ULID]*factDraft{}}
	br := bufio.NewReaderSize(r, 64<<10)
	var long []byte
	for line := 1; ; line++ {
		if line%4096 == 0 {
			if err := ctx.Err(); err != nil {
				return nil, fmt.Errorf("parse n-quads: %w", err)
			}
		}
		b, err := br.ReadSlice('\n')
		if errors.Is(err, bufio.ErrBufferFull) {
			long = append(long[:0], b...)
			for errors.Is(err, bufio.ErrBufferFull) && len(long) <= maxNQuadsLine {
				b, err = br.ReadSlice('\n')
				long = append(long, b...)
			}
			if len(long) > maxNQuadsLine {
				return nil, lineError("parse n-quads", line, fmt.Errorf("line longer than %d bytes", maxNQuadsLine))
			}
			b = long
		}
		if err != nil && err != io.EOF {
			return nil, fmt.Errorf("parse n-quads: line %d: %w", line, err)
		}
		if line == 1 {
			b = bytes.TrimPrefix(b, []byte("\uFEFF")) // a byte order mark
		}
		if perr := p.line(b, line); perr != nil {
			return nil, lineError("parse n-quads", line, perr)
		}
		if err == io.EOF {
			break
		}
	}
	return p.finish()
}

// line parses one line of input and adds its quad, if any.
func (p *nqParser) line(b []byte, line int) error {
	b = bytes.TrimRight(b, "\r\n")
	if !utf8.Valid(b) {
		return errors.New("not UTF-8")
	}
	b = bytes.Trim(b, " \t")
	if len(b) == 0 || b[0] == '#' {
		return nil
	}
	q, err := parseQuad(string(b))
	if err != nil {
		return err
	}
	return p.add(q, line)
}

// parseQuad is nquads.Parse, with its panics turned into errors.
func parseQuad(s string) (q quad.Quad, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("cannot parse quad: %v", r)
		}
	}()
	q, err = nquads.Parse(s)
	if err == nil && !q.IsValid() {
		err = errors.New("incomplete quad")
	}
	return q, err
}

// add adds one quad to the drafts.
func (p *nqParser) add(q quad.Quad, line int) error {
	pred, isIRI := q.Predicate.(quad.IRI)
	if !isIRI {
		return p.addFact(q, "", line)
	}
	pi, err := iriText(pred)
	if err != nil {
		return err
	}
	switch {
	case strings.HasPrefix(pi, iriPredicate):
		name, err := unescapeName(pi[len(iriPredicate):])
		if err != nil {
			return fmt.Errorf("predicate <%s>: %w", pi, err)
		}
		return p.addFact(q, name, line)
	case pi == iriLabel:
		if s, ok := q.Subject.(quad.IRI); ok && q.Label == nil {
			if si, err := iriText(s); err == nil && strings.HasPrefix(si, iriEntity) {
				return p.addEntity(q, pi, line)
			}
		}
		return p.addFact(q, "", line)
	case !strings.HasPrefix(pi, iriEngram):
		return p.addFact(q, "", line)
	}
	switch pi {
	case iriValidFrom, iriValidTo, iriExpiredAt, iriSource, iriConfidence:
		return p.addMeta(q, pi, line)
	case iriCreatedAt:
		if _, ok, err := factIRI(q.Subject); err != nil {
			return err
		} else if ok {
			return p.addMeta(q, pi, line)
		}
		return p.addEntity(q, pi, line)
	case iriEntityType, iriAlias, iriObservation:
		return p.addEntity(q, pi, line)
	}
	return fmt.Errorf("unknown engram predicate <%s>", pi)
}

// addFact adds a quad that states a fact; predicate is its name when the
// caller decoded it already.
func (p *nqParser) addFact(q quad.Quad, predicate string, line int) error {
	var f Fact
	var err error
	if f.Subject, err = nodeName(q.Subject); err != nil {
		return fmt.Errorf("subject: %w", err)
	}
	if f.Predicate = predicate; predicate == "" {
		if f.Predicate, err = nodeName(q.Predicate); err != nil {
			return fmt.Errorf("predicate: %w", err)
		}
	}
	if f.Object, err = nodeName(q.Object); err != nil {
		return fmt.Errorf("object: %w", err)
	}
	if q.Label == nil {
		p.factList = append(p.factList, &factDraft{f: f, line: line, mainLine: line})
		return nil
	}
	id, isFact, err := factIRI(q.Label)
	if err != nil {
		return fmt.Errorf("label: %w", err)
	}
	if !isFact {
		if iri, ok := q.Label.(quad.IRI); ok {
			if s, _ := iriText(iri); strings.HasPrefix(s, iriEngram) {
				return fmt.Errorf("label <%s> is in the engram namespace but not a fact IRI", s)
			}
		}
		if f.Source, err = nodeName(q.Label); err != nil {
			return fmt.Errorf("label: %w", err)
		}
		p.factList = append(p.factList, &factDraft{f: f, line: line, mainLine: line})
		return nil
	}
	d := p.fact(id, line)
	if d.mainLine != 0 {
		if d.f.Subject != f.Subject || d.f.Predicate != f.Predicate || d.f.Object != f.Object {
			return fmt.Errorf("fact %s has a second main quad (the first is on line %d)", id, d.mainLine)
		}
		return nil
	}
	d.f.Subject, d.f.Predicate, d.f.Object = f.Subject, f.Predicate, f.Object
	d.mainLine = line
	return nil
}

// fact returns the draft of the fact id, creating it.
func (p *nqParser) fact(id ulid.ULID, line int) *factDraft {
	d := p.facts[id]
	if d == nil {
		d = &factDraft{f: Fact{ID: id.String()}, line: line}
		p.facts[id] = d
		p.factList = append(p.factList, d)
	}
	return d
}

// addMeta adds a metadata quad of a fact: predicate pi, subject a fact
// IRI, in that fact's graph or the default one.
func (p *nqParser) addMeta(q quad.Quad, pi string, line int) error {
	id, ok, err := factIRI(q.Subject)
	if err != nil {
		return fmt.Errorf("subject: %w", err)
	}
	if !ok {
		return fmt.Errorf("the subject of <%s> must be a fact IRI", pi)
	}
	if q.Label != nil {
		lid, ok, err := factIRI(q.Label)
		if err != nil {
			return fmt.Errorf("label: %w", err)
		}
		if !ok || lid != id {
			return fmt.Errorf("<%s> of fact %s must be in the fact's graph or the default graph", pi, id)
		}
	}
	d := p.fact(id, line)
	f := &d.f
	var bit int
	var same bool
	switch pi {
	case iriSource:
		src, ok := literalText(q.Object)
		if !ok {
			return fmt.Errorf("<%s> must be a literal", pi)
		}
		bit, same = metaSource, f.Source == src
		f.Source = src
	case iriConfidence:
		c, err := parseConfidence(q.Object)
		if err != nil {
			return err
		}
		bit, same = metaConfidence, math.Float64bits(f.Confidence) == math.Float64bits(c)
		f.Confidence = c
	default:
		t, err := parseTime(q.Object)
		if err != nil {
			return fmt.Errorf("<%s>: %w", pi, err)
		}
		var dst *time.Time
		switch pi {
		case iriValidFrom:
			bit, dst = metaValidFrom, &f.ValidFrom
		case iriValidTo:
			bit, dst = metaValidTo, &f.ValidTo
		case iriCreatedAt:
			bit, dst = metaCreatedAt, &f.CreatedAt
		default:
			bit, dst = metaExpiredAt, &f.ExpiredAt
		}
		same = dst.Equal(t)
		*dst = t
	}
	if d.set&bit != 0 && !same {
		return fmt.Errorf("fact %s has two different values for <%s>", id, pi)
	}
	d.set |= bit
	return nil
}

// addEntity adds a quad of entity details: predicate pi, in the default
// graph, with a literal object.
func (p *nqParser) addEntity(q quad.Quad, pi string, line int) error {
	if q.Label != nil {
		return fmt.Errorf("<%s> must be in the default graph", pi)
	}
	name, err := nodeName(q.Subject)
	if err != nil {
		return fmt.Errorf("subject: %w", err)
	}
	value, ok := literalText(q.Object)
	if !ok && pi != iriCreatedAt {
		return fmt.Errorf("<%s> must be a literal", pi)
	}
	d := p.entities[name]
	if d == nil {
		d = &entityDraft{e: Entity{Name: name}, line: line}
		p.entities[name] = d
		p.entityList = append(p.entityList, d)
	}
	e := &d.e
	conflict := false
	switch pi {
	case iriLabel:
		if Fold(value) != Fold(name) {
			return fmt.Errorf("label %q does not name the entity %q", value, name)
		}
		conflict = d.hasLabel && e.Name != value
		d.hasLabel, e.Name = true, value
	case iriEntityType:
		conflict = d.hasType && e.Type != value
		d.hasType, e.Type = true, value
	case iriAlias:
		e.Aliases, _ = addUnique(e.Aliases, []string{value})
	case iriObservation:
		e.Observations, _ = addUnique(e.Observations, []string{value})
	case iriCreatedAt:
		t, err := parseTime(q.Object)
		if err != nil {
			return fmt.Errorf("<%s>: %w", pi, err)
		}
		conflict = d.hasTime && !e.CreatedAt.Equal(t)
		d.hasTime, e.CreatedAt = true, t
	}
	if conflict {
		return fmt.Errorf("entity %q has two different values for <%s>", name, pi)
	}
	return nil
}

// finish checks that every fact has its main quad and builds the Dump.
func (p *nqParser) finish() (*parsedNQuads, error) {
	out := &parsedNQuads{
		dump: Dump{
			Entities: make([]Entity, 0, len(p.entityList)),
			Facts:    make([]Fact, 0, len(p.factList)),
		},
		lines: dumpLines{
			entities: make([]int, 0, len(p.entityList)),
			facts:    make([]int, 0, len(p.factList)),
		},
	}
	for _, d := range p.entityList {
		out.dump.Entities = append(out.dump.Entities, d.e)
		out.lines.entities = append(out.lines.entities, d.line)
	}
	for _, d := range p.factList {
		if d.mainLine == 0 {
			return nil, lineError("parse n-quads", d.line, fmt.Errorf("fact %s has metadata but no main quad", d.f.ID))
		}
		out.dump.Facts = append(out.dump.Facts, d.f)
		out.lines.facts = append(out.lines.facts, d.mainLine)
	}
	return out, nil
}

// iriText returns the text of an IRI with its \u and \U escapes decoded
// (nquads leaves them as they are in IRIs).
func iriText(iri quad.IRI) (string, error) {
	s := string(iri)
	if strings.IndexByte(s, '\\') < 0 {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		if s[i] != '\\' {
			b.WriteByte(s[i])
			continue
		}
		n := 0
		if i+1 < len(s) {
			switch s[i+1] {
			case 'u':
				n = 4
			case 'U':
				n = 8
			}
		}
		if n == 0 || i+2+n > len(s) {
			return "", fmt.Errorf("bad escape in IRI <%s>", s)
		}
		r, err := strconv.ParseUint(s[i+2:i+2+n], 16, 32)
		if err != nil || r > utf8.MaxRune || (r >= 0xD800 && r <= 0xDFFF) {
			return "", fmt.Errorf("bad escape in IRI <%s>", s)
		}
		b.WriteRune(rune(r))
		i += 1 + n
	}
	return b.String(), nil
}

// factIRI reports whether v is a fact IRI, and its id.
func factIRI(v quad.Value) (ulid.ULID, bool, error) {
	iri, ok := v.(quad.IRI)
	if !ok {
		return ulid.ULID{}, false, nil
	}
	s, err := iriText(iri)
	if err != nil || !strings.HasPrefix(s, iriFact) {
		return ulid.ULID{}, false, err
	}
	id, err := ulid.ParseStrict(s[len(iriFact):])
	if err != nil {
		return ulid.ULID{}, false, fmt.Errorf("fact IRI <%s>: %w", s, err)
	}
	return id, true, nil
}

// nodeName returns the name a subject, predicate, object or label stands
// for: what an engram entity or predicate IRI spells, the text of any
// other IRI, "_:" and a blank node's label, or a literal's text.
func nodeName(v quad.Value) (string, error) {
	switch v := v.(type) {
	case quad.IRI:
		s, err := iriText(v)
		if err != nil {
			return "", err
		}
		var name string
		switch {
		case strings.HasPrefix(s, iriEntity):
			name, err = unescapeName(s[len(iriEntity):])
		case strings.HasPrefix(s, iriPredicate):
			name, err = unescapeName(s[len(iriPredicate):])
		case strings.HasPrefix(s, iriFact):
			return "", fmt.Errorf("fact IRI <%s> names a fact, not an entity or predicate", s)
		default:
			return s, nil
		}
		if err != nil {
			return "", fmt.Errorf("<%s>: %w", s, err)
		}
		return name, nil
	case quad.BNode:
		return v.String(), nil
	}
	if s, ok := literalText(v); ok {
		return s, nil
	}
	return "", fmt.Errorf("unsupported value %v", v)
}

// literalText returns the text of a literal, and false for anything else.
// nquads converts the typed literals it knows; those give their canonical
// form.
func literalText(v quad.Value) (string, bool) {
	switch v := v.(type) {
	case quad.String:
		return string(v), true
	case quad.LangString:
		return string(v.Value), true
	case quad.TypedString:
		return string(v.Value), true
	case quad.Int:
		return strconv.FormatInt(int64(v), 10), true
	case quad.Float:
		return strconv.FormatFloat(float64(v), 'g', -1, 64), true
	case quad.Bool:
		return strconv.FormatBool(bool(v)), true
	case quad.Time:
		return time.Time(v).Format(time.RFC3339Nano), true
	}
	return "", false
}

// parseTime reads a date: a quad.Time, or a literal whose text is RFC 3339.
func parseTime(v quad.Value) (time.Time, error) {
	if t, ok := v.(quad.Time); ok {
		return time.Time(t), nil
	}
	s, ok := literalText(v)
	if !ok {
		return time.Time{}, fmt.Errorf("%v is not a date literal", v)
	}
	t, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("bad date %q: %w", s, err)
	}
	return t, nil
}

// parseConfidence reads a confidence: a quad.Float or a literal whose text
// is a number.
func parseConfidence(v quad.Value) (float64, error) {
	if f, ok := v.(quad.Float); ok {
		return float64(f), nil
	}
	s, ok := literalText(v)
	if !ok {
		return 0, fmt.Errorf("confidence %v is not a literal", v)
	}
	c, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, fmt.Errorf("bad confidence %q", s)
	}
	return c, nil
}

// unescapeName decodes the percent-encoding of an engram IRI's name: %XX
// with hex digits of either case, every other character as itself. The
// result must be UTF-8.
func unescapeName(s string) (string, error) {
	i := strings.IndexByte(s, '%')
	if i < 0 {
		if !utf8.ValidString(s) {
			return "", errors.New("name is not UTF-8")
		}
		return s, nil
	}
	b := make([]byte, 0, len(s))
	b = append(b, s[:i]...)
	for ; i < len(s); i++ {
		if s[i] != '%' {
			b = append(b, s[i])
			continue
		}
		if i+2 >= len(s) || !isHex(s[i+1]) || !isHex(s[i+2]) {
			return "", fmt.Errorf("bad percent-encoding %q", s[i:min(i+3, len(s))])
		}
		b = append(b, unhex(s[i+1])<<4|unhex(s[i+2]))
		i += 2
	}
	if !utf8.Valid(b) {
		return "", errors.New("percent-decoded name is not UTF-8")
	}
	return string(b), nil
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c <= 'F':
		return c - 'A' + 10
	}
	return c - 'a' + 10
}
