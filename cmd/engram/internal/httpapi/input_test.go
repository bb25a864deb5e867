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

// TestZeroAndFarTimesHTTP: a time given as 0001-01-01T00:00:00Z is refused,
// not read as absent (issue 26: a message's time became now, expires_at no
// expiry, valid_to stayed open), and so is any time outside 1677–2262,
// as_of included (years 0000 and 9999 were accepted); the error names the
// field. null and a field left out stay absent.
func TestZeroAndFarTimesHTTP(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(201, "POST", "/v1/users/alice/memories", tokenAcme, `{"text":"to update"}`)
	var page memoriesResponse
	s.must(200, "GET", "/v1/users/alice/memories", tokenAcme, nil).decode(t, &page)
	memID := page.Memories[0].ID
	msgs := "/v1/users/alice/sessions/s/messages"
	type tc struct{ method, path, body, field string }
	var cases []tc
	for _, v := range []string{"0001-01-01T00:00:00Z", "0000-01-01T00:00:00Z", "9999-12-31T23:59:59Z"} {
		q := strings.NewReplacer(":", "%3A").Replace(v)
		cases = append(cases,
			tc{"POST", msgs, `{"messages":[{"role":"user","content":"a"},{"role":"user","content":"b","time":"` + v + `"}]}`, "messages[1].time"},
			tc{"POST", msgs, `{"messages":[{"role":"user","content":"a"}],"facts":[{"subject":"a","predicate":"p","object":"b","valid_to":"` + v + `"}]}`, "facts[0].valid_to"},
			tc{"POST", "/v1/users/alice/memories", `{"text":"x","expires_at":"` + v + `"}`, "expires_at"},
			tc{"PUT", "/v1/users/alice/memories/" + memID, `{"text":"x","expires_at":"` + v + `"}`, "expires_at"},
			tc{"POST", "/v1/users/alice/facts", `{"subject":"a","predicate":"p","object":"b","valid_from":"` + v + `"}`, "valid_from"},
			tc{"POST", "/v1/users/alice/facts", `{"subject":"a","predicate":"p","object":"b","valid_to":"` + v + `"}`, "valid_to"},
			tc{"POST", "/v1/users/alice/traverse", `{"from":["a"],"as_of":"` + v + `"}`, "as_of"},
			tc{"POST", "/v1/recall", `{"user":"alice","text":"a","since":"` + v + `"}`, "since"},
			tc{"POST", "/v1/recall", `{"user":"alice","text":"a","until":"` + v + `"}`, "until"},
			tc{"POST", "/v1/recall", `{"user":"alice","text":"a","now":"` + v + `"}`, "now"},
			tc{"GET", "/v1/users/alice/facts?as_of=" + q, "", "as_of"},
			tc{"GET", msgs + "?since=" + q, "", "since"},
			tc{"GET", msgs + "?until=" + q, "", "until"},
		)
	}
	for _, c := range cases {
		var body any
		if c.body != "" {
			body = c.body
		}
		r := s.call(c.method, c.path, tokenAcme, body)
		if r.status != http.StatusBadRequest || !strings.Contains(string(r.body), c.field) {
			t.Errorf("%s %s %s = %d %s, want 400 naming %s", c.method, c.path, c.body, r.status, r.body, c.field)
		}
	}
	var msgPage messagesResponse
	s.must(200, "GET", msgs, tokenAcme, nil).decode(t, &msgPage)
	var facts factsResponse
	s.must(200, "GET", "/v1/users/alice/facts", tokenAcme, nil).decode(t, &facts)
	s.must(200, "GET", "/v1/users/alice/memories", tokenAcme, nil).decode(t, &page)
	if len(msgPage.Messages) != 0 || len(facts.Facts) != 0 || len(page.Memories) != 1 || !page.Memories[0].ExpiresAt.IsZero() {
		t.Errorf("written: %d messages, %d facts, %d memories (%v)", len(msgPage.Messages), len(facts.Facts), len(page.Memories), page.Memories)
	}
	// null, like a field left out, is no time.
	s.must(201, "POST", msgs, tokenAcme, `{"messages":[{"role":"user","content":"a","time":null}]}`)
	s.must(201, "POST", "/v1/users/alice/memories", tokenAcme, `{"text":"y","expires_at":null}`)
}
