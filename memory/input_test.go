package memory

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/engine"
)

// TestTooLargeBeforeTokenizing: a message over MaxMessageBytes is refused
// before any token is counted (issue 12, defect 4: a 300 KiB message took
// 81 s to refuse), by Append, Batch and ImportMessages alike.
func TestTooLargeBeforeTokenizing(t *testing.T) {
	st := openMem(t, &Options{MaxMessageBytes: 64 << 10})
	big := strings.Repeat("a", 64<<10+1)
	calls := map[string]func() error{
		"Append": func() error { return st.Session(testScope).Append(bg, user("hi"), user(big)) },
		"Batch": func() error {
			var b Batch
			b.Append(testScope, user(big))
			_, err := st.Write(bg, &b)
			return err
		},
		"ImportMessages": func() error {
			_, err := st.ImportMessages(bg, testScope, []Message{user(big)})
			return err
		},
		"tool arguments": func() error {
			m := call("c1")
			m.ToolCalls[0].Arguments = []byte(`"` + big + `"`)
			return st.Session(testScope).Append(bg, m)
		},
	}
	for name, f := range calls {
		t.Run(name, func(t *testing.T) {
			before := tokenizedBytes.Load()
			if err := f(); !errors.Is(err, ErrTooLarge) {
				t.Fatalf("err = %v, want ErrTooLarge", err)
			}
			if n := tokenizedBytes.Load() - before; n > 0 {
				t.Errorf("%d bytes tokenized before the size check", n)
			}
		})
	}
	if msgs, err := st.Session(testScope).Messages(bg, MessagesOptions{}); err != nil || len(msgs) != 0 {
		t.Fatalf("Messages = %d, %v; want nothing written", len(msgs), err)
	}
}

// TestTimesOutOfRange: times an int64 of Unix nanoseconds cannot hold are
// refused with ErrInvalidTime (issue 12, defect 6: 2300-01-01 read back as
// 1715-06-13); times inside the range read back exactly.
func TestTimesOutOfRange(t *testing.T) {
	st := openMem(t, nil)
	sess := st.Session(testScope)
	late := time.Date(2300, 1, 1, 0, 0, 0, 0, time.UTC)
	early := time.Date(1600, 1, 1, 0, 0, 0, 0, time.UTC)
	at := func(m Message, t time.Time) Message { m.Time = t; return m }
	calls := []struct {
		name  string
		class error
		call  func() error
	}{
		{"Append late", ErrInvalidMessage, func() error { return sess.Append(bg, at(user("hello future"), late)) }},
		{"Append early", ErrInvalidMessage, func() error { return sess.Append(bg, at(user("hello past"), early)) }},
		{"Batch", ErrInvalidMessage, func() error {
			var b Batch
			b.Append(testScope, at(user("hello"), late))
			_, err := st.Write(bg, &b)
			return err
		}},
		{"ImportMessages", ErrInvalidMessage, func() error {
			_, err := st.ImportMessages(bg, testScope, []Message{at(user("hello"), late)})
			return err
		}},
		{"Remember ExpiresAt", ErrInvalidMemory, func() error {
			_, err := st.Remember(bg, testScope, Memory{Text: "expires late", ExpiresAt: late})
			return err
		}},
		{"ImportMemories CreatedAt", ErrInvalidMemory, func() error {
			_, err := st.ImportMemories(bg, testScope, []Memory{{Text: "made early", CreatedAt: early}})
			return err
		}},
		{"Messages Since", ErrInvalidOptions, func() error {
			_, err := sess.Messages(bg, MessagesOptions{Since: late})
			return err
		}},
		{"Messages Until", ErrInvalidOptions, func() error {
			_, err := sess.Messages(bg, MessagesOptions{Until: early})
			return err
		}},
		{"engine record", engine.ErrInvalidRecord, func() error {
			return st.db.Update(bg, func(tx *engine.Tx) error {
				_, err := tx.PutRecord(engine.Scope{Tenant: "acme", User: "alice"}, "", engine.Record{Text: "x", Vector: []float32{1}, Time: late})
				return err
			})
		}},
	}
	for _, c := range calls {
		t.Run(c.name, func(t *testing.T) {
			err := c.call()
			if !errors.Is(err, ErrInvalidTime) || !errors.Is(err, c.class) {
				t.Fatalf("err = %v, want ErrInvalidTime in %v", err, c.class)
			}
		})
	}
	if msgs, err := sess.Messages(bg, MessagesOptions{}); err != nil || len(msgs) != 0 {
		t.Fatalf("Messages = %d, %v; want nothing written", len(msgs), err)
	}
	if mems, err := st.Memories(bg, testScope, MemoriesOptions{}); err != nil || len(mems) != 0 {
		t.Fatalf("Memories = %d, %v; want nothing written", len(mems), err)
	}

	// The edges of the range are kept exactly.
	edges := []time.Time{
		time.Date(1677, 9, 22, 0, 0, 0, 0, time.UTC),
		time.Date(1969, 12, 31, 23, 59, 59, 999, time.UTC),
		time.Date(2262, 4, 11, 0, 0, 0, 0, time.UTC),
	}
	for _, e := range edges {
		mustAppend(t, sess, at(user("edge "+e.String()), e))
	}
	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil || len(msgs) != len(edges) {
		t.Fatalf("Messages = %d, %v", len(msgs), err)
	}
	for i, m := range msgs {
		if !m.Time.Equal(edges[i]) {
			t.Errorf("message %d: time %v, want %v", i, m.Time, edges[i])
		}
	}
	// Ids hold append times since 1970: an Until before it selects
	// nothing (it used to select everything), a Since before it bounds
	// nothing.
	if got, err := sess.Messages(bg, MessagesOptions{Until: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil || len(got) != 0 {
		t.Errorf("Until 1960: %d messages, %v; want none", len(got), err)
	}
	if got, err := sess.Messages(bg, MessagesOptions{Since: time.Date(1960, 1, 1, 0, 0, 0, 0, time.UTC)}); err != nil || len(got) != len(edges) {
		t.Errorf("Since 1960: %d messages, %v; want all", len(got), err)
	}
}

// TestUnindexableText: texts with no word to index (so the hashing
// embedder gives them the zero vector) are stored and recalled around, never
// an error (issue 12, defect 7: "?!", "...", "—" answered 500). Invalid
// UTF-8 is bad input (400), not a server error.
func TestUnindexableText(t *testing.T) {
	st := openMem(t, nil)
	sess := st.Session(testScope)
	mustAppend(t, sess, user("My renewal owner is Dana."))
	if _, err := st.Remember(bg, testScope, Memory{Text: "Alice prefers email."}); err != nil {
		t.Fatal(err)
	}
	texts := []string{"?!", "...", "—", "🙂", "\ufffd", "¿¡"}
	for _, text := range texts {
		t.Run(text, func(t *testing.T) {
			mustAppend(t, sess, user(text), asst(text))
			for range 2 { // the second is a duplicate of the first
				if _, err := st.Remember(bg, testScope, Memory{Text: text}); err != nil {
					t.Fatalf("Remember: %v", err)
				}
			}
			rec, err := st.Recall(bg, Query{Scope: testScope, Text: text})
			if err != nil {
				t.Fatalf("Recall: %v", err)
			}
			_ = rec.ChatMessages()
			if _, err := st.Recall(bg, Query{Scope: testScope, Text: "Who is the renewal owner?"}); err != nil {
				t.Fatalf("Recall after: %v", err)
			}
		})
	}
	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil || len(msgs) != 1+2*len(texts) {
		t.Fatalf("Messages = %d, %v; want every text stored", len(msgs), err)
	}
	mems, err := st.Memories(bg, testScope, MemoriesOptions{})
	if err != nil || len(mems) != 1+len(texts) {
		t.Fatalf("Memories = %d, %v; want every text stored once", len(mems), err)
	}
	if err := sess.Append(bg, user("\xff\xfe")); !errors.Is(err, ErrInvalidMessage) {
		t.Errorf("Append invalid UTF-8: %v, want ErrInvalidMessage", err)
	}
	if _, err := st.Remember(bg, testScope, Memory{Text: "\xff\xfe"}); !errors.Is(err, ErrInvalidMemory) {
		t.Errorf("Remember invalid UTF-8: %v, want ErrInvalidMemory", err)
	}
}

// TestSecondToolResult: a tool call has one result; a second one for the
// same tool_call_id is ErrDuplicateToolResult, in a later batch, in the
// same batch, and on import (issue 12, defect 11).
func TestSecondToolResult(t *testing.T) {
	st := openMem(t, nil)
	sess := st.Session(testScope)
	mustAppend(t, sess, call("c1", "c2"), result("c1"))
	cases := map[string]func() error{
		"later batch":          func() error { return sess.Append(bg, result("c1")) },
		"same batch":           func() error { return sess.Append(bg, result("c2"), result("c2")) },
		"call and both in one": func() error { return sess.Append(bg, call("c3"), result("c3"), result("c3")) },
		"import": func() error {
			_, err := st.ImportMessages(bg, testScope, []Message{result("c1")})
			return err
		},
		"import same batch": func() error {
			_, err := st.ImportMessages(bg, testScope, []Message{call("c4"), result("c4"), result("c4")})
			return err
		},
	}
	for name, f := range cases {
		t.Run(name, func(t *testing.T) {
			if err := f(); !errors.Is(err, ErrDuplicateToolResult) || !errors.Is(err, ErrInvalidMessage) {
				t.Fatalf("err = %v, want ErrDuplicateToolResult", err)
			}
		})
	}
	mustAppend(t, sess, result("c2")) // the first result for c2 is still fine
	msgs, err := sess.Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := label(msgs); got != "C:c1,c2 T:c1 T:c2" {
		t.Fatalf("session = %s", got)
	}
}

// TestSessionTTLBound: a SessionTTL whose expiry times would pass 2262
// (and wrap, sweeping messages at once) is refused by Open.
func TestSessionTTLBound(t *testing.T) {
	if _, err := Open("", &Options{SessionTTL: 250 * 365 * 24 * time.Hour}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open = %v, want ErrInvalidOptions", err)
	}
	st := openMem(t, &Options{SessionTTL: 100 * 365 * 24 * time.Hour})
	mustAppend(t, st.Session(testScope), user("hello for a century"))
}
