package httpapi

import (
	"bufio"
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

// accessLines returns the access-log records written so far.
func accessLines(t *testing.T, s *testServer) []map[string]any {
	t.Helper()
	var out []map[string]any
	sc := bufio.NewScanner(strings.NewReader(s.log.String()))
	for sc.Scan() {
		var rec map[string]any
		if err := json.Unmarshal(sc.Bytes(), &rec); err != nil {
			t.Fatalf("log line %q: %v", sc.Text(), err)
		}
		if rec["msg"] == "http request" {
			out = append(out, rec)
		}
	}
	return out
}

// TestEscapedPathIDs: a path whose ids hold escaped dots and slashes
// (POST /v1/users/..%2Fevil/memories) is answered by the handler that ran
// for it, and that handler refuses the id. Before, the handler ran and
// wrote for the user "../evil" (or deleted it), and then the client was
// told 404, because the check for an unclean path used the decoded path
// while the router matched the escaped one.
func TestEscapedPathIDs(t *testing.T) {
	s := newTestServer(t, nil, nil)
	memBody := `{"text":"planted through an escaped path"}`
	msgBody := `{"messages":[{"role":"user","content":"planted"}]}`
	requests := []struct{ method, path, body string }{
		{"POST", "/v1/users/..%2Fevil/memories", memBody},
		{"POST", "/v1/users/%2E%2E/memories", memBody},
		{"POST", "/v1/users/%2E/memories", memBody},
		{"POST", "/v1/users/a%2Fb/memories", memBody},
		{"POST", "/v1/users/..%2F..%2Fx/facts", `{"subject":"a","predicate":"p","object":"b"}`},
		{"POST", "/v1/users/alice/sessions/..%2Fs/messages", msgBody},
		{"POST", "/v1/users/alice/sessions/%2E%2E/messages", msgBody},
		{"DELETE", "/v1/users/..%2Fevil", ""},
		{"DELETE", "/v1/users/%2E%2E", ""},
		{"DELETE", "/v1/users/alice/sessions/%2E%2E", ""},
	}
	for _, rq := range requests {
		var body any
		if rq.body != "" {
			body = rq.body
		}
		before := len(accessLines(t, s))
		r := s.call(rq.method, rq.path, tokenAcme, body)
		if r.status != http.StatusBadRequest || r.errorCode() != "invalid_scope" {
			t.Errorf("%s %s = %d %s, want 400 invalid_scope", rq.method, rq.path, r.status, r.body)
		}
		// One request, one handler: exactly one access-log record, with
		// the status the client got.
		lines := accessLines(t, s)[before:]
		if len(lines) != 1 {
			t.Errorf("%s %s: %d access-log records, want 1: %v", rq.method, rq.path, len(lines), lines)
			continue
		}
		if got := lines[0]["status"]; got != float64(r.status) {
			t.Errorf("%s %s: the log says status %v, the client got %d", rq.method, rq.path, got, r.status)
		}
	}
	users, err := s.store.Users(t.Context(), memory.Scope{Tenant: "acme"}, memory.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(users) != 0 {
		t.Errorf("users written through escaped paths: %q", users)
	}
}

// TestAuthBeforeRouting: under /v1/ and /mcp, a request without a valid
// token is answered 401 whatever its path, so an unauthenticated caller
// cannot tell which routes exist (or probe them with odd paths).
func TestAuthBeforeRouting(t *testing.T) {
	s := newTestServer(t, nil, nil)
	for _, tc := range []struct{ method, path string }{
		{"GET", "/v1/nothing"},
		{"GET", "/v1"},
		{"GET", "/v1/"},
		{"GET", "/v1/users/alice/nothing"},
		{"PATCH", "/v1/users/alice/memories"},
		{"DELETE", "/v1/users/..%2Fevil"},
		{"POST", "/v1/users/%2E%2E/memories"},
		{"GET", "/v1//users/alice/sessions"},
		{"GET", "/v1/users/alice/../bob/sessions"},
		{"GET", "/v1/users/alice/sessions/"},
		{"POST", "/mcp"},
		{"GET", "/mcp/anything"},
		{"GET", "/V1/users/alice/sessions"},
	} {
		req, err := http.NewRequest(tc.method, s.url+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = tc.path // sent as written, unclean and escaped
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatalf("%s %s: %v", tc.method, tc.path, err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusUnauthorized {
			t.Errorf("%s %s without a token = %d, want 401", tc.method, tc.path, resp.StatusCode)
		}
		if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
			t.Errorf("%s %s: Content-Type %q", tc.method, tc.path, ct)
		}
	}
	// Outside the API, unknown paths are still 404, and public routes
	// need no token.
	s.must(404, "GET", "/nothing", "", nil)
	s.must(200, "GET", "/healthz", "", nil)
	// With a token, the same paths route as before.
	s.must(404, "GET", "/v1/nothing", tokenAcme, nil)
	s.must(405, "PATCH", "/v1/users/alice/memories", tokenAcme, `{}`)
}

// TestEveryRouteOneHandler: for every route of the table, with each path
// id spelt as an escaped dot segment or slash, the request produces one
// access-log record whose status is the one the client got, and nothing
// succeeds.
func TestEveryRouteOneHandler(t *testing.T) {
	s := newTestServer(t, nil, nil)
	for _, rt := range s.h.routes {
		if !strings.Contains(rt.path, "{") {
			continue
		}
		for _, id := range []string{"%2E%2E", "%2E", "..%2Fx", "a%2Fb", "%2E%2E%2F%2E%2E"} {
			p := strings.NewReplacer("{user}", id, "{session}", id, "{id}", id).Replace(rt.path)
			var body any
			if rt.body {
				body = "{}"
			}
			before := len(accessLines(t, s))
			r := s.call(rt.method, p, tokenAcme, body)
			if r.status < 400 {
				t.Errorf("%s %s = %d: %s", rt.method, p, r.status, r.body)
			}
			lines := accessLines(t, s)[before:]
			if len(lines) != 1 || lines[0]["status"] != float64(r.status) {
				t.Errorf("%s %s = %d, access log %v", rt.method, p, r.status, lines)
			}
		}
	}
}

// TestUncleanPathNoRedirect: under /v1/ (and /mcp) a path with dot
// segments or doubled slashes answers 400 JSON, never the mux's redirect to
// its clean form (issue 26: GET /v1/users/../sessions answered 307 to
// /v1/sessions with an empty body), and the access log has the 400.
// Outside the API the mux's redirect stays.
func TestUncleanPathNoRedirect(t *testing.T) {
	s := newTestServer(t, nil, nil)
	tr := &http.Transport{}
	defer tr.CloseIdleConnections()
	send := func(method, path, token string) (*http.Response, []byte) {
		req, err := http.NewRequest(method, s.url+"/", nil)
		if err != nil {
			t.Fatal(err)
		}
		req.URL.Opaque = path // sent as written
		if token != "" {
			req.Header.Set("Authorization", "Bearer "+token)
		}
		resp, err := tr.RoundTrip(req) // a client would follow a redirect
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp, body
	}
	for _, p := range []string{
		"/v1/users/../sessions",
		"/v1/users/alice/sessions/s1/../s1/messages",
		"/v1//users/alice/sessions",
		"/v1/users/alice/./sessions",
		"/mcp/../mcp",
	} {
		resp, body := send("GET", p, tokenAcme)
		if resp.StatusCode != http.StatusBadRequest || resp.Header.Get("Location") != "" ||
			resp.Header.Get("Content-Type") != "application/json" || !strings.Contains(string(body), `"code":"unclean_path"`) {
			t.Errorf("GET %s = %d, Location %q, %s", p, resp.StatusCode, resp.Header.Get("Location"), body)
		}
	}
	if !strings.Contains(s.log.String(), `"route":"unmatched","status":400`) {
		t.Errorf("the refusal is not logged:\n%s", s.log.String())
	}
	if resp, _ := send("GET", "/./healthz", ""); resp.StatusCode != http.StatusTemporaryRedirect && resp.StatusCode != http.StatusMovedPermanently {
		t.Errorf("GET /./healthz = %d, want the mux's redirect", resp.StatusCode)
	}
}
