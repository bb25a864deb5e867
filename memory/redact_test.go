package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/engine"
)

// TestRedactorFinds is the default Redactor's table: each text must yield
// exactly the listed finds (kind and matched text); near-misses (cards that
// fail Luhn, dates, version numbers, order ids, timestamps, never-issued
// SSNs) must yield none.
func TestRedactorFinds(t *testing.T) {
	type find struct{ kind, text string }
	cases := []struct {
		text string
		want []find
	}{
		// E-mail addresses.
		{"write to alice@example.com today", []find{{PIIEmail, "alice@example.com"}}},
		{"Alice.Smith+tag@Mail.Example.co.uk.", []find{{PIIEmail, "Alice.Smith+tag@Mail.Example.co.uk"}}},
		{"mailto:bob@x.io, <carol@y.org>", []find{{PIIEmail, "bob@x.io"}, {PIIEmail, "carol@y.org"}}},
		{"user@localhost", nil},
		{"@handle and a@b", nil},
		// Phone numbers.
		{"call +1 (555) 123-4567", []find{{PIIPhone, "+1 (555) 123-4567"}}},
		{"call +44 20 7946 0958.", []find{{PIIPhone, "+44 20 7946 0958"}}},
		{"(555) 123-4567 or 555.123.4567", []find{{PIIPhone, "(555) 123-4567"}, {PIIPhone, "555.123.4567"}}},
		{"ring 020 7946 0958", []find{{PIIPhone, "020 7946 0958"}}},
		{"+33612345678", []find{{PIIPhone, "+33612345678"}}},
		{"on 2024-01-15 at 10:30", nil},
		{"dated 15.01.2024", nil},
		{"version 1.2.3 and 2.10.15", nil},
		{"order ORD-555-123-4567", nil},
		{"release v10.20.3040", nil},
		{"timestamp 20240115123045 and 1700000000000", nil},
		{"5551234567", nil}, // bare digits: an id as often as a number
		// Payment cards (Luhn, issuer ranges).
		{"card 4111 1111 1111 1111 exp 12/27", []find{{PIICard, "4111 1111 1111 1111"}}},
		{"4111-1111-1111-1111", []find{{PIICard, "4111-1111-1111-1111"}}},
		{"mc 5555555555554444, amex 378282246310005", []find{{PIICard, "5555555555554444"}, {PIICard, "378282246310005"}}},
		{"4111 1111 1111 1112", nil},    // fails Luhn
		{"order 1234567812345670", nil}, // passes Luhn, no issuer starts with 1
		{"id 9999999999999995", nil},    // passes Luhn, no issuer range
		{"4111111111111111-07", nil},    // part of a longer token
		// IBANs (mod 97).
		{"IBAN GB82 WEST 1234 5698 7654 32", []find{{PIIIBAN, "GB82 WEST 1234 5698 7654 32"}}},
		{"DE89370400440532013000", []find{{PIIIBAN, "DE89370400440532013000"}}},
		{"GB82 WEST 1234 5698 7654 33", nil}, // fails mod 97
		{"SKU AB12CDEF34567890", nil},
		// IP addresses.
		{"from 192.168.1.10:8080", []find{{PIIIP, "192.168.1.10"}}}, // the port stays
		{"from 192.168.1.10 and 10.0.0.1.", []find{{PIIIP, "192.168.1.10"}, {PIIIP, "10.0.0.1"}}},
		{"v6 2001:db8::8a2e:370:7334 and ::1", []find{{PIIIP, "2001:db8::8a2e:370:7334"}, {PIIIP, "::1"}}},
		{"256.1.1.1 and 1.2.3", nil},
		{"v1.2.3.4", nil},
		{"at 12:30:45, mac 00:1a:2b:3c:4d:5e", nil},
		// National ids.
		{"SSN 123-45-6789", []find{{PIISSN, "123-45-6789"}}},
		{"000-12-3456 666-12-3456 912-34-5678 123-00-4567 123-45-0000", nil},
		{"NI AB 12 34 56 C", []find{{PIININumber, "AB 12 34 56 C"}}},
		{"NI AB123456C.", []find{{PIININumber, "AB123456C"}}},
		{"QQ123456C GB123456A AB123456E", nil},
		// Mixed, in order.
		{"mail bob@x.io, card 4242424242424242, ip 8.8.8.8", []find{{PIIEmail, "bob@x.io"}, {PIICard, "4242424242424242"}, {PIIIP, "8.8.8.8"}}},
	}
	r := NewRedactor()
	for _, c := range cases {
		var got []find
		for _, p := range r.Find(c.text) {
			got = append(got, find{p.Kind, c.text[p.Start:p.End]})
		}
		if len(got) != len(c.want) {
			t.Errorf("%q: found %v, want %v", c.text, got, c.want)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: found %v, want %v", c.text, got, c.want)
				break
			}
		}
	}
}

// TestRedactionInStore: with a Redactor, no personal data reaches the
// store's files, placeholders are consistent within a session (the same
// data, however written, has one number; another session numbers on its
// own), tool-call arguments stay JSON, and forgetting the session erases
// its numbering.
func TestRedactionInStore(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, &Options{Redactor: NewRedactor()})
	if err != nil {
		t.Fatal(err)
	}
	defer func() { st.Close() }()
	secrets := []string{"alice@example.com", "Alice@Example.com", "4111 1111 1111 1111", "4111111111111111", "+44 20 7946 0958", "GB82 WEST 1234 5698 7654 32", "192.168.1.10"}
	sess := st.Session(testScope)
	mustAppend(t, sess,
		user("I am alice@example.com, card 4111 1111 1111 1111."),
		asst("Noted: Alice@Example.com and 4111111111111111."),
	)
	args, _ := json.Marshal(map[string]any{"email": "alice@example.com", "phone": "+44 20 7946 0958", "n": 12345678901234567})
	mustAppend(t, sess,
		Message{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c1", Name: "lookup", Arguments: args}}},
		Message{Role: RoleTool, ToolCallID: "c1", Content: "bob@example.org, IBAN GB82 WEST 1234 5698 7654 32", Metadata: map[string]string{"ip": "192.168.1.10"}},
	)
	other := st.Session(Scope{Tenant: "acme", User: "alice", Session: "s2"})
	mustAppend(t, other, user("bob@example.org here, also alice@example.com"))
	id, err := st.Remember(bg, testScope, Memory{Text: "Alice's e-mail is alice@example.com"})
	if err != nil {
		t.Fatal(err)
	}

	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"I am [EMAIL_1], card [CARD_1].",
		"Noted: [EMAIL_1] and [CARD_1].",
		"",
		"[EMAIL_2], IBAN [IBAN_1]",
	}
	for i, m := range msgs {
		if m.Content != want[i] {
			t.Errorf("message %d: %q, want %q", i, m.Content, want[i])
		}
	}
	var a map[string]any
	if err := json.Unmarshal(msgs[2].ToolCalls[0].Arguments, &a); err != nil {
		t.Fatalf("arguments %s: %v", msgs[2].ToolCalls[0].Arguments, err)
	}
	if a["email"] != "[EMAIL_1]" || a["phone"] != "[PHONE_1]" || !bytes.Contains(msgs[2].ToolCalls[0].Arguments, []byte("12345678901234567")) {
		t.Errorf("arguments = %s", msgs[2].ToolCalls[0].Arguments)
	}
	if msgs[3].Metadata["ip"] != "[IP_1]" {
		t.Errorf("metadata = %v", msgs[3].Metadata)
	}
	if om, _ := other.Messages(bg, MessagesOptions{}); len(om) != 1 || om[0].Content != "[EMAIL_1] here, also [EMAIL_2]" {
		t.Errorf("other session: %+v", om)
	}
	if m, err := st.Memory(bg, testScope, id); err != nil || m.Text != "Alice's e-mail is [EMAIL_1]" {
		t.Errorf("memory = %q, %v; want the session's placeholder", m.Text, err)
	}

	// Forgetting the session erases its numbering.
	numbering := func() (n int) {
		err := st.db.View(bg, func(tx *engine.Tx) error {
			it := tx.NewIterator(engine.IterOptions{Prefix: engine.Key(testScope.Prefix(engine.LevelSession), engine.NSRedaction)})
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
	// A salt, a counter per kind (5) and a hash per datum (6).
	if n := numbering(); n != 1+5+6 {
		t.Errorf("%d redaction keys in the session, want 12", n)
	}
	if err := st.Forget(bg, testScope); err != nil {
		t.Fatal(err)
	}
	if n := numbering(); n != 0 {
		t.Errorf("%d redaction keys left after Forget", n)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	// No file holds any of the data, in any spelling.
	err = filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
		if err != nil {
			return err
		}
		for _, s := range append(secrets, "bob@example.org", "4111111111111111", "GB82WEST12345698765432") {
			if bytes.Contains(b, []byte(s)) || bytes.Contains(b, []byte(strings.ToLower(s))) {
				t.Errorf("%s holds %q", filepath.Base(path), s)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestRedactionOffByDefault: without a Redactor, text is stored as given.
func TestRedactionOffByDefault(t *testing.T) {
	st := openMem(t, nil)
	mustAppend(t, st.Session(testScope), user("alice@example.com"))
	msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{})
	if err != nil || msgs[0].Content != "alice@example.com" {
		t.Fatalf("Messages = %+v, %v", msgs, err)
	}
}

// TestRedactionEveryWritePath: every call that stores message or memory
// text redacts it.
func TestRedactionEveryWritePath(t *testing.T) {
	st := openMem(t, &Options{Redactor: NewRedactor()})
	const raw = "carol@example.net"
	var b Batch
	b.Append(testScope, user("batch "+raw))
	if _, err := st.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ImportMessages(bg, testScope, []Message{user("import " + raw)}); err != nil {
		t.Fatal(err)
	}
	id, err := st.Remember(bg, Scope{Tenant: "acme", User: "alice"}, Memory{Text: "remember " + raw, Metadata: map[string]string{"by": raw}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := st.UpdateMemory(bg, testScope, id, Memory{Text: "update " + raw}); err != nil {
		t.Fatal(err)
	}
	if _, err := st.ImportMemories(bg, testScope, []Memory{{Text: "imported " + raw}}); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var texts []string
	for _, m := range msgs {
		texts = append(texts, m.Content)
	}
	for _, v := range []string{id} {
		m, err := st.Memory(bg, testScope, v)
		if err != nil {
			t.Fatal(err)
		}
		texts = append(texts, m.Text, m.Metadata["by"])
	}
	mems, err := st.Memories(bg, testScope, MemoriesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range mems {
		texts = append(texts, m.Text)
	}
	if len(texts) != 2+2+2 {
		t.Fatalf("texts %q", texts)
	}
	for _, s := range texts {
		if strings.Contains(s, raw) || !strings.Contains(s, "[EMAIL_1]") {
			t.Errorf("stored %q", s)
		}
	}
}

// FuzzRedactorFind: Find never panics and returns spans in bounds, in
// order, not overlapping, with a valid kind.
func FuzzRedactorFind(f *testing.F) {
	for _, s := range []string{"alice@example.com", "+44 20 7946 0958", "4111 1111 1111 1111", "GB82 WEST 1234 5698 7654 32", "::1", "AB123456C", "\xff@\xfe.com",
		"4111\u00a01111\u00a01111\u00a01111", "ali\u200bce@example.com\u200b", "ｶｰﾄﾞ４１１１ １１１１ １１１１ １１１１", "\u200b\u200b1.2.3.4\xff", "ﬁ\u0301jörg@bücher.de\u00ad",
		"tel:+1\u2011415\u2011555\u20110100", "\"x\"@\xffy.com", "010.001.002.003:80"} {
		f.Add(s)
	}
	r := NewRedactor()
	f.Fuzz(func(t *testing.T, s string) {
		last := 0
		for _, p := range r.Find(s) {
			if p.Start < last || p.End <= p.Start || p.End > len(s) || !validKind(p.Kind) || p.Value == "" {
				t.Fatalf("%q: bad find %+v", s, p)
			}
			last = p.End
		}
	})
}

// TestRedactionRefusedBatch: a batch refused by the rules writes nothing,
// not even a placeholder number.
func TestRedactionRefusedBatch(t *testing.T) {
	st := openMem(t, &Options{Redactor: NewRedactor()})
	err := st.Session(testScope).Append(bg, user("dave@example.com"), Message{Role: "bogus", Content: "x"})
	if !errors.Is(err, ErrInvalidRole) {
		t.Fatalf("Append = %v", err)
	}
	err = st.db.View(bg, func(tx *engine.Tx) error {
		it := tx.NewIterator(engine.IterOptions{Prefix: testScope.Prefix(engine.LevelSession)})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			t.Errorf("key %x written", it.Key())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}
