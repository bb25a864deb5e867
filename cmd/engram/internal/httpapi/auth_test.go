package httpapi

import (
	"errors"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/memory"
)

func TestAuthentication(t *testing.T) {
	s := newTestServer(t, nil, nil)
	path := "/v1/users/alice/sessions"
	for _, tc := range []struct {
		name, header, challenge string
	}{
		{"no header", "", `Bearer realm="engram"`},
		{"basic scheme", "Basic YWNtZTpzZWNyZXQ=", `Bearer realm="engram"`},
		{"empty bearer", "Bearer ", `Bearer realm="engram"`},
		{"unknown token", "Bearer not-a-token-of-this-server", `Bearer realm="engram", error="invalid_token"`},
		{"a prefix of a token", "Bearer " + tokenAcme[:len(tokenAcme)-1], `Bearer realm="engram", error="invalid_token"`},
		{"a token with more", "Bearer " + tokenAcme + "x", `Bearer realm="engram", error="invalid_token"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, _ := http.NewRequest("GET", s.url+path, nil)
			if tc.header != "" {
				req.Header.Set("Authorization", tc.header)
			}
			resp, err := s.client.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusUnauthorized {
				t.Fatalf("status = %d: %s", resp.StatusCode, body)
			}
			if got := resp.Header.Get("WWW-Authenticate"); got != tc.challenge {
				t.Errorf("WWW-Authenticate = %q, want %q", got, tc.challenge)
			}
			if !strings.Contains(string(body), `"code":"unauthorized"`) {
				t.Errorf("body = %s", body)
			}
		})
	}
	t.Run("scheme is case-insensitive", func(t *testing.T) {
		req, _ := http.NewRequest("GET", s.url+path, nil)
		req.Header.Set("Authorization", "bearer "+tokenAcme)
		resp, err := s.client.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("status = %d", resp.StatusCode)
		}
	})
	t.Run("every /v1/ route needs a token", func(t *testing.T) {
		for _, rt := range s.h.routes {
			if !strings.HasPrefix(rt.path, "/v1/") {
				continue
			}
			p := strings.NewReplacer("{user}", "alice", "{session}", "s", "{id}", "x").Replace(rt.path)
			if r := s.call(rt.method, p, "", "{}"); r.status != http.StatusUnauthorized {
				t.Errorf("%s %s without a token = %d", rt.method, p, r.status)
			}
		}
	})
	t.Run("public routes", func(t *testing.T) {
		for _, p := range []string{"/healthz", "/openapi.json", "/metrics"} {
			s.must(200, "GET", p, "", nil)
		}
	})
}

func TestMetricsAccess(t *testing.T) {
	t.Run("token", func(t *testing.T) {
		s := newTestServer(t, nil, &Options{Metrics: MetricsToken})
		s.must(401, "GET", "/metrics", "", nil)
		s.must(200, "GET", "/metrics", tokenGlobex, nil)
	})
	t.Run("off", func(t *testing.T) {
		s := newTestServer(t, nil, &Options{Metrics: MetricsOff})
		s.must(404, "GET", "/metrics", tokenAcme, nil)
	})
	for _, m := range []MetricsAccess{MetricsPublic, MetricsToken, MetricsOff} {
		got, err := ParseMetricsAccess(m.String())
		if err != nil || got != m {
			t.Errorf("ParseMetricsAccess(%q) = %v, %v", m, got, err)
		}
	}
	if _, err := ParseMetricsAccess("everyone"); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("ParseMetricsAccess(everyone) = %v", err)
	}
}

func TestParseTokens(t *testing.T) {
	tok := testTokens(t)
	if tok.Len() != 3 || !slices.Equal(tok.Tenants(), []string{"acme", "globex"}) {
		t.Fatalf("Len = %d, Tenants = %v", tok.Len(), tok.Tenants())
	}
	for token, tenant := range map[string]string{tokenAcme: "acme", tokenAcme2: "acme", tokenGlobex: "globex"} {
		if e, ok := tok.lookup(token); !ok || e.tenant != tenant {
			t.Errorf("lookup(%q) = %+v, %v", token, e, ok)
		}
	}
	if _, ok := tok.lookup("globex-token-0123456789abcdeF"); ok {
		t.Error("lookup is not exact")
	}

	long := strings.Repeat("a", MinTokenLength)
	for _, tc := range []struct{ name, json, want string }{
		{"not JSON", `tokens`, "invalid character"},
		{"no tokens", `{"tokens":[]}`, "no tokens"},
		{"unknown field", `{"tokens":[{"token":"` + long + `","tenant":"a","tennant":"b"}]}`, `unknown field "tennant"`},
		{"short token", `{"tokens":[{"token":"short","tenant":"a"}]}`, "tokens[0]: token is 5 characters"},
		{"token with a space", `{"tokens":[{"token":"` + long + ` x","tenant":"a"}]}`, "tokens[0]: token has a character"},
		{"no tenant", `{"tokens":[{"token":"` + long + `"}]}`, "tokens[0]: tenant is empty"},
		{"tenant with a control character", `{"tokens":[{"token":"` + long + `","tenant":"a\u0001"}]}`, "tokens[0]: tenant"},
		{"tenant ..", `{"tokens":[{"token":"` + long + `","tenant":".."}]}`, "tokens[0]: tenant"},
		{"tenant with a slash", `{"tokens":[{"token":"` + long + `","tenant":"a/b"}]}`, "tokens[0]: tenant"},
		{"tenant with a bidi override", `{"tokens":[{"token":"` + long + `","tenant":"acme\u202e"}]}`, "tokens[0]: tenant"},
		{"duplicate", `{"tokens":[{"token":"` + long + `","tenant":"a"},{"token":"` + long + `","tenant":"b"}]}`, "tokens[1]: same token as tokens[0]"},
		{"trailing data", `{"tokens":[{"token":"` + long + `","tenant":"a"}]} {}`, "data after"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseTokens([]byte(tc.json))
			if !errors.Is(err, ErrInvalidTokens) || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want %q", err, tc.want)
			}
			if strings.Contains(err.Error(), long) {
				t.Errorf("the error shows a token: %v", err)
			}
		})
	}
	t.Run("every bad entry at once", func(t *testing.T) {
		_, err := ParseTokens([]byte(`{"tokens":[{"token":"short","tenant":"a"},{"token":"` + long + `","tenant":""}]}`))
		if err == nil || !strings.Contains(err.Error(), "tokens[0]") || !strings.Contains(err.Error(), "tokens[1]") {
			t.Fatalf("err = %v", err)
		}
	})
}

func TestLoadTokens(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "tokens.json")
	if err := os.WriteFile(path, []byte(testTokensJSON), 0o600); err != nil {
		t.Fatal(err)
	}
	tok, err := LoadTokens(path)
	if err != nil || tok.Len() != 3 {
		t.Fatalf("LoadTokens = %v, %v", tok, err)
	}
	if runtime.GOOS != "windows" {
		for _, mode := range []os.FileMode{0o640, 0o604, 0o660} {
			if err := os.Chmod(path, mode); err != nil {
				t.Fatal(err)
			}
			_, err := LoadTokens(path)
			if !errors.Is(err, ErrTokensFileMode) || !strings.Contains(err.Error(), "chmod 600") {
				t.Errorf("mode %04o: err = %v", mode, err)
			}
		}
	}
	if _, err := LoadTokens(filepath.Join(dir, "missing.json")); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("missing file: %v", err)
	}
	if _, err := LoadTokens(dir); !errors.Is(err, ErrInvalidTokens) {
		t.Errorf("a directory: %v", err)
	}
}

func TestNewOptions(t *testing.T) {
	store, err := memory.Open("", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	for _, opts := range []*Options{nil, {}, {Tokens: testTokens(t), MaxBodyBytes: -1}, {Tokens: testTokens(t), Metrics: 7}} {
		if _, err := New(store, opts); !errors.Is(err, ErrInvalidOptions) {
			t.Errorf("New(%+v) = %v", opts, err)
		}
	}
	if _, err := New(nil, &Options{Tokens: testTokens(t)}); !errors.Is(err, ErrInvalidOptions) {
		t.Errorf("New(nil store) = %v", err)
	}
}
