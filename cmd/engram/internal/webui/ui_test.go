package webui

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/memory"
)

const (
	tokenAcme   = "acme-token-0123456789abcdef"
	tokenGlobex = "globex-token-0123456789abcdef"
)

// lockedBuffer is a log sink safe for the server's goroutines.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *lockedBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *lockedBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// server is the inspector in front of the API over an in-memory store.
type server struct {
	t     *testing.T
	url   string
	ui    *UI
	store *memory.Store
	log   *lockedBuffer
}

func newServer(t *testing.T) *server {
	t.Helper()
	return newServerTokens(t, `{"tokens":[{"token":"`+tokenAcme+`","tenant":"acme"},{"token":"`+tokenGlobex+`","tenant":"globex"}]}`)
}

// newServerTokens is newServer with a tokens file of its own.
func newServerTokens(t *testing.T, tokensFile string) *server {
	t.Helper()
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	tokens, err := httpapi.ParseTokens([]byte(tokensFile))
	if err != nil {
		t.Fatal(err)
	}
	logs := &lockedBuffer{}
	logger := slog.New(slog.NewTextHandler(logs, nil))
	api, err := httpapi.New(store, &httpapi.Options{Tokens: tokens, Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	ui, err := New(api, tokens, &Options{Logger: logger})
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	t.Cleanup(func() {
		srv.Close()
		store.Close()
	})
	ctx := context.Background()
	for _, sc := range []memory.Scope{{Tenant: "acme", User: "alice"}, {Tenant: "globex", User: "gina"}} {
		if _, err := store.Remember(ctx, sc, memory.Memory{Kind: memory.KindFact, Text: sc.Tenant + " secret of " + sc.User}); err != nil {
			t.Fatal(err)
		}
	}
	return &server{t: t, url: srv.URL, ui: ui, store: store, log: logs}
}

// browser is a client holding one session's cookie and CSRF token.
type browser struct {
	s      *server
	cookie *http.Cookie
	csrf   string
	origin string // sent as Origin on writes; "" sends none
}

// do sends a request without following redirects.
func (s *server) do(method, path string, body io.Reader, hdr map[string]string, c *http.Cookie) *http.Response {
	s.t.Helper()
	req, err := http.NewRequest(method, s.url+path, body)
	if err != nil {
		s.t.Fatal(err)
	}
	for k, v := range hdr {
		if k == "Host" {
			req.Host = v
			continue
		}
		req.Header.Set(k, v)
	}
	if c != nil {
		req.AddCookie(c)
	}
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	resp, err := client.Do(req)
	if err != nil {
		s.t.Fatal(err)
	}
	s.t.Cleanup(func() { resp.Body.Close() })
	return resp
}

// login posts the form and returns the redirect target and the browser.
func (s *server) login(token string) (string, *browser) {
	s.t.Helper()
	resp := s.do("POST", "/ui/login", strings.NewReader(url.Values{"token": {token}}.Encode()),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": s.url}, nil)
	if resp.StatusCode != http.StatusSeeOther {
		s.t.Fatalf("login answered %d", resp.StatusCode)
	}
	b := &browser{s: s, origin: s.url}
	for _, c := range resp.Cookies() {
		if c.Name == cookieName {
			b.cookie = c
		}
	}
	if b.cookie == nil {
		return resp.Header.Get("Location"), nil
	}
	var sess struct{ Tenant, CSRF string }
	r := s.do("GET", "/ui/session", nil, nil, b.cookie)
	if err := json.NewDecoder(r.Body).Decode(&sess); err != nil {
		s.t.Fatal(err)
	}
	b.csrf = sess.CSRF
	return resp.Header.Get("Location"), b
}

func (b *browser) call(method, path string, body any) *http.Response {
	b.s.t.Helper()
	hdr := map[string]string{}
	if b.csrf != "" {
		hdr[CSRFHeader] = b.csrf
	}
	if b.origin != "" {
		hdr["Origin"] = b.origin
	}
	var r io.Reader
	if body != nil {
		j, _ := json.Marshal(body)
		r = bytes.NewReader(j)
		hdr["Content-Type"] = "application/json"
	}
	return b.s.do(method, path, r, hdr, b.cookie)
}

func readAll(t *testing.T, r *http.Response) string {
	t.Helper()
	b, err := io.ReadAll(r.Body)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestLoginAndSession: the page needs a session; a wrong token is refused
// without a cookie; a right one gives an HttpOnly, SameSite=Strict cookie
// for /ui/ and a CSRF token; the token is never in a URL or the log.
func TestLoginAndSession(t *testing.T) {
	s := newServer(t)
	if r := s.do("GET", "/ui/", nil, nil, nil); r.StatusCode != http.StatusSeeOther || r.Header.Get("Location") != "/ui/login" {
		t.Fatalf("GET /ui/ signed out = %d to %q, want 303 to /ui/login", r.StatusCode, r.Header.Get("Location"))
	}
	if r := s.do("GET", "/ui/login", nil, nil, nil); r.StatusCode != http.StatusOK || !strings.Contains(readAll(t, r), `id="login"`) {
		t.Fatalf("GET /ui/login = %d", r.StatusCode)
	}
	if loc, b := s.login("wrong-token-0123456789"); b != nil || loc != "/ui/login?failed=1" {
		t.Fatalf("a wrong token gave a session (%v) or went to %q", b != nil, loc)
	}
	loc, b := s.login(tokenAcme)
	if b == nil || loc != "/ui/" {
		t.Fatalf("sign-in went to %q with session %v", loc, b != nil)
	}
	if c := b.cookie; !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != "/ui/" || c.Value == tokenAcme {
		t.Errorf("cookie %+v, want HttpOnly, SameSite=Strict, Path /ui/ and no token", c)
	}
	r := s.do("GET", "/ui/", nil, nil, b.cookie)
	if r.StatusCode != http.StatusOK || r.Header.Get("Cache-Control") != "no-store" {
		t.Fatalf("GET /ui/ signed in = %d, Cache-Control %q", r.StatusCode, r.Header.Get("Cache-Control"))
	}
	if b.csrf == "" {
		t.Fatal("no CSRF token from /ui/session")
	}
	if strings.Contains(s.log.String(), tokenAcme) || strings.Contains(s.log.String(), "wrong-token") {
		t.Errorf("the log holds a token:\n%s", s.log.String())
	}
	if !strings.Contains(s.log.String(), "signed in") {
		t.Errorf("the sign-in was not logged:\n%s", s.log.String())
	}
	if r := s.do("GET", "/ui/session", nil, nil, nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/ui/session signed out = %d, want 401", r.StatusCode)
	}
	if r := s.do("GET", "/ui/session", nil, nil, &http.Cookie{Name: cookieName, Value: "forged"}); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/ui/session with a forged cookie = %d, want 401", r.StatusCode)
	}
}

// TestSecurityHeaders: every inspector response has the strict CSP and
// its companions, signed in or not, found or not.
func TestSecurityHeaders(t *testing.T) {
	s := newServer(t)
	_, b := s.login(tokenAcme)
	for _, p := range []string{"/ui", "/ui/", "/ui/login", "/ui/session", "/ui/static/login.html", "/ui/nope", "/ui/api/v1/users", "/ui/api/v1/nope"} {
		for _, c := range []*http.Cookie{nil, b.cookie} {
			r := s.do("GET", p, nil, nil, c)
			if got := r.Header.Get("Content-Security-Policy"); got != CSP {
				t.Errorf("%s: CSP %q", p, got)
			}
			if r.Header.Get("X-Content-Type-Options") != "nosniff" || r.Header.Get("Referrer-Policy") != "same-origin" || r.Header.Get("X-Frame-Options") != "DENY" {
				t.Errorf("%s: headers %v", p, r.Header)
			}
		}
	}
	if !strings.Contains(CSP, "script-src 'self'") || strings.Contains(CSP, "unsafe") {
		t.Errorf("CSP %q allows inline code", CSP)
	}
}

// TestCSRF: a state-changing call needs the session's CSRF token and this
// origin; without either it is refused and changes nothing.
func TestCSRF(t *testing.T) {
	s := newServer(t)
	_, b := s.login(tokenAcme)
	body := map[string]any{"kind": "fact", "text": "planted"}
	count := func() int {
		ms, err := s.store.Memories(context.Background(), memory.Scope{Tenant: "acme", User: "alice"}, memory.MemoriesOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return len(ms)
	}
	before := count()
	noToken := &browser{s: s, cookie: b.cookie, origin: s.url}
	wrongToken := &browser{s: s, cookie: b.cookie, csrf: "x" + b.csrf, origin: s.url}
	otherSite := &browser{s: s, cookie: b.cookie, csrf: b.csrf, origin: "https://evil.example"}
	for name, c := range map[string]*browser{"no token": noToken, "wrong token": wrongToken, "other origin": otherSite} {
		if r := c.call("POST", "/ui/api/v1/users/alice/memories", body); r.StatusCode != http.StatusForbidden {
			t.Errorf("%s: POST = %d, want 403", name, r.StatusCode)
		}
		if r := c.call("POST", "/ui/logout", nil); r.StatusCode != http.StatusForbidden {
			t.Errorf("%s: logout = %d, want 403", name, r.StatusCode)
		}
	}
	// A cross-site fetch names itself in Sec-Fetch-Site even without Origin.
	r := s.do("DELETE", "/ui/api/v1/users/alice", nil, map[string]string{CSRFHeader: b.csrf, "Sec-Fetch-Site": "cross-site"}, b.cookie)
	if r.StatusCode != http.StatusForbidden {
		t.Errorf("cross-site DELETE = %d, want 403", r.StatusCode)
	}
	if got := count(); got != before {
		t.Fatalf("%d memories after refused writes, want %d", got, before)
	}
	if r := b.call("POST", "/ui/api/v1/users/alice/memories", body); r.StatusCode != http.StatusCreated {
		t.Fatalf("POST with the token = %d: %s", r.StatusCode, readAll(t, r))
	}
	if got := count(); got != before+1 {
		t.Fatalf("%d memories, want %d", got, before+1)
	}
	// A sign-in posted from another site is refused too.
	r = s.do("POST", "/ui/login", strings.NewReader("token="+tokenAcme), map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Origin": "https://evil.example"}, nil)
	if r.StatusCode != http.StatusForbidden || len(r.Cookies()) != 0 {
		t.Errorf("cross-site sign-in = %d with %d cookies, want 403 and none", r.StatusCode, len(r.Cookies()))
	}
}

// TestIsolation: a session reaches its own tenant only, through every
// path the inspector hands to the API.
func TestIsolation(t *testing.T) {
	s := newServer(t)
	_, g := s.login(tokenGlobex)
	for _, p := range []string{"/ui/api/v1/users", "/ui/api/v1/users/alice/memories", "/ui/api/v1/users/alice/sessions", "/ui/api/v1/users/alice/graph"} {
		r := g.call("GET", p, nil)
		if body := readAll(t, r); strings.Contains(body, "acme") || strings.Contains(body, "alice") && p == "/ui/api/v1/users" {
			t.Errorf("globex read %s: %d %s", p, r.StatusCode, body)
		}
	}
	r := g.call("GET", "/ui/api/v1/users", nil)
	if body := readAll(t, r); !strings.Contains(body, `"gina"`) {
		t.Errorf("globex's users: %s", body)
	}
	// Erasing "alice" as globex erases globex's alice (none), never acme's.
	if r := g.call("DELETE", "/ui/api/v1/users/alice", nil); r.StatusCode/100 != 2 {
		t.Fatalf("DELETE = %d", r.StatusCode)
	}
	if ms, _ := s.store.Memories(context.Background(), memory.Scope{Tenant: "acme", User: "alice"}, memory.MemoriesOptions{}); len(ms) != 1 {
		t.Fatalf("acme's alice has %d memories after globex's erasure, want 1", len(ms))
	}
}

// TestPaths: only /ui/api/v1/ reaches the API; odd spellings are refused,
// not cleaned; other paths go to the API as they are.
func TestPaths(t *testing.T) {
	s := newServer(t)
	_, b := s.login(tokenAcme)
	for _, p := range []string{"/ui/api/mcp", "/ui/api/metrics", "/ui/api/healthz", "/ui/api/v1/../../ui/session",
		"/ui/api//v1/users", "/ui/static/../ui.go", "/ui/static/%2e%2e/ui.go", "/ui/api/v1%2fusers", "/ui/static/", "/ui/elsewhere"} {
		r := b.call("GET", p, nil)
		if r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, r.StatusCode)
		}
	}
	if r := s.do("GET", "/v1/users", nil, map[string]string{"Authorization": "Bearer " + tokenAcme}, nil); r.StatusCode != http.StatusOK {
		t.Errorf("the API itself = %d", r.StatusCode)
	}
	// The cookie alone never opens the API outside /ui/api/.
	if r := s.do("GET", "/v1/users", nil, nil, b.cookie); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("/v1/users with the cookie = %d, want 401", r.StatusCode)
	}
	if r := s.do("GET", "/ui", nil, nil, nil); r.StatusCode != http.StatusMovedPermanently || r.Header.Get("Location") != "/ui/" {
		t.Errorf("/ui = %d to %q", r.StatusCode, r.Header.Get("Location"))
	}
	r := b.call("GET", "/ui/static/login.html", nil)
	etag := r.Header.Get("ETag")
	if r.StatusCode != http.StatusOK || etag == "" {
		t.Fatalf("static file = %d, ETag %q", r.StatusCode, etag)
	}
	if r := s.do("GET", "/ui/static/login.html", nil, map[string]string{"If-None-Match": etag}, nil); r.StatusCode != http.StatusNotModified {
		t.Errorf("revalidation = %d, want 304", r.StatusCode)
	}
}

// TestAdminRoutesRefused: an admin token signed into the inspector does not
// reach the store-wide admin routes (every tenant's data) through
// /ui/api/, however the path is spelled; the page uses none of them. The
// same token still reaches them with its bearer, and its tenant's routes
// through the inspector.
func TestAdminRoutesRefused(t *testing.T) {
	s := newServerTokens(t, `{"tokens":[{"token":"`+tokenAcme+`","tenant":"acme","admin":true}]}`)
	bearer := map[string]string{"Authorization": "Bearer " + tokenAcme}
	if r := s.do("GET", "/v1/admin/stats", nil, bearer, nil); r.StatusCode != http.StatusOK {
		t.Fatalf("GET /v1/admin/stats with the admin bearer = %d, want 200 (the test needs an admin token)", r.StatusCode)
	}
	_, b := s.login(tokenAcme)
	for _, c := range []struct{ method, path string }{
		{"GET", "/ui/api/v1/admin/stats"},
		{"GET", "/ui/api/v1/admin/backup"},
		{"GET", "/ui/api/v1/admin/export?format=jsonl"},
		{"GET", "/ui/api/v1/admin/export?format=nquads&tenant=globex"},
		{"POST", "/ui/api/v1/admin/compact"},
		{"POST", "/ui/api/v1/admin/flush"},
		{"GET", "/ui/api/v1/admin"},
		{"GET", "/ui/api/v1/admin/"},
		{"GET", "/ui/api/v1/%61dmin/stats"},
		{"GET", "/ui/api/v1/ADMIN/stats"},
		{"HEAD", "/ui/api/v1/admin/backup"},
	} {
		r := b.call(c.method, c.path, nil)
		body := readAll(t, r)
		if r.StatusCode != http.StatusForbidden || (c.method != "HEAD" && !strings.Contains(body, `"code":"admin_route"`)) {
			t.Errorf("%s %s through the inspector = %d %.200s, want 403 admin_route", c.method, c.path, r.StatusCode, body)
		}
	}
	if r := b.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Errorf("the admin token's tenant routes through the inspector = %d, want 200", r.StatusCode)
	}
}

// TestSessionEnds: a session ends at logout and after SessionTTL idle.
func TestSessionEnds(t *testing.T) {
	s := newServer(t)
	_, b := s.login(tokenAcme)
	if r := b.call("POST", "/ui/logout", nil); r.StatusCode != http.StatusSeeOther {
		t.Fatalf("logout = %d", r.StatusCode)
	}
	if r := b.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("after logout = %d, want 401", r.StatusCode)
	}

	_, b = s.login(tokenAcme)
	var mu sync.Mutex
	now := time.Now()
	s.ui.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	advance := func(d time.Duration) { mu.Lock(); now = now.Add(d); mu.Unlock() }
	advance(DefaultSessionTTL - time.Minute)
	if r := b.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("a used session ended: %d", r.StatusCode)
	}
	advance(DefaultSessionTTL - time.Minute) // idle from the last request
	if r := b.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("a session in use ended: %d", r.StatusCode)
	}
	advance(DefaultSessionTTL)
	if r := b.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusUnauthorized {
		t.Fatalf("an idle session lived on: %d", r.StatusCode)
	}
}

// TestIDsWithReservedCharacters: ids holding characters a browser escapes
// in a path (encodeURIComponent) but Go leaves bare are reachable through
// the inspector as through the API; escaped slashes still are not.
func TestIDsWithReservedCharacters(t *testing.T) {
	s := newServer(t)
	_, b := s.login(tokenAcme)
	for _, id := range []string{"bob@example.com", "slack:C123", "a+b", "a,b", "a;b", "a=b", "a$b", "a&b", "a b", "é"} {
		if _, err := s.store.Remember(context.Background(), memory.Scope{Tenant: "acme", User: id}, memory.Memory{Kind: memory.KindFact, Text: "held by " + id}); err != nil {
			t.Fatal(err)
		}
		r := b.call("GET", "/ui/api/v1/users/"+url.PathEscape(id)+"/memories", nil)
		body := readAll(t, r)
		if r.StatusCode != http.StatusOK || !strings.Contains(body, "held by") {
			t.Errorf("%q: %d %s", id, r.StatusCode, body)
		}
		esc := strings.NewReplacer("@", "%40", ":", "%3A", "+", "%2B", ",", "%2C", ";", "%3B", "=", "%3D", "$", "%24", "&", "%26").Replace(url.PathEscape(id))
		r = b.call("GET", "/ui/api/v1/users/"+esc+"/memories", nil)
		if body := readAll(t, r); r.StatusCode != http.StatusOK || !strings.Contains(body, "held by") {
			t.Errorf("%q escaped as %s: %d %s", id, esc, r.StatusCode, body)
		}
	}
	for _, p := range []string{"/ui/api/v1/users/a%2Fb/memories", "/ui/api/v1/users/a%5Cb/memories", "/ui/api/v1/users/%2e%2e/memories"} {
		if r := b.call("GET", p, nil); r.StatusCode != http.StatusNotFound {
			t.Errorf("GET %s = %d, want 404", p, r.StatusCode)
		}
	}
}

// TestSessionsPerToken: signing in again and again with one token ends
// that token's own oldest sessions, never another tenant's; when the
// whole table is full of live sessions, a sign-in is refused instead.
func TestSessionsPerToken(t *testing.T) {
	s := newServer(t)
	s.ui.maxPerToken = 2
	s.ui.max = 4
	_, acme := s.login(tokenAcme)
	var g []*browser
	for range 5 {
		_, b := s.login(tokenGlobex)
		g = append(g, b)
	}
	if r := acme.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Fatalf("globex's sign-ins ended acme's session: %d", r.StatusCode)
	}
	if r := g[0].call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusUnauthorized {
		t.Errorf("globex's oldest session lived past its cap: %d", r.StatusCode)
	}
	if r := g[4].call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Errorf("globex's newest session: %d", r.StatusCode)
	}
	s.ui.max = 3 // acme 1 + globex 2: full
	r := s.do("POST", "/ui/login", strings.NewReader("token="+tokenAcme), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, nil)
	if r.StatusCode != http.StatusServiceUnavailable || len(r.Cookies()) != 0 {
		t.Errorf("sign-in with a full table = %d, want 503 and no cookie", r.StatusCode)
	}
	if r := acme.call("GET", "/ui/api/v1/users", nil); r.StatusCode != http.StatusOK {
		t.Errorf("a refused sign-in ended a session: %d", r.StatusCode)
	}
}

// TestSessionCookieHygiene: two session cookies in one request are
// refused (cookie tossing); signing in again ends the session the browser
// had; a session ends after its absolute lifetime however busy.
func TestSessionCookieHygiene(t *testing.T) {
	s := newServer(t)
	_, a := s.login(tokenAcme)
	_, g := s.login(tokenGlobex)
	req := func(cookies ...*http.Cookie) int {
		rq, _ := http.NewRequest("GET", s.url+"/ui/api/v1/users", nil)
		for _, c := range cookies {
			rq.AddCookie(c)
		}
		resp, err := http.DefaultClient.Do(rq)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := req(g.cookie, a.cookie); got != http.StatusUnauthorized {
		t.Errorf("two session cookies = %d, want 401", got)
	}
	// Signing in again from a browser with a session replaces it.
	resp := s.do("POST", "/ui/login", strings.NewReader("token="+tokenAcme), map[string]string{"Content-Type": "application/x-www-form-urlencoded"}, a.cookie)
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatal(resp.StatusCode)
	}
	if got := req(a.cookie); got != http.StatusUnauthorized {
		t.Errorf("the session replaced by a new sign-in = %d, want 401", got)
	}
	var mu sync.Mutex
	now := time.Now()
	s.ui.now = func() time.Time { mu.Lock(); defer mu.Unlock(); return now }
	_, b := s.login(tokenAcme)
	for range 16 {
		mu.Lock()
		now = now.Add(DefaultSessionTTL - time.Hour)
		mu.Unlock()
		req(b.cookie)
	}
	if got := req(b.cookie); got != http.StatusUnauthorized {
		t.Errorf("a session in use for %s = %d, want 401 after DefaultMaxSessionAge", 16*(DefaultSessionTTL-time.Hour), got)
	}
}

// TestAllowedHosts: with Options.Hosts set, a request naming another
// host (a DNS-rebinding page) is refused before anything else.
func TestAllowedHosts(t *testing.T) {
	s := newServer(t)
	s.ui.hosts = map[string]bool{strings.TrimPrefix(s.url, "http://"): true}
	for _, p := range []string{"/ui/login", "/ui/"} {
		r := s.do("GET", p, nil, map[string]string{"Host": "evil.example:80"}, nil)
		if r.StatusCode != http.StatusMisdirectedRequest {
			t.Errorf("GET %s for another host = %d, want 421", p, r.StatusCode)
		}
	}
	rq, _ := http.NewRequest("POST", s.url+"/ui/login", strings.NewReader("token="+tokenAcme))
	rq.Host = "evil.example:1234"
	rq.Header.Set("Origin", "http://evil.example:1234")
	rq.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	resp, err := (&http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}).Do(rq)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusMisdirectedRequest || len(resp.Cookies()) != 0 {
		t.Errorf("a rebinding sign-in = %d with %d cookies, want 421 and none", resp.StatusCode, len(resp.Cookies()))
	}
	if r := s.do("GET", "/ui/login", nil, nil, nil); r.StatusCode != http.StatusOK {
		t.Errorf("the allowed host = %d", r.StatusCode)
	}
	// Every path, not only the inspector's: a rebinding page could read
	// /metrics, /healthz and /openapi.json, which need no token (issue 26).
	for _, p := range []string{"/metrics", "/healthz", "/openapi.json", "/v1/users", "/ui", "/nothing"} {
		r := s.do("GET", p, nil, map[string]string{"Host": "evil.example:80", "Authorization": "Bearer " + tokenAcme}, nil)
		if r.StatusCode != http.StatusMisdirectedRequest || r.Header.Get("Content-Type") != "application/json" {
			t.Errorf("GET %s for another host = %d %s, want 421 JSON", p, r.StatusCode, r.Header.Get("Content-Type"))
		}
		if r := s.do("GET", p, nil, map[string]string{"Authorization": "Bearer " + tokenAcme}, nil); r.StatusCode == http.StatusMisdirectedRequest {
			t.Errorf("GET %s for the allowed host = 421", p)
		}
	}
	// A name without a port allows that name on any port.
	s.ui.hosts = map[string]bool{"memory.example": true}
	if r := s.do("GET", "/healthz", nil, map[string]string{"Host": "memory.example:8443"}, nil); r.StatusCode != http.StatusOK {
		t.Errorf("memory.example:8443 with memory.example allowed = %d", r.StatusCode)
	}
	if r := s.do("GET", "/healthz", nil, map[string]string{"Host": "memory.example.evil:8443"}, nil); r.StatusCode != http.StatusMisdirectedRequest {
		t.Errorf("memory.example.evil:8443 with memory.example allowed = %d", r.StatusCode)
	}
}

// TestProxyHeaders: what reaches the API is the session's token, not
// the client's own Authorization, routing or forwarding headers; OPTIONS
// needs the CSRF token like any method but GET and HEAD.
func TestProxyHeaders(t *testing.T) {
	var got http.Header
	api := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { got = r.Header.Clone() })
	tokens, _ := httpapi.ParseTokens([]byte(`{"tokens":[{"token":"` + tokenAcme + `","tenant":"acme"}]}`))
	ui, err := New(api, tokens, nil)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(ui)
	defer srv.Close()
	s := &server{t: t, url: srv.URL, ui: ui}
	_, b := s.login(tokenAcme)
	s.do("GET", "/ui/api/v1/users", nil, map[string]string{"Authorization": "Bearer other", "X-Engram-Forwarded": "n1", "X-Forwarded-For": "1.2.3.4", "X-Forwarded-Host": "evil"}, b.cookie)
	if got.Get("Authorization") != "Bearer "+tokenAcme || got.Get("Cookie") != "" || got.Get(CSRFHeader) != "" ||
		got.Get("X-Engram-Forwarded") != "" || got.Get("X-Forwarded-For") != "" || got.Get("X-Forwarded-Host") != "" {
		t.Errorf("headers reaching the API: %v", got)
	}
	got = nil
	if r := s.do("OPTIONS", "/ui/api/v1/users", nil, nil, b.cookie); r.StatusCode != http.StatusForbidden || got != nil {
		t.Errorf("OPTIONS without the CSRF token = %d (reached the API: %v)", r.StatusCode, got != nil)
	}
}
