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
	"net/netip"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

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

// NewRedactor returns the offline default [Redactor]: regular expressions
// (linear time) for e-mail addresses, phone numbers, payment card numbers,
// IBANs, IPv4 and IPv6 addresses, US Social Security numbers and UK
// National Insurance numbers, each confirmed by its check (Luhn, mod 97,
// address parsing, the issued ranges) so that dates, version numbers,
// order ids and timestamps are left alone. It finds data by its shape, not
// its meaning: a name or a street address is not found. Safe for concurrent
// use.
func NewRedactor() Redactor { return patternRedactor{} }

type patternRedactor struct{}

// Detectors in order of precedence: where two find overlapping data, the
// earlier wins (an e-mail address holding digits is an address, not a
// phone number).
var detectors = []struct {
	kind  string
	re    *regexp.Regexp
	check func(s string) (value string, ok bool)
}{
	{PIIEmail, regexp.MustCompile(`[A-Za-z0-9][A-Za-z0-9._%+\-]*@[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9\-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}`), checkEmail},
	{PIIIBAN, regexp.MustCompile(`[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?`), checkIBAN},
	{PIICard, regexp.MustCompile(`[0-9]{4}(?:[ \-]?[0-9]{2,6}){2,4}|[0-9]{13,19}`), checkCard},
	{PIISSN, regexp.MustCompile(`[0-9]{3}-[0-9]{2}-[0-9]{4}`), checkSSN},
	{PIININumber, regexp.MustCompile(`[A-Z]{2} ?[0-9]{2} ?[0-9]{2} ?[0-9]{2} ?[A-D]`), checkNINumber},
	{PIIIP, regexp.MustCompile(`(?i)(?:[0-9a-f]{0,4}:){2,7}(?:[0-9a-f]{1,4}|[0-9]{1,3}(?:\.[0-9]{1,3}){3})?`), checkIPv6},
	{PIIIP, regexp.MustCompile(`[0-9]{1,3}(?:\.[0-9]{1,3}){3}`), checkIPv4},
	{PIIPhone, regexp.MustCompile(`\+[0-9][0-9 ().\-]{5,20}[0-9]|\(?[0-9]{2,5}\)?[ .\-][0-9]{2,4}(?:[ .\-][0-9]{2,4}){1,2}`), checkPhone},
}

// Find implements [Redactor].
func (patternRedactor) Find(text string) []PII {
	var out []PII
	var taken []bool // bytes already found, allocated at the first find
	for _, d := range detectors {
		for _, loc := range d.re.FindAllStringIndex(text, -1) {
			start, end := loc[0], loc[1]
			// An address is delimited by its own syntax ("mailto:a@b.io");
			// numbers need space around them.
			if d.kind != PIIEmail && !standsAlone(text, start, end) {
				continue
			}
			value, ok := d.check(text[start:end])
			if !ok {
				continue
			}
			if taken == nil {
				taken = make([]bool, len(text))
			} else if slices.Contains(taken[start:end], true) {
				continue
			}
			for i := start; i < end; i++ {
				taken[i] = true
			}
			out = append(out, PII{Kind: d.kind, Start: start, End: end, Value: value})
		}
	}
	slices.SortFunc(out, func(a, b PII) int { return a.Start - b.Start })
	return out
}

// standsAlone reports whether text[start:end] is not part of a longer
// word, number or dotted/dashed token: "v1.2.3.4", "ORD-1234-5678-9012"
// and "2024-01-15T10:20:30" hold no data.
func standsAlone(text string, start, end int) bool {
	if start > 0 {
		r, _ := utf8.DecodeLastRuneInString(text[:start])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-+/@:", r) {
			return false
		}
		if r == '.' && start > 1 {
			if r2, _ := utf8.DecodeLastRuneInString(text[:start-1]); unicode.IsLetter(r2) || unicode.IsDigit(r2) {
				return false
			}
		}
	}
	if end < len(text) {
		r, _ := utf8.DecodeRuneInString(text[end:])
		if unicode.IsLetter(r) || unicode.IsDigit(r) || strings.ContainsRune("_-+/@:", r) {
			return false
		}
		if r == '.' && end+1 < len(text) {
			if r2, _ := utf8.DecodeRuneInString(text[end+1:]); unicode.IsLetter(r2) || unicode.IsDigit(r2) {
				return false
			}
		}
	}
	return true
}

func digits(s string) string {
	return strings.Map(func(r rune) rune {
		if r >= '0' && r <= '9' {
			return r
		}
		return -1
	}, s)
}

func checkEmail(s string) (string, bool) { return strings.ToLower(s), true }

// checkIBAN: ISO 13616, mod 97 of the rearranged number is 1.
func checkIBAN(s string) (string, bool) {
	v := strings.ReplaceAll(s, " ", "")
	if len(v) < 15 || len(v) > 34 {
		return "", false
	}
	rem := 0
	for _, r := range v[4:] + v[:4] {
		switch {
		case r >= '0' && r <= '9':
			rem = (rem*10 + int(r-'0')) % 97
		case r >= 'A' && r <= 'Z':
			rem = (rem*100 + int(r-'A'+10)) % 97
		default:
			return "", false
		}
	}
	return v, rem == 1
}

// checkCard: 13-19 digits in one of the issuers' ranges (Visa, Mastercard,
// Amex, Discover, JCB, Diners, UnionPay) that pass the Luhn check, so
// that most order ids and timestamps (which pass Luhn one time in ten) do
// not.
func checkCard(s string) (string, bool) {
	d := digits(s)
	n := len(d)
	if n < 13 || n > 19 {
		return "", false
	}
	p2, _ := strconv.Atoi(d[:2])
	p3, _ := strconv.Atoi(d[:3])
	p4, _ := strconv.Atoi(d[:4])
	var issuer bool
	switch {
	case d[0] == '4': // Visa
		issuer = n == 13 || n == 16 || n == 19
	case p2 >= 51 && p2 <= 55, p4 >= 2221 && p4 <= 2720: // Mastercard
		issuer = n == 16
	case p2 == 34 || p2 == 37: // Amex
		issuer = n == 15
	case p4 == 6011, p2 == 65, p3 >= 644 && p3 <= 649, p2 == 35, p2 == 62: // Discover, JCB, UnionPay
		issuer = n >= 16
	case p2 == 36 || p2 == 38 || (p3 >= 300 && p3 <= 305): // Diners
		issuer = n == 14
	}
	return d, issuer && luhn(d)
}

func luhn(d string) bool {
	sum := 0
	for i := range len(d) {
		x := int(d[len(d)-1-i] - '0')
		if i%2 == 1 {
			if x *= 2; x > 9 {
				x -= 9
			}
		}
		sum += x
	}
	return sum%10 == 0
}

// checkSSN: area 000, 666 and 900-999, group 00 and serial 0000 were
// never issued (SSA).
func checkSSN(s string) (string, bool) {
	d := digits(s)
	area, _ := strconv.Atoi(d[:3])
	ok := area != 0 && area != 666 && area < 900 && d[3:5] != "00" && d[5:] != "0000"
	return d, ok
}

// checkNINumber: the prefix letters HMRC never issues (D, F, I, Q, U, V
// anywhere; O second; BG, GB, KN, NK, NT, TN, ZZ).
func checkNINumber(s string) (string, bool) {
	v := strings.ReplaceAll(s, " ", "")
	a, b := v[0], v[1]
	if strings.IndexByte("DFIQUV", a) >= 0 || strings.IndexByte("DFIQUVO", b) >= 0 {
		return "", false
	}
	switch v[:2] {
	case "BG", "GB", "KN", "NK", "NT", "TN", "ZZ":
		return "", false
	}
	return v, true
}

func checkIPv4(s string) (string, bool) {
	a, err := netip.ParseAddr(s) // refuses octets over 255 and leading zeros
	if err != nil || !a.Is4() {
		return "", false
	}
	return a.String(), true
}

func checkIPv6(s string) (string, bool) {
	if strings.Count(s, ":") < 2 {
		return "", false
	}
	a, err := netip.ParseAddr(s)
	if err != nil || !a.Is6() {
		return "", false
	}
	return a.String(), true
}

var nanpShape = regexp.MustCompile(`^(?:\([0-9]{3}\) ?|[0-9]{3}[ .\-])[0-9]{3}[ .\-][0-9]{4}$`)

// checkPhone: 7 to 15 digits (E.164's bounds) after a leading +; without
// one, a North American number in its 3-3-4 groups ("(555) 123-4567",
// "555.123.4567") or a national number with its trunk 0 ("020 7946 0958"),
// so that dates, versions, ranges and grouped ids are left alone.
func checkPhone(s string) (string, bool) {
	d := digits(s)
	switch {
	case s[0] == '+':
		return "+" + d, len(d) >= 7 && len(d) <= 15
	case nanpShape.MatchString(s):
		return d, true
	case strings.HasPrefix(s, "0") || strings.HasPrefix(s, "(0"):
		return d, len(d) >= 9 && len(d) <= 12
	}
	return "", false
}

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
// metadata values and tool-call arguments replaced by placeholders
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
// by placeholders, numbered for scope's session when it names one (so that
// a memory drawn from a conversation uses the conversation's placeholders),
// else for the memory's partition.
func (s *Store) redactMemory(ctx context.Context, scope Scope, m *Memory) error {
	rd := s.newRedaction()
	if rd == nil {
		return nil
	}
	rd.scan(m.Text)
	for _, v := range m.Metadata {
		rd.scan(v)
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
	m.Text = rd.apply(m.Text)
	if len(m.Metadata) > 0 {
		md := make(map[string]string, len(m.Metadata))
		for k, v := range m.Metadata {
			md[k] = rd.apply(v)
		}
		m.Metadata = md
	}
	return nil
}
