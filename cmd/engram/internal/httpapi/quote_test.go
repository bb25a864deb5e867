package httpapi

import (
	"io"
	"net/http"
	"strings"
	"testing"
	"unicode/utf8"
)

// TestErrorsQuoteBounded: an error names the bad value by its first bytes
// and its size, never whole (issue 26: a 3 MiB bad time came back in a
// 6 MB error). Every place a client's value reaches an error message: body
// fields the handler checks, fields the store checks, JSON it cannot read,
// query parameters and headers.
func TestErrorsQuoteBounded(t *testing.T) {
	s := newTestServer(t, nil, nil)
	big := strings.Repeat("x", 1<<20)
	bigQ := strings.Repeat("x", 200<<10)
	msgs := "/v1/users/alice/sessions/s/messages"
	cases := []struct {
		method, path, body string
		header             string // a Content-Type
	}{
		{"POST", msgs, `{"messages":[{"role":"user","content":"hi","time":"` + big + `"}]}`, ""},
		{"POST", msgs, `{"messages":[{"role":"` + big[:100<<10] + `","content":"hi"}]}`, ""},
		{"POST", msgs, `{"messages":[{"role":"user","content":"hi","` + big + `":1}]}`, ""},
		{"POST", msgs, `{"messages":[{"role":"user","content":"hi","name":1` + strings.Repeat("0", 1<<20) + `}]}`, ""},
		{"POST", "/v1/users/alice/memories", `{"text":"a","expires_at":"` + big + `"}`, ""},
		{"POST", "/v1/users/alice/memories", `{"text":"a","kind":"` + big + `"}`, ""},
		{"POST", "/v1/users/alice/traverse", `{"from":["a"],"direction":"` + big + `"}`, ""},
		{"POST", "/v1/recall", `{"user":"alice","text":"a","half_life":"` + big + `"}`, ""},
		{"POST", "/v1/recall", `{"user":"alice","text":"a","retrieval":"` + big + `"}`, ""},
		{"POST", "/v1/recall", `{"user":"alice","text":"a","sources":["` + big + `"]}`, ""},
		{"GET", msgs + "?since=" + bigQ, "", ""},
		{"GET", msgs + "?limit=" + bigQ, "", ""},
		{"GET", msgs + "?reverse=" + bigQ, "", ""},
		{"GET", "/v1/users/alice/memories?kind=" + bigQ, "", ""},
		{"POST", "/v1/users/alice/memories", `{"text":"a"}`, "text/" + strings.Repeat("x", 60<<10)},
	}
	for _, c := range cases {
		req, err := http.NewRequest(c.method, s.url+c.path, strings.NewReader(c.body))
		if err != nil {
			t.Fatal(err)
		}
		req.Header.Set("Authorization", "Bearer "+tokenAcme)
		req.Header.Set("Content-Type", "application/json")
		if c.header != "" {
			req.Header.Set("Content-Type", c.header)
		}
		r := s.do(req)
		name := c.method + " " + c.path[:min(len(c.path), 60)] + " " + c.body[:min(len(c.body), 60)]
		if r.status != http.StatusBadRequest && r.status != http.StatusUnsupportedMediaType {
			t.Errorf("%s = %d", name, r.status)
		}
		if len(r.body) > 600 || !utf8.Valid(r.body) {
			t.Errorf("%s: a %d-byte error: %.300s", name, len(r.body), r.body)
		}
	}
}

// do sends req and reads the answer.
func (s *testServer) do(req *http.Request) response {
	s.t.Helper()
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", req.Method, req.URL.Path, err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: b}
}

func TestQuote(t *testing.T) {
	if got := quote("a\"b"); got != `"a\"b"` {
		t.Errorf("quote = %s", got)
	}
	long := strings.Repeat("é", 80) // 160 bytes
	got := quote(long)
	if !strings.HasPrefix(got, `"`+strings.Repeat("é", 50)+`"`) || !strings.HasSuffix(got, "(160 bytes)") {
		t.Errorf("quote(160 bytes) = %s", got)
	}
}
