package memory

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/binary"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/engramdb/engram/engine"
)

// Redactor finds personal data in text. A [Store] opened with
// Options.Redactor replaces what it finds with typed placeholders
// ("[EMAIL_1]") in message and memory text before anything is written,
// embedded or extracted; see the Privacy section of the package doc.
// Implementations must be safe for concurrent use.
type Redactor interface {
	// Find returns the personal data in text, ordered by Start and not
	// overlapping. text may hold invalid UTF-8.
	Find(text string) []PII
}

// PII is one piece of personal data a [Redactor] found in a text.
type PII struct {
	// Kind is the type of data in upper case, the placeholder's name:
	// "EMAIL" becomes "[EMAIL_1]". It holds only A-Z, 0-9 and _.
	Kind string
	// Start and End are the byte offsets of the data in the text.
	Start, End int
	// Value is the canonical form that decides which occurrences are the
	// same data, such as a phone number's digits; empty means the text.
	Value string
}

// The kinds of data [NewRedactor] finds.
const (
	PIIEmail    = "EMAIL"     // e-mail addresses
	PIIPhone    = "PHONE"     // phone numbers, international or in national groupings
	PIICard     = "CARD"      // payment card numbers, Luhn-checked, of a known issuer range
	PIIIBAN     = "IBAN"      // IBANs, mod-97-checked
	PIIIP       = "IP"        // IPv4 and IPv6 addresses
	PIISSN      = "SSN"       // US Social Security numbers, in the 3-2-4 form, without the never-issued ranges
	PIININumber = "NI_NUMBER" // UK National Insurance numbers
)

// piiKey identifies one piece of data within a call.
type piiKey struct{ kind, value string }

// redaction is the data found in the texts of one call, with the
// placeholder numbers given to it.
type redaction struct {
	r     Redactor
	found map[piiKey]int
	order []piiKey // found's keys in the order first seen: new data is numbered in it
}

func (s *Store) newRedaction() *redaction {
	if s.opts.Redactor == nil {
		return nil
	}
	return &redaction{r: s.opts.Redactor, found: map[piiKey]int{}}
}

func (p PII) key(text string) piiKey {
	kind := p.Kind
	if !validKind(kind) {
		kind = "PII"
	}
	v := p.Value
	if v == "" {
		v = text[p.Start:p.End]
	}
	return piiKey{kind, v}
}

func validKind(k string) bool {
	if k == "" || len(k) > 32 {
		return false
	}
	for _, r := range k {
		if (r < 'A' || r > 'Z') && (r < '0' || r > '9') && r != '_' {
			return false
		}
	}
	return true
}

// finds returns the redactor's finds in text that are well formed: in
// bounds, in order, not overlapping.
func (rd *redaction) finds(text string) []PII {
	var out []PII
	last := 0
	for _, p := range rd.r.Find(text) {
		if p.Start < last || p.End <= p.Start || p.End > len(text) {
			continue
		}
		out = append(out, p)
		last = p.End
	}
	return out
}

func (rd *redaction) scan(text string) {
	for _, p := range rd.finds(text) {
		k := p.key(text)
		if _, seen := rd.found[k]; !seen {
			rd.found[k] = 0
			rd.order = append(rd.order, k)
		}
	}
}

// apply returns text with each find replaced by its placeholder.
func (rd *redaction) apply(text string) string {
	ps := rd.finds(text)
	if len(ps) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, p := range ps {
		k := p.key(text)
		b.WriteString(text[last:p.Start])
		b.WriteByte('[')
		b.WriteString(k.kind)
		if n := rd.found[k]; n > 0 {
			b.WriteByte('_')
			b.WriteString(strconv.Itoa(n))
		}
		b.WriteByte(']')
		last = p.End
	}
	b.WriteString(text[last:])
	return b.String()
}

// scanJSON and applyJSON redact the strings (keys and values) of a JSON
// document, such as tool-call arguments; numbers are left alone, since a
// placeholder in their place would not be JSON. A document that does not
// parse is left as it is.
func (rd *redaction) scanJSON(raw json.RawMessage) {
	if v, ok := decodeJSON(raw); ok {
		walkJSON(v, func(s string) string { rd.scan(s); return s })
	}
}

func (rd *redaction) applyJSON(raw json.RawMessage) json.RawMessage {
	v, ok := decodeJSON(raw)
	if !ok {
		return raw
	}
	changed := false
	v = walkJSON(v, func(s string) string {
		t := rd.apply(s)
		changed = changed || t != s
		return t
	})
	if !changed {
		return raw
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return raw
	}
	return json.RawMessage(bytes.TrimRight(b.Bytes(), "\n"))
}

func decodeJSON(raw json.RawMessage) (any, bool) {
	if len(raw) == 0 {
		return nil, false
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, false
	}
	return v, true
}

func walkJSON(v any, f func(string) string) any {
	switch x := v.(type) {
	case string:
		return f(x)
	case []any:
		for i := range x {
			x[i] = walkJSON(x[i], f)
		}
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, e := range x {
			out[f(k)] = walkJSON(e, f)
		}
		return out
	}
	return v
}

// number gives every piece of data found a placeholder number, the same
// for the same data under prefix (a session, or a partition for memories
// written without one), in one transaction of its own: the numbers stay
// consistent however calls interleave, and a call that fails later only
// leaves a number unused. What is stored is a random salt, keyed hashes
// of the data and counters, never the data; all of it lives under prefix,
// so erasing the session (or user) erases it, and each entry lives ttl
// (zero: for ever) from its last use, no less than the messages using it.
func (s *Store) number(ctx context.Context, prefix []byte, ttl time.Duration, rd *redaction) error {
	if len(rd.found) == 0 {
		return nil
	}
	keys := rd.order
	err := s.db.Update(ctx, func(tx *engine.Tx) error {
		saltKey := redactSaltKey(prefix)
		salt, err := tx.Get(saltKey)
		switch {
		case errors.Is(err, engine.ErrNotFound):
			salt = make([]byte, 32)
			if _, err := rand.Read(salt); err != nil {
				return err
			}
		case err != nil:
			return err
		}
		if err := tx.SetTTL(saltKey, salt, ttl); err != nil {
			return err
		}
		counters := map[string]uint64{}
		for _, k := range keys {
			c, ok := counters[k.kind]
			if !ok {
				switch b, err := tx.Get(redactCounterKey(prefix, k.kind)); {
				case errors.Is(err, engine.ErrNotFound):
				case err != nil:
					return err
				default:
					c, _ = binary.Uvarint(b)
				}
			}
			mac := hmac.New(sha256.New, salt)
			mac.Write([]byte(k.kind))
			mac.Write([]byte{0})
			mac.Write([]byte(k.value))
			valueKey := redactValueKey(prefix, k.kind, mac.Sum(nil)[:16])
			var n uint64
			switch b, err := tx.Get(valueKey); {
			case errors.Is(err, engine.ErrNotFound):
			case err != nil:
				return err
			default:
				n, _ = binary.Uvarint(b)
			}
			if n == 0 {
				c++
				n = c
			}
			counters[k.kind] = c
			rd.found[k] = int(n)
			if err := tx.SetTTL(valueKey, binary.AppendUvarint(nil, n), ttl); err != nil {
				return err
			}
		}
		for kind, c := range counters {
			if err := tx.SetTTL(redactCounterKey(prefix, kind), binary.AppendUvarint(nil, c), ttl); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("memory: redact: %w", err)
	}
	return nil
}

// redactMessages returns msgs with the personal data in their content,
// speaker's name, metadata values and tool-call arguments replaced by placeholders
// numbered for the session under prefix; msgs itself is not modified. With
// no Redactor it returns msgs.
func (s *Store) redactMessages(ctx context.Context, prefix []byte, msgs []Message) ([]Message, error) {
	rd := s.newRedaction()
	if rd == nil {
		return msgs, nil
	}
	for i := range msgs {
		m := &msgs[i]
		rd.scan(m.Content)
		rd.scan(m.Name)
		for _, v := range m.Metadata {
			rd.scan(v)
		}
		for _, c := range m.ToolCalls {
			rd.scanJSON(c.Arguments)
		}
	}
	if len(rd.found) == 0 {
		return msgs, nil
	}
	if err := s.number(ctx, prefix, s.opts.SessionTTL, rd); err != nil {
		return nil, err
	}
	out := slices.Clone(msgs)
	for i := range out {
		m := &out[i]
		m.Content = rd.apply(m.Content)
		m.Name = rd.apply(m.Name)
		if len(m.Metadata) > 0 {
			md := make(map[string]string, len(m.Metadata))
			for k, v := range m.Metadata {
				md[k] = rd.apply(v)
			}
			m.Metadata = md
		}
		if len(m.ToolCalls) > 0 {
			m.ToolCalls = slices.Clone(m.ToolCalls)
			for j := range m.ToolCalls {
				m.ToolCalls[j].Arguments = rd.applyJSON(m.ToolCalls[j].Arguments)
			}
		}
	}
	return out, nil
}

// redactMemory replaces the personal data in m's text and metadata values
// by placeholders, numbered as [Store.redactIn] numbers them.
func (s *Store) redactMemory(ctx context.Context, scope Scope, m *Memory) error {
	if s.opts.Redactor == nil {
		return nil
	}
	keys := slices.Collect(maps.Keys(m.Metadata))
	values := make([]string, len(keys))
	texts := []*string{&m.Text}
	for i, k := range keys {
		values[i] = m.Metadata[k]
		texts = append(texts, &values[i])
	}
	if err := s.redactIn(ctx, scope, texts...); err != nil {
		return err
	}
	if len(keys) > 0 {
		md := make(map[string]string, len(keys)) // the caller's map is not modified
		for i, k := range keys {
			md[k] = values[i]
		}
		m.Metadata = md
	}
	return nil
}

// redactFact replaces the personal data in a fact's subject and object
// ("Alice has_phone +44 20 7946 0958" becomes "Alice has_phone
// [PHONE_1]"); the predicate names a relation and stays. Facts belong to
// the user, not a session, so they are numbered for the user: the same
// fact told in two sessions is one fact.
func (s *Store) redactFact(ctx context.Context, scope Scope, f *Fact) error {
	scope.Session = ""
	return s.redactIn(ctx, scope, &f.Subject, &f.Object)
}

// Redact returns texts with the personal data the store's Redactor finds
// replaced by placeholders, numbered as a memory written with scope would
// number them: for scope's session when it names one, else for its user
// (or the tenant's shared partition), so the same data gets the same
// placeholder as in the memories and facts stored there. Use it, with a
// scope without a session (the graph belongs to the user), for what
// reaches the graph through [Store.UpdateGraph] (entity names, aliases,
// observations). With no Redactor it returns texts as given; texts itself
// is not modified.
func (s *Store) Redact(ctx context.Context, scope Scope, texts ...string) ([]string, error) {
	out := slices.Clone(texts)
	ptrs := make([]*string, len(out))
	for i := range out {
		ptrs[i] = &out[i]
	}
	if err := s.redactIn(ctx, scope, ptrs...); err != nil {
		return nil, err
	}
	return out, nil
}

// redactIn replaces the personal data in the strings texts point to by
// placeholders, numbered for scope's session when it names one (so that a
// memory drawn from a conversation uses the conversation's placeholders),
// else for scope's partition.
func (s *Store) redactIn(ctx context.Context, scope Scope, texts ...*string) error {
	rd := s.newRedaction()
	if rd == nil {
		return nil
	}
	for _, p := range texts {
		rd.scan(*p)
	}
	if len(rd.found) == 0 {
		return nil
	}
	prefix, ttl := []byte(nil), time.Duration(0)
	if scope.Session != "" && scope.Validate(engine.LevelSession) == nil {
		prefix, ttl = scope.Prefix(engine.LevelSession), s.opts.SessionTTL
	} else {
		scope.Session = ""
		p, err := scope.PartitionPrefix()
		if err != nil {
			return err
		}
		prefix = p
	}
	if err := s.number(ctx, prefix, ttl, rd); err != nil {
		return err
	}
	for _, p := range texts {
		*p = rd.apply(*p)
	}
	return nil
}
