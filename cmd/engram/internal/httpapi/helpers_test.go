package httpapi

import (
	"bytes"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"go.uber.org/goleak"

	"github.com/engramdb/engram/memory"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// Test tokens: two for acme, one for globex.
const (
	tokenAcme   = "acme-token-0123456789abcdef"
	tokenAcme2  = "acme-token-second-client-xyz"
	tokenGlobex = "globex-token-0123456789abcdef"
)

const testTokensJSON = `{"tokens": [
	{"token": "` + tokenAcme + `", "tenant": "acme", "name": "ci"},
	{"token": "` + tokenAcme2 + `", "tenant": "acme", "name": "desktop"},
	{"token": "` + tokenGlobex + `", "tenant": "globex"}
]}`

func testTokens(t testing.TB) *Tokens {
	t.Helper()
	tok, err := ParseTokens([]byte(testTokensJSON))
	if err != nil {
		t.Fatal(err)
	}
	return tok
}

// syncBuffer is a bytes.Buffer safe for the server's goroutines and the
// test's reads.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.b.String()
}

// testServer is a Handler over an in-memory store on a real loopback port.
type testServer struct {
	t      *testing.T
	url    string
	client *http.Client
	store  *memory.Store
	h      *Handler
	log    *syncBuffer
}

// newTestServer starts a server; opts may be nil, and its Tokens and Logger
// are filled in when unset.
func newTestServer(t *testing.T, storeOpts *memory.Options, opts *Options) *testServer {
	t.Helper()
	store, err := memory.Open("", storeOpts)
	if err != nil {
		t.Fatal(err)
	}
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Tokens == nil {
		o.Tokens = testTokens(t)
	}
	logs := &syncBuffer{}
	if o.Logger == nil {
		o.Logger = slog.New(slog.NewJSONHandler(logs, nil))
	}
	h, err := New(store, &o)
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	srv := httptest.NewServer(h)
	t.Cleanup(func() {
		srv.Close()
		if err := store.Close(); err != nil {
			t.Error(err)
		}
	})
	return &testServer{t: t, url: srv.URL, client: srv.Client(), store: store, h: h, log: logs}
}

// response is what a call answered.
type response struct {
	status int
	header http.Header
	body   []byte
}

// decode unmarshals the body into v, zeroed first so that no field of an
// earlier decode survives, failing the test on error.
func (r response) decode(t *testing.T, v any) {
	t.Helper()
	reflect.ValueOf(v).Elem().SetZero()
	if err := json.Unmarshal(r.body, v); err != nil {
		t.Fatalf("decode %s: %v", r.body, err)
	}
}

// errorCode returns the code of an error body, or "".
func (r response) errorCode() string {
	var e errorBody
	if json.Unmarshal(r.body, &e) != nil {
		return ""
	}
	return e.Error.Code
}

// call sends a request with token (none when ""), and body as JSON (a
// string or []byte is sent as is; nil sends none).
func (s *testServer) call(method, path, token string, body any) response {
	s.t.Helper()
	var rd io.Reader
	switch b := body.(type) {
	case nil:
	case string:
		rd = strings.NewReader(b)
	case []byte:
		rd = bytes.NewReader(b)
	default:
		data, err := json.Marshal(b)
		if err != nil {
			s.t.Fatal(err)
		}
		rd = bytes.NewReader(data)
	}
	req, err := http.NewRequest(method, s.url+path, rd)
	if err != nil {
		s.t.Fatal(err)
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	if rd != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	resp, err := s.client.Do(req)
	if err != nil {
		s.t.Fatalf("%s %s: %v", method, path, err)
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		s.t.Fatal(err)
	}
	return response{status: resp.StatusCode, header: resp.Header, body: data}
}

// must sends the call and fails the test unless it answers want.
func (s *testServer) must(want int, method, path, token string, body any) response {
	s.t.Helper()
	r := s.call(method, path, token, body)
	if r.status != want {
		s.t.Fatalf("%s %s = %d, want %d: %s", method, path, r.status, want, r.body)
	}
	return r
}
