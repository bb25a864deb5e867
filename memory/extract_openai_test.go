package memory_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// oaiKnown is a tiny fake memory.Known: a few entities, facts and memories,
// and a record of what it was asked.
type oaiKnown struct {
	entities []string
	facts    []memory.Fact
	memories []memory.Memory
	err      error

	mu          sync.Mutex
	factsAsked  []string
	memoryAsked string
}

func (k *oaiKnown) Entities(text string) []string {
	var out []string
	for _, e := range k.entities {
		if strings.Contains(strings.ToLower(text), strings.ToLower(e)) {
			out = append(out, e)
		}
	}
	return out
}

func (k *oaiKnown) Facts(ctx context.Context, entities []string, limit int) ([]memory.Fact, error) {
	k.mu.Lock()
	k.factsAsked = slices.Clone(entities)
	k.mu.Unlock()
	if k.err != nil {
		return nil, k.err
	}
	var out []memory.Fact
	for _, f := range k.facts {
		if len(out) < limit && (slices.Contains(entities, f.Subject) || slices.Contains(entities, f.Object)) {
			out = append(out, f)
		}
	}
	return out, nil
}

func (k *oaiKnown) Memories(ctx context.Context, text string, limit int) ([]memory.Memory, error) {
	k.mu.Lock()
	k.memoryAsked = text
	k.mu.Unlock()
	return k.memories[:min(limit, len(k.memories))], nil
}

// The store's ids of what oaiKnown holds.
const (
	oaiFactID   = "01J0000000000000000000FACT"
	oaiFactID2  = "01J000000000000000000FACT2"
	oaiMemoryID = "01J00000000000000000MEMORY"
	oaiOtherID  = "01J0000000000000000000NOPE"
)

func newOAIKnown() *oaiKnown {
	return &oaiKnown{
		entities: []string{"Acme", "Dana"},
		facts: []memory.Fact{
			{ID: oaiFactID, Subject: "alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)},
			{ID: oaiFactID2, Subject: "Dana", Predicate: "works_at", Object: "Acme"},
		},
		memories: []memory.Memory{{ID: oaiMemoryID, Kind: memory.KindFact, Text: "Dana owns the Acme renewal."}},
	}
}

func oaiInput(known memory.Known, text string) *memory.ExtractInput {
	return &memory.ExtractInput{
		Scope:   memory.Scope{Tenant: "acme", User: "alice", Session: "s2"},
		Message: memory.Message{ID: "01J0000000000000000000MSG2", Role: memory.RoleUser, Content: text, Time: time.Date(2026, 5, 4, 10, 0, 0, 0, time.UTC)},
		Speaker: "alice",
		User:    "alice",
		Previous: []memory.Message{
			{ID: "01J0000000000000000000MSG1", Role: memory.RoleAssistant, Content: "Who owns the Acme renewal now?", Time: time.Date(2026, 5, 4, 9, 59, 0, 0, time.UTC)},
		},
		Known: known,
	}
}

// oaiServer is a fake chat-completions server for the extractor: it keeps
// every request's raw body and answers with content as the one choice's
// message, or as handle says.
type oaiServer struct {
	*httptest.Server
	mu      sync.Mutex
	bodies  [][]byte
	content string
	handle  func(w http.ResponseWriter, body []byte)
}

func newOAIServer(t *testing.T, content string) *oaiServer {
	t.Helper()
	s := &oaiServer{content: content}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/chat/completions" || r.Header.Get("Authorization") != "Bearer "+testAPIKey {
			t.Errorf("%s %s, Authorization %q", r.Method, r.URL.Path, r.Header.Get("Authorization"))
		}
		body, _ := io.ReadAll(r.Body)
		s.mu.Lock()
		s.bodies = append(s.bodies, body)
		handle, content := s.handle, s.content
		s.mu.Unlock()
		if handle != nil {
			handle(w, body)
			return
		}
		oaiReply(w, map[string]any{"role": "assistant", "content": content}, "stop")
	}))
	t.Cleanup(s.Close)
	return s
}

func oaiReply(w http.ResponseWriter, message map[string]any, finish string) {
	w.Header().Set("Content-Type", "application/json")
	json.NewEncoder(w).Encode(map[string]any{
		"id":      "chatcmpl-1",
		"object":  "chat.completion",
		"choices": []any{map[string]any{"index": 0, "message": message, "finish_reason": finish}},
	})
}

func (s *oaiServer) requests() [][]byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return slices.Clone(s.bodies)
}

func (s *oaiServer) extractor(t *testing.T, opts *memory.OpenAIExtractorOptions) *memory.OpenAIExtractor {
	t.Helper()
	return oaiExtractor(t, s.URL, s.Client(), opts)
}

func oaiExtractor(t *testing.T, url string, client *http.Client, opts *memory.OpenAIExtractorOptions) *memory.OpenAIExtractor {
	t.Helper()
	var o memory.OpenAIExtractorOptions
	if opts != nil {
		o = *opts
	}
	o.BaseURL = url + "/v1/"
	o.APIKey = testAPIKey
	o.Model = "gpt-test"
	o.HTTPClient = client
	x, err := memory.NewOpenAIExtractor(&o)
	if err != nil {
		t.Fatalf("NewOpenAIExtractor: %v", err)
	}
	return x
}

// oaiGoodReply exercises every decision, with the short ids the request
// gave.
const oaiGoodReply = `{
  "add": [
    {"kind": "fact", "text": "Sam owns the Acme renewal since May 2026.", "tags": ["acme", "Renewal", "acme"], "importance": 0.8},
    {"kind": "preference", "text": "Alice prefers e-mail to calls.", "tags": [], "importance": 0.5}
  ],
  "update": [{"id": "m1", "text": "Sam, not Dana, owns the Acme renewal."}],
  "delete": [],
  "entities": [
    {"name": "Sam", "type": "person", "aliases": ["Samuel", "sam"], "observations": ["owns the Acme renewal"]},
    {"name": "I", "type": "person", "aliases": [], "observations": ["prefers e-mail"]}
  ],
  "facts": [
    {"subject": "my", "predicate": "Renewal Owner", "object": "Sam", "valid_from": "2026-05-01T00:00:00Z", "confidence": 0.9, "single_valued": true},
    {"subject": "Sam", "predicate": "works_at", "object": "Acme", "valid_from": null, "confidence": 1, "single_valued": false}
  ],
  "invalidate": [{"id": "f1", "subject": null, "predicate": null, "object": null}]
}`

func TestOpenAIExtractorMapsReply(t *testing.T) {
	srv := newOAIServer(t, oaiGoodReply)
	x := srv.extractor(t, nil)
	known := newOAIKnown()
	got, err := x.Extract(context.Background(), oaiInput(known, "Sam took over the Acme renewal on May 1st. I prefer e-mail."))
	if err != nil {
		t.Fatal(err)
	}
	want := &memory.Extraction{
		Memories: []memory.Memory{
			{Kind: memory.KindFact, Text: "Sam owns the Acme renewal since May 2026.", Tags: []string{"acme", "renewal"}, Importance: 0.8},
			{Kind: memory.KindPreference, Text: "Alice prefers e-mail to calls.", Importance: 0.5},
		},
		Entities: []graph.Entity{
			{Name: "Sam", Type: "person", Aliases: []string{"Samuel"}, Observations: []string{"owns the Acme renewal"}},
			{Name: "alice", Type: "person", Observations: []string{"prefers e-mail"}},
		},
		Facts: []memory.Fact{
			{Subject: "alice", Predicate: "renewal_owner", Object: "Sam", ValidFrom: time.Date(2026, 5, 1, 0, 0, 0, 0, time.UTC), Confidence: 0.9},
			{Subject: "Sam", Predicate: "works_at", Object: "Acme", Confidence: 1},
		},
		SingleValued: []string{"renewal_owner"},
		Invalidate:   []memory.Fact{{ID: oaiFactID}},
		Updates:      []memory.Memory{{ID: oaiMemoryID, Text: "Sam, not Dana, owns the Acme renewal."}},
	}
	if !reflect.DeepEqual(got, want) {
		gj, _ := json.MarshalIndent(got, "", "  ")
		wj, _ := json.MarshalIndent(want, "", "  ")
		t.Fatalf("got\n%s\nwant\n%s", gj, wj)
	}

	// What was asked of the store: the entities named in the message and
	// the previous one, then the speaker; the memories like the message.
	if want := []string{"Acme", "alice"}; !reflect.DeepEqual(known.factsAsked, want) {
		t.Errorf("facts asked for %q, want %q", known.factsAsked, want)
	}
	if !strings.HasPrefix(known.memoryAsked, "Sam took over") {
		t.Errorf("memories asked for %q", known.memoryAsked)
	}

	// The request.
	reqs := srv.requests()
	if len(reqs) != 1 {
		t.Fatalf("%d requests", len(reqs))
	}
	var req struct {
		Model     string `json:"model"`
		MaxTokens int    `json:"max_tokens"`
		Messages  []struct {
			Role    string `json:"role"`
			Content string `json:"content"`
		} `json:"messages"`
		ResponseFormat struct {
			Type       string `json:"type"`
			JSONSchema struct {
				Name   string `json:"name"`
				Strict bool   `json:"strict"`
				Schema struct {
					Required             []string       `json:"required"`
					AdditionalProperties bool           `json:"additionalProperties"`
					Properties           map[string]any `json:"properties"`
				} `json:"schema"`
			} `json:"json_schema"`
		} `json:"response_format"`
	}
	if err := json.Unmarshal(reqs[0], &req); err != nil {
		t.Fatal(err)
	}
	rf := req.ResponseFormat
	if req.Model != "gpt-test" || req.MaxTokens != 2048 || rf.Type != "json_schema" || !rf.JSONSchema.Strict || rf.JSONSchema.Name == "" {
		t.Errorf("request: model %q, max_tokens %d, response_format %+v", req.Model, req.MaxTokens, rf)
	}
	if want := []string{"add", "delete", "entities", "facts", "invalidate", "update"}; !reflect.DeepEqual(rf.JSONSchema.Schema.Required, want) || rf.JSONSchema.Schema.AdditionalProperties {
		t.Errorf("schema requires %q, additionalProperties %v", rf.JSONSchema.Schema.Required, rf.JSONSchema.Schema.AdditionalProperties)
	}
	if len(req.Messages) != 2 || req.Messages[0].Role != "system" || req.Messages[0].Content != memory.DefaultExtractionPrompt || req.Messages[1].Role != "user" {
		t.Fatalf("messages %+v", req.Messages)
	}
	var payload struct {
		Message struct {
			Speaker, Role, Time, Text string
		} `json:"message"`
		Previous []struct {
			Speaker, Role, Time, Text string
		} `json:"previous"`
		KnownEntities []string `json:"known_entities"`
		KnownMemories []struct {
			ID, Kind, Text string
		} `json:"known_memories"`
		KnownFacts []struct {
			ID        string `json:"id"`
			Subject   string `json:"subject"`
			Predicate string `json:"predicate"`
			Object    string `json:"object"`
			ValidFrom string `json:"valid_from"`
		} `json:"known_facts"`
	}
	if err := json.Unmarshal([]byte(req.Messages[1].Content), &payload); err != nil {
		t.Fatalf("user message is not JSON: %v\n%s", err, req.Messages[1].Content)
	}
	m := payload.Message
	if m.Speaker != "alice" || m.Role != "user" || m.Time != "2026-05-04T10:00:00Z" || !strings.HasPrefix(m.Text, "Sam took over") {
		t.Errorf("message %+v", m)
	}
	if len(payload.Previous) != 1 || payload.Previous[0].Speaker != "assistant" || payload.Previous[0].Text != "Who owns the Acme renewal now?" {
		t.Errorf("previous %+v", payload.Previous)
	}
	if !reflect.DeepEqual(payload.KnownEntities, []string{"Acme"}) {
		t.Errorf("known entities %q", payload.KnownEntities)
	}
	if len(payload.KnownFacts) != 2 || payload.KnownFacts[0].ID != "f1" || payload.KnownFacts[0].Subject != "alice" ||
		payload.KnownFacts[0].Predicate != "renewal_owner" || payload.KnownFacts[0].Object != "Dana" || payload.KnownFacts[0].ValidFrom != "2026-03-01T00:00:00Z" ||
		payload.KnownFacts[1].ID != "f2" {
		t.Errorf("known facts %+v", payload.KnownFacts)
	}
	if len(payload.KnownMemories) != 1 || payload.KnownMemories[0].ID != "m1" || payload.KnownMemories[0].Text != "Dana owns the Acme renewal." {
		t.Errorf("known memories %+v", payload.KnownMemories)
	}
	if strings.Contains(req.Messages[0].Content+req.Messages[1].Content, testAPIKey) {
		t.Error("the request's messages hold the API key")
	}

	// Options: a custom prompt, no max_tokens.
	x = srv.extractor(t, &memory.OpenAIExtractorOptions{Prompt: "Extract, briefly.", MaxTokens: -1})
	if _, err := x.Extract(context.Background(), oaiInput(known, "Hello")); err != nil {
		t.Fatal(err)
	}
	last := srv.requests()[1]
	if !strings.Contains(string(last), `"content":"Extract, briefly."`) || strings.Contains(string(last), "max_tokens") {
		t.Errorf("request with options: %s", last)
	}
}

func TestOpenAIExtractorDropsBadItems(t *testing.T) {
	long := strings.Repeat("x", 3000)
	for _, tc := range []struct {
		name    string
		speaker string
		reply   string
		want    *memory.Extraction
	}{
		{"empty lists", "alice", `{"add": [], "update": [], "delete": [], "entities": [], "facts": [], "invalidate": []}`, &memory.Extraction{}},
		{"some keys only", "alice", `{"facts": null}`, &memory.Extraction{}},
		{"unknown ids", "alice", `{
			"update": [{"id": "m2", "text": "x"}, {"id": "` + oaiOtherID + `", "text": "y"}, {"id": "", "text": "z"}],
			"delete": ["m7", "` + oaiOtherID + `", {"id": "f1"}],
			"invalidate": [{"id": "f9"}, {"id": "m1"}, {"id": "` + oaiOtherID + `"}, {"subject": "Bob", "predicate": "renewal_owner"}, {"subject": "alice", "predicate": "renewal_owner", "object": "Bob"}, {"subject": "alice", "predicate": "renewal_owner", "object": "\u0007"}]}`,
			&memory.Extraction{}},
		{"real ids of what was shown", "alice", `{
			"delete": [{"id": "` + oaiMemoryID + `"}],
			"update": [{"id": "m1", "text": "deleted too, so dropped"}],
			"invalidate": [{"id": "` + oaiFactID2 + `"}, {"id": "f2"}, {"subject": "Alice", "predicate": "Renewal Owner", "object": null}]}`,
			&memory.Extraction{Deletes: []string{oaiMemoryID}, Invalidate: []memory.Fact{{ID: oaiFactID2}, {ID: oaiFactID}}}},
		{"empty parts", "alice", `{
			"add": [{"kind": "fact", "text": "  ", "tags": [], "importance": 0.5}, {"kind": "", "text": "no kind", "tags": [], "importance": 0.5}],
			"entities": [{"name": " ", "type": "person", "aliases": [], "observations": []}],
			"facts": [{"subject": "", "predicate": "owns", "object": "Acme", "confidence": 1},
			          {"subject": "Sam", "predicate": " ", "object": "Acme", "confidence": 1},
			          {"subject": "Sam", "predicate": "owns", "object": "", "confidence": 1},
			          {"subject": "Sam", "predicate": "-_-", "object": "Acme", "confidence": 1}],
			"invalidate": [{"id": null, "subject": "alice", "predicate": null, "object": "Dana"}, {"id": "", "subject": null, "predicate": "renewal_owner", "object": null}]}`,
			&memory.Extraction{}},
		{"kinds", "alice", `{"add": [
			{"kind": "Preference", "text": "Alice likes tea.", "tags": [], "importance": 0.5},
			{"kind": " EPISODE ", "text": "Alice went to Lisbon on 2 May 2026.", "tags": ["trip", "bad\u0007tag", ""], "importance": 0.5},
			{"kind": "opinion", "text": "An unknown kind.", "tags": [], "importance": 0.5},
			{"kind": "summary", "text": "A summary is a kind.", "tags": [], "importance": 0}]}`,
			&memory.Extraction{Memories: []memory.Memory{
				{Kind: memory.KindPreference, Text: "Alice likes tea.", Importance: 0.5},
				{Kind: memory.KindEpisode, Text: "Alice went to Lisbon on 2 May 2026.", Tags: []string{"trip"}, Importance: 0.5},
				{Kind: memory.KindSummary, Text: "A summary is a kind."},
			}}},
		{"out of range", "alice", `{
			"add": [{"kind": "fact", "text": "too important", "tags": [], "importance": 1.5}, {"kind": "fact", "text": "negative", "tags": [], "importance": -0.1},
			        {"kind": "fact", "text": "` + long + `", "tags": [], "importance": 0.5}],
			"facts": [{"subject": "Sam", "predicate": "owns", "object": "Acme", "confidence": 0},
			          {"subject": "Sam", "predicate": "owns", "object": "Acme", "confidence": 1.01},
			          {"subject": "Sam", "predicate": "owns", "object": "Acme", "confidence": -1},
			          {"subject": "` + long + `", "predicate": "owns", "object": "Acme", "confidence": 1},
			          {"subject": "Sam", "predicate": "owns", "object": "Acme", "valid_from": "last May", "confidence": 0.5},
			          {"subject": "Sam", "predicate": "owns", "object": "Beta", "valid_from": "2026-05-02", "confidence": 0.5},
			          {"subject": "Sam", "predicate": "owns", "object": "Gamma", "valid_from": "9999-01-01T00:00:00Z", "confidence": 0.5}]}`,
			&memory.Extraction{Facts: []memory.Fact{
				{Subject: "Sam", Predicate: "owns", Object: "Acme", Confidence: 0.5},
				{Subject: "Sam", Predicate: "owns", Object: "Beta", Confidence: 0.5, ValidFrom: time.Date(2026, 5, 2, 0, 0, 0, 0, time.UTC)},
				{Subject: "Sam", Predicate: "owns", Object: "Gamma", Confidence: 0.5},
			}}},
		{"bad characters", "alice", "{\"add\": [{\"kind\": \"fact\", \"text\": \"bell \\u0007 rings\", \"tags\": [], \"importance\": 0.5}, {\"kind\": \"fact\", \"text\": \"broken \xff\xfe utf-8\", \"tags\": [], \"importance\": 0.5}]," +
			"\"entities\": [{\"name\": \"Sam\\u0000\", \"type\": \"person\"}, {\"name\": \"Bob\", \"type\": \"  a \\u0001very long type name that goes on and on and on well past the sixty-four bytes kept  \", \"aliases\": [\"\xff\"], \"observations\": [\"\", \"ok\", \"ok\"]}]}",
			&memory.Extraction{Entities: []graph.Entity{{Name: "Bob", Type: "a very long type name that goes on and on and on well past the s", Observations: []string{"ok"}}}}},
		{"first person without a speaker", "", `{
			"entities": [{"name": "me", "type": "person", "aliases": [], "observations": []}],
			"facts": [{"subject": "I", "predicate": "lives_in", "object": "Lisbon", "confidence": 1, "single_valued": true}]}`,
			&memory.Extraction{Entities: nil}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOAIServer(t, tc.reply)
			in := oaiInput(newOAIKnown(), "Sam took over the Acme renewal.")
			in.Speaker = tc.speaker
			got, err := srv.extractor(t, nil).Extract(context.Background(), in)
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(got, tc.want) {
				gj, _ := json.MarshalIndent(got, "", "  ")
				wj, _ := json.MarshalIndent(tc.want, "", "  ")
				t.Fatalf("got\n%s\nwant\n%s", gj, wj)
			}
		})
	}
}

func TestOpenAIExtractorFencedJSON(t *testing.T) {
	inner := `{"add": [{"kind": "fact", "text": "Sam owns the Acme renewal.", "tags": [], "importance": 0.5}]}`
	want := &memory.Extraction{Memories: []memory.Memory{{Kind: memory.KindFact, Text: "Sam owns the Acme renewal.", Importance: 0.5}}}
	for _, content := range []string{
		"```json\n" + inner + "\n```",
		"```\n" + inner + "\n```\n",
		"Here is the extraction:\n\n```json\n" + inner + "\n```\nHope it helps.",
		"<think>The user says {maybe} who owns it.</think>\n" + inner,
		"Sure! " + inner,
	} {
		srv := newOAIServer(t, content)
		got, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns the Acme renewal."))
		if err != nil || !reflect.DeepEqual(got, want) {
			t.Errorf("content %q: got %+v, %v", content, got, err)
		}
	}
}

func TestOpenAIExtractorMalformed(t *testing.T) {
	for _, tc := range []struct {
		name string
		body string // the whole reply's body, when set
		msg  any    // else the message of the one choice
	}{
		{name: "not JSON", msg: "Sam owns the Acme renewal."},
		{name: "truncated JSON", msg: `{"add": [{"kind": "fact", "text": "Sam ow`},
		{name: "array", msg: `[1, 2, 3]`},
		{name: "other keys", msg: `{"memories": [{"text": "Sam owns it."}]}`},
		{name: "wrong shape", msg: `{"add": "Sam owns it."}`},
		{name: "wrong item shape", msg: `{"facts": [["Sam", "owns", "Acme"]]}`},
		{name: "wrong field type", msg: `{"add": [{"kind": "fact", "text": 42}]}`},
		{name: "wrong id type", msg: `{"delete": [42]}`},
		{name: "empty content", msg: "  "},
		{name: "null content", msg: nil},
		{name: "body not JSON", body: `<html>gateway</html>`},
		{name: "no choices", body: `{"choices": []}`},
		{name: "choices not a list", body: `{"choices": {"message": "x"}}`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOAIServer(t, "")
			srv.handle = func(w http.ResponseWriter, _ []byte) {
				if tc.body != "" {
					io.WriteString(w, tc.body)
					return
				}
				oaiReply(w, map[string]any{"role": "assistant", "content": tc.msg}, "stop")
			}
			got, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns the Acme renewal."))
			if !errors.Is(err, memory.ErrMalformedExtraction) || !errors.Is(err, memory.ErrExtraction) || got != nil {
				t.Fatalf("got %+v, %v; want ErrMalformedExtraction", got, err)
			}
			if errors.Is(err, memory.ErrExtractionRefused) || errors.Is(err, memory.ErrSummarization) {
				t.Fatalf("error %v is of the wrong class", err)
			}
		})
	}

	t.Run("error with 200", func(t *testing.T) {
		srv := newOAIServer(t, "")
		srv.handle = func(w http.ResponseWriter, _ []byte) {
			io.WriteString(w, `{"error": {"message": "model not loaded; key `+testAPIKey+`"}}`)
		}
		_, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
		if !errors.Is(err, memory.ErrExtraction) || !strings.Contains(err.Error(), "model not loaded") || strings.Contains(err.Error(), testAPIKey) {
			t.Fatalf("got %v", err)
		}
	})
}

func TestOpenAIExtractorRefusal(t *testing.T) {
	for _, tc := range []struct {
		name   string
		msg    map[string]any
		finish string
	}{
		{"refusal", map[string]any{"role": "assistant", "content": nil, "refusal": "I can't help with that."}, "stop"},
		{"content filter", map[string]any{"role": "assistant", "content": ""}, "content_filter"},
		{"content filter with content", map[string]any{"role": "assistant", "content": `{"add": []}`}, "content_filter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			srv := newOAIServer(t, "")
			srv.handle = func(w http.ResponseWriter, _ []byte) { oaiReply(w, tc.msg, tc.finish) }
			_, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
			if !errors.Is(err, memory.ErrExtractionRefused) || !errors.Is(err, memory.ErrExtraction) || errors.Is(err, memory.ErrMalformedExtraction) {
				t.Fatalf("got %v, want ErrExtractionRefused", err)
			}
		})
	}
}

func TestOpenAIExtractorStatus(t *testing.T) {
	for _, status := range []int{http.StatusUnauthorized, http.StatusTooManyRequests, http.StatusInternalServerError, http.StatusBadRequest} {
		t.Run(fmt.Sprint(status), func(t *testing.T) {
			srv := newOAIServer(t, "")
			srv.handle = func(w http.ResponseWriter, _ []byte) {
				w.WriteHeader(status)
				io.WriteString(w, `{"error":{"message":"Incorrect API key provided: `+testAPIKey+`"}}`+strings.Repeat(" pad", 500))
			}
			_, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
			var se *memory.StatusError
			if !errors.As(err, &se) || se.StatusCode != status || !errors.Is(err, memory.ErrExtraction) || errors.Is(err, memory.ErrSummarization) {
				t.Fatalf("got %v, want a StatusError %d of ErrExtraction", err, status)
			}
			if len(se.Body) > 512 || !strings.Contains(se.Body, "Incorrect API key provided: [redacted]") || strings.Contains(err.Error(), testAPIKey) {
				t.Fatalf("body %q, error %v", se.Body, err)
			}
			if !strings.HasPrefix(err.Error(), "memory: extraction failed: server replied") {
				t.Fatalf("error %q", err)
			}
			if n := len(srv.requests()); n != 1 {
				t.Fatalf("%d requests, want 1", n)
			}
		})
	}
}

func TestOpenAIExtractorSchemaFallback(t *testing.T) {
	srv := newOAIServer(t, "")
	srv.handle = func(w http.ResponseWriter, body []byte) {
		if strings.Contains(string(body), "response_format") {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"error":{"message":"'response_format.type' must be 'json_object' or 'text'"}}`)
			return
		}
		oaiReply(w, map[string]any{"role": "assistant", "content": "```json\n{\"add\": [{\"kind\": \"fact\", \"text\": \"Sam owns it.\"}]}\n```"}, "stop")
	}
	x := srv.extractor(t, nil)
	for i := range 2 {
		got, err := x.Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
		if err != nil || len(got.Memories) != 1 || got.Memories[0].Text != "Sam owns it." {
			t.Fatalf("call %d: got %+v, %v", i, got, err)
		}
	}
	if n := len(srv.requests()); n != 3 {
		t.Fatalf("%d requests, want 3: one refused with the schema, then two without", n)
	}
}

func TestOpenAIExtractorBounds(t *testing.T) {
	t.Run("huge reply", func(t *testing.T) {
		srv := newOAIServer(t, strings.Repeat("x", 3<<20))
		_, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
		if !errors.Is(err, memory.ErrMalformedExtraction) {
			t.Fatalf("got %v, want ErrMalformedExtraction", err)
		}
	})
	t.Run("many items", func(t *testing.T) {
		var b strings.Builder
		b.WriteString(`{"add": [`)
		for i := range 1000 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `{"kind": "fact", "text": "Fact %d.", "tags": ["t%d"], "importance": 0.5}`, i, i)
		}
		b.WriteString(`], "entities": [{"name": "Sam", "type": "person", "aliases": [`)
		for i := range 500 {
			if i > 0 {
				b.WriteByte(',')
			}
			fmt.Fprintf(&b, `"Sam %d"`, i)
		}
		b.WriteString(`], "observations": []}]}`)
		srv := newOAIServer(t, b.String())
		got, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
		if err != nil {
			t.Fatal(err)
		}
		if len(got.Memories) != 64 || len(got.Entities) != 1 || len(got.Entities[0].Aliases) != 16 {
			t.Fatalf("%d memories, %d entities", len(got.Memories), len(got.Entities))
		}
	})
	t.Run("huge message", func(t *testing.T) {
		srv := newOAIServer(t, `{"add": []}`)
		in := oaiInput(newOAIKnown(), strings.Repeat("y", 200<<10))
		in.Previous = append(in.Previous, memory.Message{Role: memory.RoleUser, Content: strings.Repeat("\xff", 100<<10)})
		if _, err := srv.extractor(t, nil).Extract(context.Background(), in); err != nil {
			t.Fatal(err)
		}
		if n := len(srv.requests()[0]); n > 64<<10 {
			t.Fatalf("a request of %d bytes for a 200 KiB message", n)
		}
	})
	t.Run("nothing to read", func(t *testing.T) {
		srv := newOAIServer(t, `{"add": []}`)
		x := srv.extractor(t, nil)
		got, err := x.Extract(context.Background(), oaiInput(newOAIKnown(), " \n "))
		if err != nil || !got.Empty() || len(srv.requests()) != 0 {
			t.Fatalf("got %+v, %v after %d requests", got, err, len(srv.requests()))
		}
		if _, err := x.Extract(context.Background(), nil); !errors.Is(err, memory.ErrInvalidOptions) {
			t.Fatalf("nil input: %v", err)
		}
	})
	t.Run("store error", func(t *testing.T) {
		srv := newOAIServer(t, `{"add": []}`)
		known := newOAIKnown()
		known.err = memory.ErrClosed
		if _, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(known, "Sam owns it.")); !errors.Is(err, memory.ErrClosed) || len(srv.requests()) != 0 {
			t.Fatalf("got %v after %d requests", err, len(srv.requests()))
		}
	})
	t.Run("nil known", func(t *testing.T) {
		srv := newOAIServer(t, `{"add": [], "update": [{"id": "m1", "text": "x"}]}`)
		got, err := srv.extractor(t, nil).Extract(context.Background(), oaiInput(nil, "Sam owns it."))
		if err != nil || !got.Empty() {
			t.Fatalf("got %+v, %v", got, err)
		}
	})
}

func TestOpenAIExtractorTimeout(t *testing.T) {
	cs, _ := blockingServer(t)
	x := oaiExtractor(t, cs.URL, cs.Client(), &memory.OpenAIExtractorOptions{Timeout: 50 * time.Millisecond})
	start := time.Now()
	_, err := x.Extract(context.Background(), oaiInput(newOAIKnown(), "Sam owns it."))
	if !errors.Is(err, memory.ErrExtraction) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("got %v, want ErrExtraction and context.DeadlineExceeded", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("returned after %v with a 50ms timeout", d)
	}
}

func TestOpenAIExtractorContextCancel(t *testing.T) {
	cs, started := blockingServer(t)
	x := oaiExtractor(t, cs.URL, cs.Client(), nil)
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		<-started
		cancel()
	}()
	_, err := x.Extract(ctx, oaiInput(newOAIKnown(), "Sam owns it."))
	if !errors.Is(err, context.Canceled) || errors.Is(err, memory.ErrExtraction) {
		t.Fatalf("got %v, want context.Canceled and not ErrExtraction", err)
	}
	before := cs.requests.Load()
	if _, err := x.Extract(ctx, oaiInput(newOAIKnown(), "Sam owns it.")); !errors.Is(err, context.Canceled) || cs.requests.Load() != before {
		t.Fatalf("done context: got %v, %d requests sent", err, cs.requests.Load()-before)
	}

	// A deadline shorter than the extractor's timeout is the caller's.
	ctx, cancel = context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := x.Extract(ctx, oaiInput(newOAIKnown(), "Sam owns it.")); !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, memory.ErrExtraction) {
		t.Fatalf("got %v, want the caller's deadline", err)
	}
}

func TestNewOpenAIExtractorOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  *memory.OpenAIExtractorOptions
		words []string
	}{
		{"nil", nil, []string{"BaseURL is required", "Model is required"}},
		{"scheme", &memory.OpenAIExtractorOptions{BaseURL: "ftp://example.com/v1", Model: "m"}, []string{"scheme"}},
		{"query", &memory.OpenAIExtractorOptions{BaseURL: "http://u:hunter2@example.com/v1?x=1", Model: "m", APIKey: "sk-hunter3"}, []string{"query"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			x, err := memory.NewOpenAIExtractor(tc.opts)
			if !errors.Is(err, memory.ErrInvalidOptions) || x != nil {
				t.Fatalf("got %v, %v; want ErrInvalidOptions", x, err)
			}
			for _, w := range tc.words {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
			if strings.Contains(err.Error(), "hunter") {
				t.Errorf("error %q holds a secret", err)
			}
		})
	}
}

// An OpenAIExtractor against a local Ollama server: Ollama serves the
// OpenAI chat-completions API under /v1 and needs no key. Making it sends
// nothing; give it to the store as its extractor to use it.
func ExampleNewOpenAIExtractor() {
	x, err := memory.NewOpenAIExtractor(&memory.OpenAIExtractorOptions{
		BaseURL: "http://localhost:11434/v1",
		Model:   "llama3.2",
		Timeout: 2 * time.Minute, // a local model on a CPU is slow
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	var _ memory.Extractor = x
	fmt.Println("ready")
	// Output: ready
}
