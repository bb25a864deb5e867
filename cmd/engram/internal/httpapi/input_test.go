package httpapi

import (
	"net/http"
	"strings"
	"testing"
)

// TestOversizedMessageRefusedFirst: a message over MaxMessageBytes with no
// white space is refused 413 without being tokenized first (issue 12,
// defect 4: a 300 KiB body took 81 s to refuse; the memory package's
// TestTooLargeBeforeTokenizing proves the order, this the status).
func TestOversizedMessageRefusedFirst(t *testing.T) {
	s := newTestServer(t, nil, nil)
	path := "/v1/users/alice/sessions/s/messages"
	body := `{"messages":[{"role":"user","content":"` + strings.Repeat("a", 300<<10) + `"}]}`
	if r := s.call("POST", path, tokenAcme, body); r.status != http.StatusRequestEntityTooLarge || r.errorCode() != "too_large" {
		t.Fatalf("= %d %s", r.status, r.body)
	}
}

// TestTimesOutOfRangeHTTP: times the store cannot keep answer 400, not a
// silently wrapped time (issue 12, defect 6).
func TestTimesOutOfRangeHTTP(t *testing.T) {
	s := newTestServer(t, nil, nil)
	cases := []struct{ method, path, body string }{
		{"POST", "/v1/users/alice/sessions/s/messages", `{"messages":[{"role":"user","content":"hi","time":"2300-01-01T00:00:00Z"}]}`},
		{"POST", "/v1/users/alice/sessions/s/messages", `{"messages":[{"role":"user","content":"hi","time":"1600-01-01T00:00:00Z"}]}`},
		{"POST", "/v1/users/alice/memories", `{"text":"later","expires_at":"2300-01-01T00:00:00Z"}`},
		{"GET", "/v1/users/alice/sessions/s/messages?since=2300-01-01T00:00:00Z", ""},
		{"GET", "/v1/users/alice/sessions/s/messages?until=1600-01-01T00:00:00Z", ""},
	}
	for _, c := range cases {
		var body any
		if c.body != "" {
			body = c.body
		}
		if r := s.call(c.method, c.path, tokenAcme, body); r.status != http.StatusBadRequest {
			t.Errorf("%s %s %s = %d %s, want 400", c.method, c.path, c.body, r.status, r.body)
		}
	}
	var page messagesResponse
	s.must(200, "GET", "/v1/users/alice/sessions/s/messages", tokenAcme, nil).decode(t, &page)
	if len(page.Messages) != 0 {
		t.Fatalf("%d messages stored, want none", len(page.Messages))
	}
}

// TestUnindexableTextHTTP: texts with no word to index are stored and
// recalled around, never 500 (issue 12, defect 7). Invalid UTF-8 in a JSON
// body reaches the store as U+FFFD, which has no word either.
func TestUnindexableTextHTTP(t *testing.T) {
	s := newTestServer(t, nil, nil)
	path := "/v1/users/alice/sessions/s/messages"
	s.must(201, "POST", path, tokenAcme, `{"messages":[{"role":"user","content":"My renewal owner is Dana."}]}`)
	s.must(201, "POST", "/v1/users/alice/memories", tokenAcme, `{"text":"Alice prefers email."}`)
	texts := []string{`?!`, `...`, `—`, "\xff\xfe", `\ud800`}
	for _, text := range texts {
		msg := `{"messages":[{"role":"user","content":"` + text + `"},{"role":"assistant","content":"` + text + `"}]}`
		if r := s.call("POST", path, tokenAcme, msg); r.status != http.StatusCreated {
			t.Errorf("append %q = %d %s", text, r.status, r.body)
		}
		for range 2 {
			if r := s.call("POST", "/v1/users/alice/memories", tokenAcme, `{"text":"`+text+`"}`); r.status >= 300 {
				t.Errorf("remember %q = %d %s", text, r.status, r.body)
			}
		}
		if r := s.call("POST", "/v1/recall", tokenAcme, `{"user":"alice","session":"s","text":"`+text+`"}`); r.status != http.StatusOK {
			t.Errorf("recall %q = %d %s", text, r.status, r.body)
		}
	}
	var page messagesResponse
	s.must(200, "GET", path, tokenAcme, nil).decode(t, &page)
	if len(page.Messages) != 1+2*len(texts) {
		t.Fatalf("%d messages stored, want %d", len(page.Messages), 1+2*len(texts))
	}
}
