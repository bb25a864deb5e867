package memory

import "testing"

// redactFind is one expected find: its kind and the original text it
// covers.
type redactFind struct{ kind, text string }

// checkFinds runs the default Redactor over each case and compares its
// finds (kind and the original text of each span) with the expected ones.
func checkFinds(t *testing.T, cases []redactCase) {
	t.Helper()
	r := NewRedactor()
	for _, c := range cases {
		var got []redactFind
		for _, p := range r.Find(c.text) {
			got = append(got, redactFind{p.Kind, c.text[p.Start:p.End]})
		}
		if !sameFinds(got, c.want) {
			t.Errorf("%q: found %q, want %q", c.text, got, c.want)
		}
	}
}

type redactCase struct {
	text string
	want []redactFind
}

func sameFinds(a, b []redactFind) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// TestRedactorShapes is issue 26's list of shapes people type that the
// redactor stored verbatim: Unicode spaces and dashes, full-width digits,
// lower-case IBANs, 00-prefixed and bare ten-digit phone numbers, SSNs
// without dashes, IPv4-mapped IPv6 and CIDR blocks, internationalised and
// quoted e-mail addresses, an address followed by a port or inside a URL,
// tel: links and numbers side by side. Each find covers the original bytes.
func TestRedactorShapes(t *testing.T) {
	checkFinds(t, []redactCase{
		// Unicode spaces, dashes and zero-width characters inside a number.
		{"card 4111\u00a01111\u00a01111\u00a01111 exp 12/27", []redactFind{{PIICard, "4111\u00a01111\u00a01111\u00a01111"}}},
		{"4111\u202f1111\u202f1111\u202f1111", []redactFind{{PIICard, "4111\u202f1111\u202f1111\u202f1111"}}},
		{"card 4111\u20131111\u20131111\u20131111.", []redactFind{{PIICard, "4111\u20131111\u20131111\u20131111"}}},
		{"SSN 219\u201109\u20119999", []redactFind{{PIISSN, "219\u201109\u20119999"}}},
		{"ali\u200bce@example.com", []redactFind{{PIIEmail, "ali\u200bce@example.com"}}},
		// Full-width digits and letters.
		{"カード４１１１ １１１１ １１１１ １１１１です", []redactFind{{PIICard, "４１１１ １１１１ １１１１ １１１１"}}},
		{"カード４１１１\u3000１１１１\u3000１１１１\u3000１１１１", []redactFind{{PIICard, "４１１１\u3000１１１１\u3000１１１１\u3000１１１１"}}},
		{"ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ", []redactFind{{PIIEmail, "ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ"}}},
		{"電話 ０２０ ７９４６ ０９５８", []redactFind{{PIIPhone, "０２０ ７９４６ ０９５８"}}},
		// IBANs in lower case.
		{"iban gb82west12345698765432", []redactFind{{PIIIBAN, "gb82west12345698765432"}}},
		{"gb82 west 1234 5698 7654 32", []redactFind{{PIIIBAN, "gb82 west 1234 5698 7654 32"}}},
		// Phone numbers.
		{"call 0044 20 7946 0000", []redactFind{{PIIPhone, "0044 20 7946 0000"}}},
		{"call 4155550100 now", []redactFind{{PIIPhone, "4155550100"}}},
		{"toll-free 1-800-555-0175, or 1 (415) 555-0100", []redactFind{{PIIPhone, "1-800-555-0175"}, {PIIPhone, "1 (415) 555-0100"}}},
		{"tel:+14155550100", []redactFind{{PIIPhone, "+14155550100"}}},
		{`<a href="tel:+44-20-7946-0958">call</a>`, []redactFind{{PIIPhone, "+44-20-7946-0958"}}},
		{"+44 20 7946 0958 +44 20 7946 0959", []redactFind{{PIIPhone, "+44 20 7946 0958"}, {PIIPhone, "+44 20 7946 0959"}}},
		{"415-555-0100 415-555-0199", []redactFind{{PIIPhone, "415-555-0100"}, {PIIPhone, "415-555-0199"}}},
		{"020 7946 0958 020 7946 0959", []redactFind{{PIIPhone, "020 7946 0958"}, {PIIPhone, "020 7946 0959"}}},
		// SSNs without dashes.
		{"SSN 219099999", []redactFind{{PIISSN, "219099999"}}},
		{"my social security number is 219099999.", []redactFind{{PIISSN, "219099999"}}},
		{"SSN: 219 09 9999", []redactFind{{PIISSN, "219 09 9999"}}},
		// IP addresses.
		{"::ffff:192.0.2.128", []redactFind{{PIIIP, "::ffff:192.0.2.128"}}},
		{"route 10.1.2.0/24 via", []redactFind{{PIIIP, "10.1.2.0"}}},
		{"from 192.168.1.10:8080", []redactFind{{PIIIP, "192.168.1.10"}}},
		{"open http://192.168.1.10/admin now", []redactFind{{PIIIP, "192.168.1.10"}}},
		{"http://[2001:db8::1]:8080/", []redactFind{{PIIIP, "2001:db8::1"}}},
		{"2001:db8::/32", []redactFind{{PIIIP, "2001:db8::"}}},
		{"010.001.002.003", []redactFind{{PIIIP, "010.001.002.003"}}},
		// E-mail addresses.
		{"jörg@bücher.de", []redactFind{{PIIEmail, "jörg@bücher.de"}}},
		{"schreib an Jörg.Müller@Bücher.de.", []redactFind{{PIIEmail, "Jörg.Müller@Bücher.de"}}},
		{"пишите иван@пример.рф", []redactFind{{PIIEmail, "иван@пример.рф"}}},
		{`to "john doe"@example.com`, []redactFind{{PIIEmail, `"john doe"@example.com`}}},
		{`"john..doe"@example.org, ok`, []redactFind{{PIIEmail, `"john..doe"@example.org`}}},
	})
}

// TestRedactorLookalikes is the must-not-match table: text shaped like
// personal data that is not. Every case a change to the detectors could
// catch by mistake belongs here.
func TestRedactorLookalikes(t *testing.T) {
	var cases []redactCase
	for _, s := range redactLookalikes {
		cases = append(cases, redactCase{s, nil})
	}
	checkFinds(t, cases)
}

var redactLookalikes = []string{
	// Version numbers.
	"version 1.2.3.4", "v1.2.3.4", "release 10.0.19041.1", "Go 1.25.0", "build 4.19.0-25-amd64",
	"1.2.3.4-beta", "Chrome/120.0.6099.109", "upgrade to version 2.0.0.1 today", "ver. 3.1.4.1",
	// :: in code.
	"f :: Int -> Int", "std::vector<int> v;", "a::b::c", "Foo::Bar", "x :: Maybe a", "use std::io::{self, Read};",
	"::", "map :: (a -> b) -> [a] -> [b]", "ab::cd",
	// Dates and times.
	"2024-01-15", "15/01/2024", "01.02.2024", "2024 01 15", "20240115", "2024-01-15T10:20:30Z",
	"15.01.2024 10:30", "10:30", "10:30:45", "at 9:05 pm", "12:30:45.123", "2024-01-15 10:20:30.123456",
	// ISBNs.
	"ISBN 978-3-16-148410-0", "ISBN 0-306-40615-2", "9783161484100", "ISBN-10 0306406152", "ISBN 978 0 306 40615 7",
	// Order numbers, ids and codes.
	"order #123456789", "order 1234567812345670", "ORD-2024-000123", "invoice 2024/000123",
	"tracking 1Z999AA10123456784", "ticket JIRA-12345", "SKU AB12CDEF34567890", "UUID 123e4567-e89b-12d3-a456-426614174000",
	"commit 4b825dc642cb6eb9a060e54bf8d69288fbee4904", "5551234567", "timestamp 1700000000", "1700000000000",
	// Prices and quantities.
	"$1,234.56", "€1.234,56", "1 234 567,89 €", "USD 12,345,678.90", "¥１，２３４", "3.14159265358979",
	"population 8 045 311 447", "pi 3.1415926535",
	// Addresses that are not personal data.
	"MAC 00:1a:2b:3c:4d:5e", "port 8080:80", "51.5074, -0.1278", "room 219 09", "219-09-999",
	"user@localhost", "@handle and a@b", "score 10/24", "ratio 16:9",
	"git clone git@github.com:engramdb/engram.git", "tcp 0 0 0.0.0.0:22 0.0.0.0:* LISTEN", "netmask 255.255.255.0",
	"token qx23west12345698765432", "GB04WEST123456987654", // mod 97 holds; no such country, or not its length
	"UPC 036000291452", "account 0001234567", "section 4.2.1.3 says so",
}

// TestRedactionKeepsOtherBytes: matching happens on a normalised copy, but
// the stored text is the original with only the finds replaced: the
// ligatures, full-width letters, no-break spaces, zero-width characters,
// combining accents and invalid bytes around them are kept byte for byte.
func TestRedactionKeepsOtherBytes(t *testing.T) {
	st := openMem(t, &Options{Redactor: NewRedactor()})
	const (
		a = "ﬁne café\u00a0— Ｔｏｋｙｏ ① e\u0301\u200b 10²: "
		b = "\u00a0and\u202f"
		c = " ½ ＡＢＣ\u00ad ok "
		d = "\u2009end"
	)
	in := a + "ａｌｉｃｅ＠ｅｘａｍｐｌｅ．ｃｏｍ" + b + "4111\u00a01111\u00a01111\u00a01111" + c + "+44\u00a020\u00a07946\u00a00958" + d
	want := a + "[EMAIL_1]" + b + "[CARD_1]" + c + "[PHONE_1]" + d
	sess := st.Session(testScope)
	mustAppend(t, sess, user(in))
	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Content != want {
		t.Errorf("stored %q\nwant   %q", msgs[0].Content, want)
	}
}

// TestRedactionFields: the fields the redactor used to skip are covered
// where a placeholder keeps their meaning: a message's Name, a fact's
// subject and object (through Relate and Write; the predicate is a
// relation's name and stays), and what [Store.Redact] is given (entity
// names and observations written through the graph).
func TestRedactionFields(t *testing.T) {
	st := openMem(t, &Options{Redactor: NewRedactor()})
	sess := st.Session(testScope)
	m := user("hello from me")
	m.Name = "alice@example.com"
	mustAppend(t, sess, m, user("I am alice@example.com"))
	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if msgs[0].Name != "[EMAIL_1]" || msgs[1].Content != "I am [EMAIL_1]" {
		t.Errorf("name %q, content %q: want the same placeholder", msgs[0].Name, msgs[1].Content)
	}

	user := Scope{Tenant: "acme", User: "alice"}
	f, err := st.Relate(bg, user, Fact{Subject: "Alice", Predicate: "has_phone", Object: "+44 20 7946 0958"})
	if err != nil {
		t.Fatal(err)
	}
	if f.Subject != "Alice" || f.Predicate != "has_phone" || f.Object != "[PHONE_1]" {
		t.Errorf("Relate stored %+v", f)
	}
	var b Batch
	b.Relate(user, Fact{Subject: "bob@example.org", Predicate: "reachable_at", Object: "+44 20 7946 0958"})
	res, err := st.Write(bg, &b)
	if err != nil {
		t.Fatal(err)
	}
	if g := res.Facts[0]; g.Subject != "[EMAIL_1]" || g.Object != "[PHONE_1]" {
		t.Errorf("Write stored %+v: want the user's numbering", g)
	}

	got, err := st.Redact(bg, user, "Bob", "calls from +44 20 7946 0958 and 10.0.0.7")
	if err != nil {
		t.Fatal(err)
	}
	if got[0] != "Bob" || got[1] != "calls from [PHONE_1] and [IP_1]" {
		t.Errorf("Redact = %q", got)
	}
	off := openMem(t, nil)
	if got, err := off.Redact(bg, user, "bob@example.org"); err != nil || got[0] != "bob@example.org" {
		t.Errorf("Redact without a Redactor = %q, %v", got, err)
	}
}

// TestRedactionFactsPerUser: a fact is numbered for its user whatever
// session tells it, so the same fact from two sessions stays one fact.
func TestRedactionFactsPerUser(t *testing.T) {
	st := openMem(t, &Options{Redactor: NewRedactor()})
	s1 := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	s2 := Scope{Tenant: "acme", User: "alice", Session: "s2"}
	mustAppend(t, st.Session(s1), user("I am carol@example.com")) // s1 numbers carol first
	a, err := st.Relate(bg, s1, Fact{Subject: "Alice", Predicate: "email", Object: "alice@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := st.Relate(bg, s2, Fact{Subject: "Alice", Predicate: "email", Object: "alice@example.com"})
	if err != nil {
		t.Fatal(err)
	}
	if a.Object != "[EMAIL_1]" || a.ID != b.ID {
		t.Errorf("facts %+v and %+v: want one fact with the user's [EMAIL_1]", a, b)
	}
}
