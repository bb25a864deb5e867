package embed_test

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engramdb/engram/embed"
)

// api describes one embeddings API as chromem-go calls it, and how to build
// a Provider for it.
type api struct {
	name    string // the Identity's Provider
	root    string // the base URL's path on the test server
	apiKey  string
	newFunc func(baseURL string, dims, concurrency int) (*embed.Provider, error)
}

var apis = []api{
	{
		name: "ollama",
		root: "/api",
		newFunc: func(baseURL string, dims, concurrency int) (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: baseURL, Model: "nomic-embed-text", Dimensions: dims, Concurrency: concurrency})
		},
	},
	{
		name:   "openai",
		root:   "/v1",
		apiKey: "sk-test-123",
		newFunc: func(baseURL string, dims, concurrency int) (*embed.Provider, error) {
			return embed.NewOpenAI(&embed.OpenAIOptions{BaseURL: baseURL, APIKey: "sk-test-123", Model: "text-embedding-3-small", Dimensions: dims, Concurrency: concurrency})
		},
	},
}

// rawVector is what the fake servers return for text: deterministic, not
// normalised (so the Provider's normalisation is exercised), of length dims.
func rawVector(text string, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(len(text)+1) + float32(i*i)
		if i < len(text) {
			v[i] += float32(text[i])
		}
	}
	return v
}

func normalized(v []float32) []float32 {
	n := norm(v)
	out := make([]float32, len(v))
	for i, x := range v {
		out[i] = float32(float64(x) / n)
	}
	return out
}

// server is a fake embeddings server. It checks every request against the
// API's real shape and answers like the real service does.
type server struct {
	*httptest.Server
	requests atomic.Int64

	// vector returns the embedding of a text; nil means rawVector(text, 4).
	vector func(text string) []float32
	// status, when set, is the HTTP status of every reply (with an error
	// body in the API's style).
	status func(text string) int
	// hold, when set, runs before the reply; a handler that returns false
	// sends nothing.
	hold func(r *http.Request) bool
}

func newServer(t *testing.T, a api, configure func(s *server)) *server {
	t.Helper()
	s := &server{}
	if configure != nil {
		configure(s)
	}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.requests.Add(1)
		text, ok := checkRequest(t, a, r)
		if !ok {
			http.Error(w, "bad request", http.StatusBadRequest)
			return
		}
		if s.hold != nil && !s.hold(r) {
			return
		}
		if s.status != nil {
			if code := s.status(text); code != 0 && code != http.StatusOK {
				w.Header().Set("Content-Type", "application/json")
				w.WriteHeader(code)
				_, _ = w.Write([]byte(`{"error":{"message":"the server had an error","type":"server_error"}}`))
				return
			}
		}
		v := rawVector(text, 4)
		if s.vector != nil {
			v = s.vector(text)
		}
		var reply any
		switch a.name {
		case "ollama":
			reply = map[string]any{"embedding": v}
		case "openai":
			reply = map[string]any{
				"object": "list",
				"data":   []any{map[string]any{"object": "embedding", "index": 0, "embedding": v}},
				"model":  "text-embedding-3-small",
				"usage":  map[string]any{"prompt_tokens": 3, "total_tokens": 3},
			}
		}
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(reply)
	}))
	t.Cleanup(s.Close)
	return s
}

// checkRequest verifies method, path, headers and body, and returns the text.
func checkRequest(t *testing.T, a api, r *http.Request) (string, bool) {
	ok := true
	fail := func(format string, args ...any) {
		t.Errorf(a.name+": "+format, args...)
		ok = false
	}
	if r.Method != http.MethodPost {
		fail("method %s, want POST", r.Method)
	}
	if want := a.root + "/embeddings"; r.URL.Path != want {
		fail("path %s, want %s", r.URL.Path, want)
	}
	if ct := r.Header.Get("Content-Type"); ct != "application/json" {
		fail("Content-Type %q", ct)
	}
	var body map[string]any
	if err := json.NewDecoder(r.Body).Decode(&body); err != nil {
		fail("body: %v", err)
		return "", false
	}
	var text any
	switch a.name {
	case "ollama":
		if body["model"] != "nomic-embed-text" {
			fail("model %v", body["model"])
		}
		text = body["prompt"]
		if len(body) != 2 {
			fail("body has fields %v, want model and prompt", body)
		}
	case "openai":
		if got, want := r.Header.Get("Authorization"), "Bearer "+a.apiKey; got != want {
			fail("Authorization %q, want %q", got, want)
		}
		if body["model"] != "text-embedding-3-small" {
			fail("model %v", body["model"])
		}
		text = body["input"]
		if len(body) != 2 {
			fail("body has fields %v, want input and model", body)
		}
	}
	s, isString := text.(string)
	if !isString {
		fail("text %v is not a string", text)
	}
	return s, ok
}

func forEachAPI(t *testing.T, f func(t *testing.T, a api)) {
	for _, a := range apis {
		t.Run(a.name, func(t *testing.T) { f(t, a) })
	}
}

func TestProviderRoundTrip(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		srv := newServer(t, a, nil)
		p, err := a.newFunc(srv.URL+a.root, 0, 3)
		if err != nil {
			t.Fatal(err)
		}
		if p.Dimensions() != 0 {
			t.Errorf("Dimensions() before any call = %d, want 0", p.Dimensions())
		}
		texts := []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliett", "kilo"}
		vecs, err := p.Embed(context.Background(), texts)
		if err != nil {
			t.Fatal(err)
		}
		if len(vecs) != len(texts) {
			t.Fatalf("%d vectors for %d texts", len(vecs), len(texts))
		}
		for i, text := range texts {
			want := normalized(rawVector(text, 4))
			for j := range want {
				if math.Abs(float64(vecs[i][j]-want[j])) > 1e-6 {
					t.Fatalf("text %d %q: got %v, want %v (order lost?)", i, text, vecs[i], want)
				}
			}
			if n := norm(vecs[i]); math.Abs(n-1) > 1e-5 {
				t.Errorf("text %d: norm %v", i, n)
			}
		}
		if got := srv.requests.Load(); got != int64(len(texts)) {
			t.Errorf("%d requests for %d texts", got, len(texts))
		}
		if p.Dimensions() != 4 {
			t.Errorf("Dimensions() after a call = %d, want 4 (learned)", p.Dimensions())
		}
		u, _ := url.Parse(srv.URL)
		model := map[string]string{"ollama": "nomic-embed-text", "openai": "text-embedding-3-small"}[a.name]
		want := embed.Identity{Provider: a.name, Model: model + "@" + u.Host + a.root}
		if p.Identity() != want {
			t.Errorf("Identity() = %v, want %v", p.Identity(), want)
		}
		if p.Model() != model {
			t.Errorf("Model() = %q, want %q", p.Model(), model)
		}
	})
}

func TestProviderEmptyInput(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		srv := newServer(t, a, nil)
		p, err := a.newFunc(srv.URL+a.root, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		for _, texts := range [][]string{nil, {}} {
			vecs, err := p.Embed(context.Background(), texts)
			if err != nil || len(vecs) != 0 {
				t.Errorf("Embed(%#v) = (%v, %v)", texts, vecs, err)
			}
		}
		if n := srv.requests.Load(); n != 0 {
			t.Errorf("%d requests for no texts", n)
		}
	})
}

func TestProviderServerError(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		srv := newServer(t, a, func(s *server) {
			s.status = func(text string) int {
				if text == "bad" {
					return http.StatusInternalServerError
				}
				return http.StatusOK
			}
		})
		p, err := a.newFunc(srv.URL+a.root, 0, 1)
		if err != nil {
			t.Fatal(err)
		}
		vecs, err := p.Embed(context.Background(), []string{"fine", "also fine", "bad", "never sent"})
		if err == nil {
			t.Fatalf("Embed = %v, want an error", vecs)
		}
		if vecs != nil {
			t.Errorf("vectors %v returned with an error", vecs)
		}
		for _, want := range []string{"embed " + a.name + ": text 2:", "500"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("error %q does not contain %q", err, want)
			}
		}
		if n := srv.requests.Load(); n != 3 {
			t.Errorf("%d requests, want 3 (stop at the first error)", n)
		}
	})
}

func TestProviderDimensionMismatch(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		vector := func(text string) []float32 {
			if strings.HasPrefix(text, "long") {
				return rawVector(text, 5)
			}
			return rawVector(text, 4)
		}
		srv := newServer(t, a, func(s *server) { s.vector = vector })
		ctx := context.Background()

		t.Run("configured", func(t *testing.T) {
			p, err := a.newFunc(srv.URL+a.root, 3, 0)
			if err != nil {
				t.Fatal(err)
			}
			if p.Dimensions() != 3 {
				t.Errorf("Dimensions() = %d, want the configured 3", p.Dimensions())
			}
			if _, err := p.Embed(ctx, []string{"short"}); !errors.Is(err, embed.ErrDimensionMismatch) {
				t.Errorf("err = %v, want ErrDimensionMismatch", err)
			}
		})
		t.Run("configured and right", func(t *testing.T) {
			p, err := a.newFunc(srv.URL+a.root, 4, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Embed(ctx, []string{"short"}); err != nil {
				t.Error(err)
			}
		})
		t.Run("learned", func(t *testing.T) {
			p, err := a.newFunc(srv.URL+a.root, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := p.Embed(ctx, []string{"short"}); err != nil {
				t.Fatal(err)
			}
			_, err = p.Embed(ctx, []string{"short", "long text"})
			if !errors.Is(err, embed.ErrDimensionMismatch) {
				t.Fatalf("err = %v, want ErrDimensionMismatch", err)
			}
			if !strings.Contains(err.Error(), "text 1") {
				t.Errorf("error %q does not name text 1", err)
			}
			if p.Dimensions() != 4 {
				t.Errorf("Dimensions() = %d, want 4", p.Dimensions())
			}
		})
	})
}

func TestProviderInvalidVector(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		srv := newServer(t, a, func(s *server) {
			s.vector = func(string) []float32 { return make([]float32, 4) }
		})
		p, err := a.newFunc(srv.URL+a.root, 0, 0)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := p.Embed(context.Background(), []string{"zero"}); !errors.Is(err, embed.ErrInvalidVector) {
			t.Errorf("zero vector: err = %v, want ErrInvalidVector", err)
		}
	})
}

func TestProviderCancel(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		arrived := make(chan struct{}, 64)
		srv := newServer(t, a, func(s *server) {
			s.hold = func(r *http.Request) bool {
				arrived <- struct{}{}
				select {
				case <-r.Context().Done(): // the client went away
				case <-time.After(10 * time.Second):
					t.Error("request not cancelled within 10s")
				}
				return false
			}
		})
		p, err := a.newFunc(srv.URL+a.root, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		texts := []string{"a", "b", "c", "d", "e"}

		t.Run("cancel", func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			go func() {
				<-arrived
				cancel()
			}()
			start := time.Now()
			_, err := p.Embed(ctx, texts)
			if !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Embed returned %v after the cancel", d)
			}
		})
		t.Run("deadline", func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
			defer cancel()
			start := time.Now()
			_, err := p.Embed(ctx, texts)
			if !errors.Is(err, context.DeadlineExceeded) {
				t.Errorf("err = %v, want context.DeadlineExceeded", err)
			}
			if d := time.Since(start); d > 2*time.Second {
				t.Errorf("Embed took %v with a 50ms deadline", d)
			}
		})
		t.Run("already done", func(t *testing.T) {
			before := srv.requests.Load()
			ctx, cancel := context.WithCancel(context.Background())
			cancel()
			if _, err := p.Embed(ctx, texts); !errors.Is(err, context.Canceled) {
				t.Errorf("err = %v, want context.Canceled", err)
			}
			if n := srv.requests.Load() - before; n != 0 {
				t.Errorf("%d requests with a cancelled context", n)
			}
		})
	})
}

func TestProviderConcurrencyBound(t *testing.T) {
	for _, tc := range []struct {
		name        string
		concurrency int
		want        int
	}{
		{"one", 1, 1},
		{"three", 3, 3},
		{"default", 0, embed.DefaultConcurrency},
	} {
		t.Run(tc.name, func(t *testing.T) {
			forEachAPI(t, func(t *testing.T, a api) {
				var (
					inflight, peak atomic.Int64
					gate           = make(chan struct{})
					once           sync.Once
				)
				srv := newServer(t, a, func(s *server) {
					s.hold = func(r *http.Request) bool {
						n := inflight.Add(1)
						defer inflight.Add(-1)
						for {
							p := peak.Load()
							if n <= p || peak.CompareAndSwap(p, n) {
								break
							}
						}
						// Hold every request until the bound is reached, so the
						// peak reaches the bound, then a little longer, so that
						// requests beyond the bound, if Embed sends any, overlap
						// and raise the peak above it.
						if n >= int64(tc.want) {
							once.Do(func() { close(gate) })
						}
						select {
						case <-gate:
						case <-time.After(5 * time.Second):
							t.Errorf("only %d requests in flight after 5s, want %d", inflight.Load(), tc.want)
						}
						time.Sleep(5 * time.Millisecond)
						return true
					}
				})
				p, err := a.newFunc(srv.URL+a.root, 0, tc.concurrency)
				if err != nil {
					t.Fatal(err)
				}
				texts := make([]string, 20)
				for i := range texts {
					texts[i] = strings.Repeat("x", i+1)
				}
				if _, err := p.Embed(context.Background(), texts); err != nil {
					t.Fatal(err)
				}
				if got := peak.Load(); got != int64(tc.want) {
					t.Errorf("peak in flight %d, want %d", got, tc.want)
				}
			})
		})
	}
}

func TestProviderConcurrentCalls(t *testing.T) {
	forEachAPI(t, func(t *testing.T, a api) {
		srv := newServer(t, a, nil)
		p, err := a.newFunc(srv.URL+a.root, 0, 2)
		if err != nil {
			t.Fatal(err)
		}
		var wg sync.WaitGroup
		for g := range 4 {
			wg.Go(func() {
				texts := []string{"shared", strings.Repeat("g", g+1)}
				vecs, err := p.Embed(context.Background(), texts)
				if err != nil {
					t.Error(err)
					return
				}
				for i, text := range texts {
					if want := normalized(rawVector(text, 4)); math.Abs(cosine(vecs[i], want)-1) > 1e-6 {
						t.Errorf("goroutine %d text %q: wrong vector", g, text)
					}
				}
			})
		}
		wg.Wait()
	})
}

func TestProviderOptions(t *testing.T) {
	for _, tc := range []struct {
		name      string
		build     func() (*embed.Provider, error)
		wantModel string // when the options are valid
		wantErr   []string
	}{
		{"ollama nil options", func() (*embed.Provider, error) { return embed.NewOllama(nil) }, "", []string{"Model is required"}},
		{"ollama defaults", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{Model: "nomic-embed-text"})
		}, "nomic-embed-text@localhost:11434/api", nil},
		{"ollama trailing slash and case", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: "http://GPU-Box:11434/api/", Model: "m"})
		}, "m@gpu-box:11434/api", nil},
		{"ollama every field bad", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: "ftp://x", Dimensions: -1, Concurrency: -2})
		}, "", []string{"scheme", "Model", "Dimensions", "Concurrency"}},
		{"ollama too many dimensions", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{Model: "m", Dimensions: embed.MaxDimensions + 1})
		}, "", []string{"Dimensions"}},
		{"ollama query", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: "http://h/api?x=1", Model: "m"})
		}, "", []string{"query"}},
		{"ollama no host", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: "http:///api", Model: "m"})
		}, "", []string{"no host"}},
		{"ollama unparsable", func() (*embed.Provider, error) {
			return embed.NewOllama(&embed.OllamaOptions{BaseURL: "http://[::1", Model: "m"})
		}, "", []string{"BaseURL"}},
		{"openai nil options", func() (*embed.Provider, error) { return embed.NewOpenAI(nil) }, "", []string{"Model", "APIKey"}},
		{"openai no key at OpenAI", func() (*embed.Provider, error) {
			return embed.NewOpenAI(&embed.OpenAIOptions{Model: "text-embedding-3-small"})
		}, "", []string{"APIKey"}},
		{"openai defaults", func() (*embed.Provider, error) {
			return embed.NewOpenAI(&embed.OpenAIOptions{APIKey: "k", Model: "text-embedding-3-small"})
		}, "text-embedding-3-small@api.openai.com/v1", nil},
		{"openai compatible without key, credentials not in identity", func() (*embed.Provider, error) {
			return embed.NewOpenAI(&embed.OpenAIOptions{BaseURL: "https://user:secret@llm.internal:8443/v1", Model: "embedding"})
		}, "embedding@llm.internal:8443/v1", nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p, err := tc.build()
			if tc.wantErr == nil {
				if err != nil {
					t.Fatal(err)
				}
				if p.Identity().Model != tc.wantModel {
					t.Errorf("Identity().Model = %q, want %q", p.Identity().Model, tc.wantModel)
				}
				return
			}
			if !errors.Is(err, embed.ErrInvalidOptions) || p != nil {
				t.Fatalf("got (%v, %v), want ErrInvalidOptions", p, err)
			}
			for _, want := range tc.wantErr {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error %q does not mention %q", err, want)
				}
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error %q leaks the URL's password", err)
			}
		})
	}
}

// TestBaseURLErrorsHideCredentials: no error about a bad BaseURL repeats a
// password written into it, whichever check fails.
func TestBaseURLErrorsHideCredentials(t *testing.T) {
	for _, raw := range []string{
		"http://user:s3cret-pw@host:port/api", // bad port: url.Parse fails
		"http://user:s3cret-pw@host/%zz",      // bad escape
		"ftp://user:s3cret-pw@host/api",       // bad scheme
		"http://user:s3cret-pw@host/api?x=1",  // a query
	} {
		_, err := embed.NewOpenAI(&embed.OpenAIOptions{BaseURL: raw, Model: "m"})
		if err == nil {
			t.Errorf("%s: no error", raw)
			continue
		}
		if strings.Contains(err.Error(), "s3cret-pw") {
			t.Errorf("error repeats the password: %v", err)
		}
	}
}
