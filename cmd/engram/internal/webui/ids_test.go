package webui

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"regexp"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/memory"
)

// encodeURIComponent is JavaScript's, which the page applies to every id
// it puts in a path (app.js's enc): every byte but A-Z a-z 0-9 - _ . ! ~ *
// ' ( ) is escaped.
func encodeURIComponent(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || strings.IndexByte("-_.!~*'()", c) >= 0 {
			b.WriteByte(c)
		} else {
			fmt.Fprintf(&b, "%%%02X", c)
		}
	}
	return b.String()
}

// TestIDsThroughThePages: users and sessions whose ids hold ?, #, % (and
// spaces, & and non-ASCII) reach the API through the inspector's proxy as
// the page sends them, escaped by encodeURIComponent, and each request
// reads that id's data, not a truncated or unescaped one's. An id with /
// cannot exist (the API refuses it), and its escaped form is refused
// before the API. (issue 26, mutation audit; the browser tests need
// Chromium, so this drives the proxy with the page's own escaping.)
func TestIDsThroughThePages(t *testing.T) {
	s := newServer(t)
	ctx := context.Background()
	ids := []string{"a?b", "c#d", "e%f", "g%2Fh", "%", "x y&z=1", "ü?#%"}
	for _, id := range ids {
		sc := memory.Scope{Tenant: "acme", User: id}
		if _, err := s.store.Remember(ctx, sc, memory.Memory{Kind: memory.KindFact, Text: "memory of " + id}); err != nil {
			t.Fatal(err)
		}
		sc.Session = "s" + id
		if err := s.store.Session(sc).Append(ctx, memory.Message{Role: memory.RoleUser, Content: "message of " + id}); err != nil {
			t.Fatal(err)
		}
		if _, err := s.store.Relate(ctx, memory.Scope{Tenant: "acme", User: id}, memory.Fact{Subject: "S" + id, Predicate: "p", Object: "o"}); err != nil {
			t.Fatal(err)
		}
	}
	_, b := s.login(tokenAcme)
	get := func(path string, v any) {
		t.Helper()
		r := b.call("GET", path, nil)
		body, _ := io.ReadAll(r.Body)
		if r.StatusCode != http.StatusOK {
			t.Fatalf("GET %s = %d %s", path, r.StatusCode, body)
		}
		if err := json.Unmarshal(body, v); err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
	}
	var users struct{ Users []struct{ User string } }
	get("/ui/api/v1/users?limit=50", &users)
	listed := map[string]bool{}
	for _, u := range users.Users {
		listed[u.User] = true
	}
	for _, id := range ids {
		if !listed[id] {
			t.Errorf("user %q is not listed: %v", id, users.Users)
		}
		up := "/ui/api/v1/users/" + encodeURIComponent(id)
		var mems struct{ Memories []memory.Memory }
		get(up+"/memories", &mems)
		if len(mems.Memories) != 1 || mems.Memories[0].Text != "memory of "+id {
			t.Errorf("memories of %q: %v", id, mems.Memories)
		}
		var sessions struct{ Sessions []struct{ ID string } }
		get(up+"/sessions", &sessions)
		if len(sessions.Sessions) != 1 || sessions.Sessions[0].ID != "s"+id {
			t.Errorf("sessions of %q: %v", id, sessions.Sessions)
			continue
		}
		var msgs struct{ Messages []memory.Message }
		get(up+"/sessions/"+encodeURIComponent("s"+id)+"/messages", &msgs)
		if len(msgs.Messages) != 1 || msgs.Messages[0].Content != "message of "+id {
			t.Errorf("messages of %q: %v", id, msgs.Messages)
		}
		var facts struct{ Facts []memory.Fact }
		get(up+"/facts?subject="+encodeURIComponent("S"+id), &facts)
		if len(facts.Facts) != 1 || facts.Facts[0].Subject != "S"+id {
			t.Errorf("facts of %q: %v", id, facts.Facts)
		}
	}
	if r := b.call("GET", "/ui/api/v1/users/"+encodeURIComponent("a/b")+"/memories", nil); r.StatusCode != http.StatusNotFound && r.StatusCode != http.StatusBadRequest {
		t.Errorf("an id with / = %d", r.StatusCode)
	}
}

// TestPagePathsEscapeIDs reads app.js: every template literal that builds
// an API path or a page link (/v1/..., #/u/...) puts an id in it only
// through enc (encodeURIComponent) or userPath, or through the path
// constants built that way (base, mpath, upath); p is a page name of
// parseRoute's list. An id put in raw would break at ?, # or %.
func TestPagePathsEscapeIDs(t *testing.T) {
	js := string(embeddedFile(t, "static/app.js"))
	literal := regexp.MustCompile("`[^`]*`")
	subst := regexp.MustCompile(`\$\{([^}]*)\}`)
	allowed := regexp.MustCompile(`^(enc\([^()]*\)|userPath\([^()]*\)|base|mpath|upath|p)$`)
	checked := 0
	for _, lit := range literal.FindAllString(js, -1) {
		path := strings.Contains(lit, "/v1/") || strings.Contains(lit, "#/u/") ||
			regexp.MustCompile("^`\\$\\{(userPath\\(|base\\}|mpath\\}|upath\\})").MatchString(lit)
		if !path {
			continue
		}
		checked++
		for _, m := range subst.FindAllStringSubmatch(lit, -1) {
			if !allowed.MatchString(strings.TrimSpace(m[1])) {
				t.Errorf("app.js puts ${%s} into the path %s unescaped", m[1], lit)
			}
		}
	}
	if checked < 15 {
		t.Errorf("checked %d path literals; the pattern no longer finds the page's paths", checked)
	}
	for _, def := range []string{
		"const enc = encodeURIComponent;",
		"const userPath = (user) => `/v1/users/${enc(user)}`;",
		"return decodeURIComponent(p);",
	} {
		if !strings.Contains(js, def) {
			t.Errorf("app.js lacks %s", def)
		}
	}
}

func embeddedFile(t *testing.T, name string) []byte {
	t.Helper()
	b, err := embedded.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestCookieSecure: the session cookie is Secure when the sign-in came
// over TLS, or with Options.SecureCookie behind an HTTPS proxy, and not
// otherwise (a browser would not send it back to a plain-HTTP loopback
// page); the cookie that signs out carries the same attributes.
func TestCookieSecure(t *testing.T) {
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	tokens, err := httpapi.ParseTokens([]byte(`{"tokens":[{"token":"` + tokenAcme + `","tenant":"acme"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	api, err := httpapi.New(store, &httpapi.Options{Tokens: tokens})
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		scheme string
		secure bool // Options.SecureCookie
		want   bool
	}{
		{"http", "http", false, false},
		{"https", "https", false, true},
		{"http with SecureCookie", "http", true, true},
		{"https with SecureCookie", "https", true, true},
	} {
		ui, err := New(api, tokens, &Options{SecureCookie: tc.secure})
		if err != nil {
			t.Fatal(err)
		}
		origin := tc.scheme + "://memory.example"
		req := httptest.NewRequest("POST", origin+"/ui/login", strings.NewReader("token="+tokenAcme))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.Header.Set("Origin", origin)
		w := httptest.NewRecorder()
		ui.ServeHTTP(w, req)
		cookies := w.Result().Cookies()
		if w.Code != http.StatusSeeOther || len(cookies) != 1 {
			t.Fatalf("%s: sign-in = %d with %d cookies", tc.name, w.Code, len(cookies))
		}
		c := cookies[0]
		if c.Secure != tc.want || !c.HttpOnly || c.SameSite != http.SameSiteStrictMode || c.Path != Prefix {
			t.Errorf("%s: cookie %+v, want Secure=%v, HttpOnly, SameSite=Strict, Path=%s", tc.name, c, tc.want, Prefix)
		}
		var sess struct{ CSRF string }
		req = httptest.NewRequest("GET", origin+"/ui/session", nil)
		req.AddCookie(c)
		w = httptest.NewRecorder()
		ui.ServeHTTP(w, req)
		if err := json.Unmarshal(w.Body.Bytes(), &sess); err != nil {
			t.Fatal(err)
		}
		req = httptest.NewRequest("POST", origin+"/ui/logout", nil)
		req.AddCookie(c)
		req.Header.Set(CSRFHeader, sess.CSRF)
		req.Header.Set("Origin", origin)
		w = httptest.NewRecorder()
		ui.ServeHTTP(w, req)
		out := w.Result().Cookies()
		if len(out) != 1 || out[0].MaxAge >= 0 || out[0].Secure != tc.want {
			t.Errorf("%s: sign-out cookies %+v, want one clearing it with Secure=%v", tc.name, out, tc.want)
		}
	}
}
