package memory

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestAppendBadInput(t *testing.T) {
	big := strings.Repeat("x", 2048)
	tests := []struct {
		name  string
		scope Scope
		prior []Message
		msgs  []Message
		want  error
	}{
		{"empty tenant", Scope{User: "u", Session: "s"}, nil, []Message{user("hi")}, ErrInvalidScope},
		{"empty user", Scope{Tenant: "t", Session: "s"}, nil, []Message{user("hi")}, ErrInvalidScope},
		{"empty session", Scope{Tenant: "t", User: "u"}, nil, []Message{user("hi")}, ErrInvalidScope},
		{"oversized id", Scope{Tenant: strings.Repeat("t", 300), User: "u", Session: "s"}, nil, []Message{user("hi")}, ErrInvalidScope},
		{"control character id", Scope{Tenant: "t", User: "u\x00", Session: "s"}, nil, []Message{user("hi")}, ErrInvalidScope},
		{"unknown role", testScope, nil, []Message{{Role: "robot", Content: "hi"}}, ErrInvalidRole},
		{"empty role", testScope, nil, []Message{{Content: "hi"}}, ErrInvalidRole},
		{"orphan tool result", testScope, nil, []Message{result("nope")}, ErrOrphanToolResult},
		{"orphan after other calls", testScope, []Message{call("a"), result("a")}, []Message{result("b")}, ErrOrphanToolResult},
		{"tool result without id", testScope, nil, []Message{{Role: RoleTool, Content: "x"}}, ErrOrphanToolResult},
		{"invalid arguments", testScope, nil, []Message{{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "c", Name: "f", Arguments: json.RawMessage(`{"a":`)}}}}, ErrInvalidToolArguments},
		{"duplicate call in session", testScope, []Message{call("a"), result("a")}, []Message{call("a")}, ErrDuplicateToolCall},
		{"duplicate call in batch", testScope, nil, []Message{call("a"), result("a"), call("a")}, ErrDuplicateToolCall},
		{"duplicate call in message", testScope, nil, []Message{call("a", "a")}, ErrDuplicateToolCall},
		{"tool calls on user", testScope, nil, []Message{{Role: RoleUser, Content: "x", ToolCalls: []ToolCall{{ID: "c", Name: "f"}}}}, ErrInvalidMessage},
		{"call id on user", testScope, nil, []Message{{Role: RoleUser, Content: "x", ToolCallID: "c"}}, ErrInvalidMessage},
		{"empty content", testScope, nil, []Message{{Role: RoleUser}}, ErrInvalidMessage},
		{"bad UTF-8", testScope, nil, []Message{user("\xff\xfe")}, ErrInvalidMessage},
		{"control in call id", testScope, nil, []Message{call("a\nb")}, ErrInvalidMessage},
		{"bad metadata key", testScope, nil, []Message{{Role: RoleUser, Content: "x", Metadata: map[string]string{"": "v"}}}, ErrInvalidMessage},
		{"over size limit", testScope, nil, []Message{user(big)}, ErrTooLarge},
		{"bad message after good ones", testScope, nil, []Message{user("fine"), asst("fine"), {Role: "robot", Content: "x"}}, ErrInvalidRole},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			st := openMem(t, &Options{MaxMessageBytes: 1024})
			sess := st.Session(tc.scope)
			if tc.prior != nil {
				mustAppend(t, sess, tc.prior...)
			}
			before := rawKeys(t, st)
			err := sess.Append(bg, tc.msgs...)
			if !errors.Is(err, tc.want) {
				t.Fatalf("Append = %v, want %v", err, tc.want)
			}
			if after := rawKeys(t, st); after != before {
				t.Fatalf("a failed Append wrote data:\nbefore %s\nafter  %s", before, after)
			}
		})
	}
}

// rawKeys lists every key of the store, to prove nothing was written.
func rawKeys(t testing.TB, st *Store) string {
	t.Helper()
	var keys []string
	err := st.db.KV().View(bg, func(tx *kvTxn) error {
		it := tx.NewIterator(kvIterOptions{KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			keys = append(keys, fmt.Sprintf("%q", it.Key()))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return strings.Join(keys, ",")
}

func TestAppendReadBack(t *testing.T) {
	st := openMem(t, nil)
	sess := st.Session(testScope)
	when := time.Date(2026, 3, 1, 9, 30, 0, 0, time.UTC)
	in := []Message{
		{Role: RoleSystem, Content: "You are a support agent."},
		{Role: RoleUser, Name: "alice", Content: "My renewal owner is Dana.", Time: when, Metadata: map[string]string{"channel": "chat"}},
		{Role: RoleAssistant, ToolCalls: []ToolCall{{ID: "call_1", Name: "crm_lookup", Arguments: json.RawMessage(`{"account":"3942"}`)}}},
		{Role: RoleTool, ToolCallID: "call_1", Name: "crm_lookup", Content: `{"owner":"Dana"}`},
	}
	mustAppend(t, sess, in...)
	out, err := sess.Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(out) != len(in) {
		t.Fatalf("read %d messages, want %d", len(out), len(in))
	}
	for i := range in {
		got, want := out[i], in[i]
		if got.ID == "" || got.Tokens <= 0 || got.Time.IsZero() {
			t.Errorf("message %d: id %q, tokens %d, time %v not set", i, got.ID, got.Tokens, got.Time)
		}
		if !want.Time.IsZero() && !got.Time.Equal(want.Time) {
			t.Errorf("message %d: time %v, want %v", i, got.Time, want.Time)
		}
		got.ID, got.Tokens, got.Time, want.Time = "", 0, time.Time{}, time.Time{}
		gj, _ := json.Marshal(got)
		wj, _ := json.Marshal(want)
		if string(gj) != string(wj) {
			t.Errorf("message %d:\n got %s\nwant %s", i, gj, wj)
		}
	}
	if in[0].ID != "" || in[0].Tokens != 0 {
		t.Error("Append modified the caller's messages")
	}
}

func TestCountTokens(t *testing.T) {
	st := openMem(t, nil)
	// o200k_base: "hello world" is 2 tokens, "user" 1; framing 3.
	n, err := st.CountTokens(user("hello world"))
	if err != nil || n != 6 {
		t.Fatalf("CountTokens = %d, %v; want 6", n, err)
	}
	cl := openMem(t, &Options{Encoding: "cl100k_base"})
	long := strings.Repeat("antidisestablishmentarianism ", 20)
	a, _ := st.CountTokens(user(long))
	b, _ := cl.CountTokens(user(long))
	if a <= 20 || b <= 20 {
		t.Fatalf("token counts %d, %d look like characters or words, not tokens", a, b)
	}
	if _, err := Open("", &Options{Encoding: "gpt-9"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("unknown encoding: %v, want ErrInvalidOptions", err)
	}
}

func TestMessagesPaging(t *testing.T) {
	st := openMem(t, &Options{Durability: Async})
	sess := st.Session(testScope)
	for i := range 25 {
		mustAppend(t, sess, user(fmt.Sprint(i)))
	}
	var got []string
	after := ""
	for {
		page, err := sess.Messages(bg, MessagesOptions{After: after, Limit: 7})
		if err != nil {
			t.Fatal(err)
		}
		if len(page) == 0 {
			break
		}
		for _, m := range page {
			got = append(got, m.Content)
		}
		after = page[len(page)-1].ID
	}
	if want := fmt.Sprint(seq(0, 25)); fmt.Sprint(got) != want {
		t.Fatalf("paged = %v, want %v", got, want)
	}
	all, _ := sess.Messages(bg, MessagesOptions{})
	rev, err := sess.Messages(bg, MessagesOptions{Reverse: true, Limit: 3})
	if err != nil || label(rev) != "U:24 U:23 U:22" {
		t.Fatalf("reverse = %s, %v", label(rev), err)
	}
	rng, err := sess.Messages(bg, MessagesOptions{After: all[4].ID, Before: all[8].ID})
	if err != nil || label(rng) != "U:5 U:6 U:7" {
		t.Fatalf("range = %s, %v", label(rng), err)
	}
	rrng, err := sess.Messages(bg, MessagesOptions{After: all[4].ID, Before: all[8].ID, Reverse: true})
	if err != nil || label(rrng) != "U:7 U:6 U:5" {
		t.Fatalf("reverse range = %s, %v", label(rrng), err)
	}
	future, err := sess.Messages(bg, MessagesOptions{Since: time.Now().Add(time.Hour)})
	if err != nil || len(future) != 0 {
		t.Fatalf("Since the future = %d messages, %v", len(future), err)
	}
	past, err := sess.Messages(bg, MessagesOptions{Until: time.Now().Add(-time.Hour)})
	if err != nil || len(past) != 0 {
		t.Fatalf("Until the past = %d messages, %v", len(past), err)
	}
	if _, err := sess.Messages(bg, MessagesOptions{After: "not-an-id"}); !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("bad cursor = %v, want ErrInvalidOptions", err)
	}
}

func seq(lo, hi int) []string {
	var s []string
	for i := lo; i < hi; i++ {
		s = append(s, fmt.Sprint(i))
	}
	return s
}

// TestConcurrentAppends appends from many goroutines to a few sessions and
// checks every message lands once, in each writer's order.
func TestConcurrentAppends(t *testing.T) {
	st := openMem(t, &Options{Durability: Async})
	const writers, each = 8, 40
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			sess := st.Session(Scope{Tenant: "t", User: "u", Session: fmt.Sprint("s", w%2)})
			for i := range each {
				if err := sess.Append(bg, user(fmt.Sprintf("w%d-%03d", w, i))); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	wg.Wait()
	total := 0
	for s := range 2 {
		msgs, err := st.Session(Scope{Tenant: "t", User: "u", Session: fmt.Sprint("s", s)}).Messages(bg, MessagesOptions{Limit: 1000})
		if err != nil {
			t.Fatal(err)
		}
		last := map[string]string{}
		for _, m := range msgs {
			w := m.Content[:strings.Index(m.Content, "-")]
			if m.Content <= last[w] {
				t.Fatalf("writer %s out of order: %s after %s", w, m.Content, last[w])
			}
			last[w] = m.Content
		}
		total += len(msgs)
	}
	if total != writers*each {
		t.Fatalf("%d messages stored, want %d", total, writers*each)
	}
}
