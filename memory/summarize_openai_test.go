package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/engramdb/engram/memory"
)

const testAPIKey = "sk-test-5ecret"

// chatServer is a fake chat-completions server. It checks every request's
// shape and answers with reply, or as handle says.
type chatServer struct {
	*httptest.Server
	requests atomic.Int64
	last     atomic.Pointer[chatRequest]
	// reply is the content of the one choice returned.
	reply string
	// handle, when set, answers instead (after the request was checked).
	handle func(w http.ResponseWriter, r *http.Request)
}

type chatRequest struct {
	Model    string `json:"model"`
	Messages []struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	} `json:"messages"`
	MaxTokens int `json:"max_tokens"`
}

func newChatServer(t *testing.T, reply string) *chatServer {
	t.Helper()
	cs := &chatServer{reply: reply}
	cs.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		cs.requests.Add(1)
		switch {
		case r.Method != http.MethodPost:
			t.Errorf("method %s, want POST", r.Method)
		case r.URL.Path != "/v1/chat/completions":
			t.Errorf("path %s, want /v1/chat/completions", r.URL.Path)
		case r.Header.Get("Authorization") != "Bearer "+testAPIKey:
			t.Errorf("Authorization %q", r.Header.Get("Authorization"))
		case r.Header.Get("Content-Type") != "application/json":
			t.Errorf("Content-Type %q", r.Header.Get("Content-Type"))
		}
		var req chatRequest
		if err := json.NewDecoder(r.Body).Decode(&req); err != nil {
			t.Errorf("decode request: %v", err)
		}
		cs.last.Store(&req)
		if cs.handle != nil {
			cs.handle(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		json.NewEncoder(w).Encode(map[string]any{
			"id":     "chatcmpl-1",
			"object": "chat.completion",
			"choices": []any{map[string]any{
				"index":         0,
				"message":       map[string]any{"role": "assistant", "content": cs.reply},
				"finish_reason": "stop",
			}},
		})
	}))
	t.Cleanup(cs.Close)
	return cs
}

func (cs *chatServer) summarizer(t *testing.T, opts *memory.OpenAISummarizerOptions) *memory.OpenAISummarizer {
	t.Helper()
	var o memory.OpenAISummarizerOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = cs.URL + "/v1/"
	o.APIKey = testAPIKey
	o.Model = "gpt-test"
	o.HTTPClient = cs.Client()
	s, err := memory.NewOpenAISummarizer(&o)
	if err != nil {
		t.Fatalf("NewOpenAISummarizer: %v", err)
	}
	return s
}

func TestOpenAISummarizerRequest(t *testing.T) {
	cs := newChatServer(t, "\n  Alice and Dana agreed to renew the Acme contract by March 3.  \n")
	s := cs.summarizer(t, nil)
	msgs := []memory.Message{
		{Role: memory.RoleSystem, Content: "SECRET SYSTEM PROMPT"},
		{Role: memory.RoleUser, Name: "alice", Content: "Renew Acme by March 3."},
		{Role: memory.RoleAssistant, Content: "Dana will own it.", ToolCalls: []memory.ToolCall{{ID: "c1", Name: "assign", Arguments: []byte(`{"owner":"dana"}`)}}},
		{Role: memory.RoleTool, ToolCallID: "c1", Name: "assign", Content: `{"ok":true}`},
	}
	got, err := s.Summarize(context.Background(), "Alice has an Acme contract.", msgs, 100)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Alice and Dana agreed to renew the Acme contract by March 3."; got != want {
		t.Errorf("summary %q, want %q", got, want)
	}
	req := cs.last.Load()
	if req.Model != "gpt-test" || req.MaxTokens != 100 || len(req.Messages) != 2 {
		t.Fatalf("request: model %q, max_tokens %d, %d messages", req.Model, req.MaxTokens, len(req.Messages))
	}
	if req.Messages[0].Role != "system" || req.Messages[0].Content != memory.DefaultSummaryPrompt {
		t.Errorf("first message %+v, want the default prompt", req.Messages[0])
	}
	user := req.Messages[1].Content
	for _, want := range []string{
		"Alice has an Acme contract.",
		"alice: Renew Acme by March 3.\nassistant: Dana will own it.\nassistant: calls assign {\"owner\":\"dana\"}\ntool assign: {\"ok\":true}",
		"100 tokens",
	} {
		if req.Messages[1].Role != "user" || !strings.Contains(user, want) {
			t.Errorf("user message lacks %q:\n%s", want, user)
		}
	}
	if strings.Contains(user, "SECRET SYSTEM PROMPT") {
		t.Errorf("the transcript holds the session's system message:\n%s", user)
	}

	// A custom prompt replaces the default.
	s = cs.summarizer(t, &memory.OpenAISummarizerOptions{Prompt: "Summarize in French."})
	if _, err := s.Summarize(context.Background(), "", msgs, 50); err != nil {
		t.Fatal(err)
	}
	if p := cs.last.Load().Messages[0].Content; p != "Summarize in French." {
		t.Errorf("prompt %q", p)
	}
}

func TestOpenAISummarizerNoRequest(t *testing.T) {
	cs := newChatServer(t, "unused")
	s := cs.summarizer(t, nil)
	ctx := context.Background()
	nothing := []memory.Message{{Role: memory.RoleSystem, Content: "Be brief."}}
	for _, prev := range []string{"", "  Dana owns the renewal.  "} {
		got, err := s.Summarize(ctx, prev, nothing, 50)
		if err != nil || got != strings.TrimSpace(prev) {
			t.Errorf("prev %q: got %q, %v", prev, got, err)
		}
	}
	if n := cs.requests.Load(); n != 0 {
		t.Fatalf("%d requests with nothing new to summarize", n)
	}
	// A previous summary over budget is condensed by the model.
	if _, err := s.Summarize(ctx, strings.Repeat("Dana owns the renewal. ", 40), nil, 20); err != nil {
		t.Fatal(err)
	}
	if n := cs.requests.Load(); n != 1 {
		t.Fatalf("%d requests to condense an over-long summary, want 1", n)
	}
}

func TestOpenAISummarizerFitsBudget(t *testing.T) {
	sentences := "Dana owns the Acme renewal. The contract is due on March 3. Legal reviews it on February 20. Alice asked about the price."
	cs := newChatServer(t, sentences)
	s := cs.summarizer(t, nil)
	msgs := []memory.Message{{Role: memory.RoleUser, Content: "Summarize please."}}
	ctx := context.Background()

	// Cut at the last sentence that fits.
	budget := refTokens()("Dana owns the Acme renewal. The contract is due on March 3.") + 2
	got, err := s.Summarize(ctx, "", msgs, budget)
	if err != nil {
		t.Fatal(err)
	}
	if want := "Dana owns the Acme renewal. The contract is due on March 3."; got != want {
		t.Errorf("budget %d: got %q, want %q", budget, got, want)
	}

	// No sentence fits: cut at a token boundary.
	cs.reply = strings.Repeat("renewal ", 100) + "会議は三月です"
	for _, budget := range []int{1, 3, 7, 50} {
		got, err := s.Summarize(ctx, "", msgs, budget)
		if err != nil {
			t.Fatal(err)
		}
		if n := refTokens()(got); n > budget || got == "" || !strings.HasPrefix(cs.reply, got) {
			t.Errorf("budget %d: got %q (%d tokens)", budget, got, n)
		}
	}
}

func TestOpenAISummarizerErrors(t *testing.T) {
	msgs := []memory.Message{{Role: memory.RoleUser, Content: "Renew Acme."}}
	long := strings.Repeat("x", 5000)
	for _, tc := range []struct {
		name   string
		status int
		body   string
		want   error
	}{
		{"401", http.StatusUnauthorized, `{"error":{"message":"Incorrect API key provided: ` + testAPIKey + `"}}`, memory.ErrSummarization},
		{"500", http.StatusInternalServerError, long, memory.ErrSummarization},
		{"malformed JSON", http.StatusOK, `{"choices": [`, memory.ErrMalformedSummary},
		{"not JSON", http.StatusOK, `<html>gateway</html>`, memory.ErrMalformedSummary},
		{"no choices", http.StatusOK, `{"choices": []}`, memory.ErrEmptySummary},
		{"error with 200", http.StatusOK, `{"error": {"message": "model not loaded"}}`, memory.ErrEmptySummary},
		{"empty content", http.StatusOK, `{"choices": [{"message": {"role": "assistant", "content": "  "}}]}`, memory.ErrEmptySummary},
		{"null content", http.StatusOK, `{"choices": [{"message": {"role": "assistant", "content": null}}]}`, memory.ErrEmptySummary},
	} {
		t.Run(tc.name, func(t *testing.T) {
			cs := newChatServer(t, "")
			cs.handle = func(w http.ResponseWriter, r *http.Request) {
				w.WriteHeader(tc.status)
				io.WriteString(w, tc.body)
			}
			_, err := cs.summarizer(t, nil).Summarize(context.Background(), "", msgs, 50)
			if !errors.Is(err, tc.want) || !errors.Is(err, memory.ErrSummarization) {
				t.Fatalf("got %v, want %v", err, tc.want)
			}
			if strings.Contains(err.Error(), testAPIKey) {
				t.Fatalf("the error holds the API key: %v", err)
			}
			var se *memory.StatusError
			if isStatus := errors.As(err, &se); isStatus != (tc.status != http.StatusOK) {
				t.Fatalf("errors.As StatusError = %v for status %d: %v", isStatus, tc.status, err)
			}
			if se != nil {
				if se.StatusCode != tc.status || len(se.Body) > 512 || se.Body == "" {
					t.Fatalf("StatusError{%d, %d-byte body}", se.StatusCode, len(se.Body))
				}
				if tc.status == http.StatusUnauthorized && !strings.Contains(se.Body, "Incorrect API key provided: [redacted]") {
					t.Fatalf("body %q", se.Body)
				}
			}
		})
	}

	t.Run("unreachable", func(t *testing.T) {
		cs := newChatServer(t, "")
		s := cs.summarizer(t, nil)
		cs.Close()
		if _, err := s.Summarize(context.Background(), "", msgs, 50); !errors.Is(err, memory.ErrSummarization) {
			t.Fatalf("got %v, want ErrSummarization", err)
		}
	})

	t.Run("budget", func(t *testing.T) {
		cs := newChatServer(t, "x")
		for _, n := range []int{0, -5} {
			if _, err := cs.summarizer(t, nil).Summarize(context.Background(), "", msgs, n); !errors.Is(err, memory.ErrInvalidOptions) {
				t.Errorf("maxTokens %d: got %v, want ErrInvalidOptions", n, err)
			}
		}
		if n := cs.requests.Load(); n != 0 {
			t.Errorf("%d requests for a bad budget", n)
		}
	})
}

// blockingServer answers no request until the client gives up or the test
// ends; started says when a request arrived.
func blockingServer(t *testing.T) (cs *chatServer, started <-chan struct{}) {
	ch := make(chan struct{}, 1)
	release := make(chan struct{})
	cs = newChatServer(t, "")
	cs.handle = func(w http.ResponseWriter, r *http.Request) {
		select {
		case ch <- struct{}{}:
		default:
		}
		select {
		case <-r.Context().Done():
		case <-release:
		}
	}
	t.Cleanup(func() { close(release) }) // runs before cs.Close
	return cs, ch
}

func TestOpenAISummarizerContextCancel(t *testing.T) {
	cs, started := blockingServer(t)
	s := cs.summarizer(t, nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := s.Summarize(ctx, "", []memory.Message{{Role: memory.RoleUser, Content: "Renew Acme."}}, 50)
	if !errors.Is(err, context.Canceled) || errors.Is(err, memory.ErrSummarization) {
		t.Fatalf("got %v, want context.Canceled and not ErrSummarization", err)
	}

	// A context already done sends nothing.
	before := cs.requests.Load()
	if _, err := s.Summarize(ctx, "", []memory.Message{{Role: memory.RoleUser, Content: "Renew Acme."}}, 50); !errors.Is(err, context.Canceled) {
		t.Fatalf("got %v, want context.Canceled", err)
	}
	if cs.requests.Load() != before {
		t.Fatal("a request was sent on a done context")
	}
}

func TestOpenAISummarizerTimeout(t *testing.T) {
	cs, _ := blockingServer(t)
	s := cs.summarizer(t, &memory.OpenAISummarizerOptions{Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := s.Summarize(context.Background(), "", []memory.Message{{Role: memory.RoleUser, Content: "Renew Acme."}}, 50)
	if !errors.Is(err, memory.ErrSummarization) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrSummarization and context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %v with a 50ms timeout", d)
	}
}

func TestNewOpenAISummarizerOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *memory.OpenAISummarizerOptions
		words []string // each must appear in the error
	}{
		{"nil", nil, []string{"BaseURL is required", "Model is required"}},
		{"no base URL", &memory.OpenAISummarizerOptions{Model: "m"}, []string{"BaseURL is required"}},
		{"scheme", &memory.OpenAISummarizerOptions{BaseURL: "ftp://example.com/v1", Model: "m"}, []string{"scheme"}},
		{"no host", &memory.OpenAISummarizerOptions{BaseURL: "http:///v1", Model: "m"}, []string{"no host"}},
		{"query", &memory.OpenAISummarizerOptions{BaseURL: "http://u:hunter2@example.com/v1?x=1", Model: "m"}, []string{"query"}},
		{"encoding and model", &memory.OpenAISummarizerOptions{BaseURL: "http://example.com/v1", Encoding: "nope"}, []string{"Encoding", "Model"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, err := memory.NewOpenAISummarizer(tc.opts)
			if !errors.Is(err, memory.ErrInvalidOptions) || s != nil {
				t.Fatalf("got %v, %v; want ErrInvalidOptions", s, err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error %q holds the URL's password", err)
			}
		})
	}
	if _, err := memory.NewOpenAISummarizer(&memory.OpenAISummarizerOptions{BaseURL: "http://localhost:11434/v1", Model: "llama3.2"}); err != nil {
		t.Fatalf("valid options: %v", err)
	}
}
