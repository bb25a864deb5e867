package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// TestClassify maps each error of package memory, wrapped as the store
// wraps them, to its status and code; server errors keep their detail out
// of the message.
func TestClassify(t *testing.T) {
	for _, tc := range []struct {
		err    error
		status int
		code   string
	}{
		{memory.ErrInvalidScope, 400, "invalid_scope"},
		{memory.ErrInvalidMessage, 400, "invalid_message"},
		{memory.ErrInvalidRole, 400, "invalid_message"},
		{memory.ErrOrphanToolResult, 400, "invalid_message"},
		{memory.ErrInvalidToolArguments, 400, "invalid_message"},
		{memory.ErrDuplicateToolCall, 400, "invalid_message"},
		{memory.ErrInvalidMemory, 400, "invalid_memory"},
		{memory.ErrInvalidFact, 400, "invalid_fact"},
		{fmt.Errorf("%w: %w", memory.ErrInvalidFact, memory.ErrInvalidName), 400, "invalid_fact"},
		{memory.ErrInvalidEntity, 400, "invalid_entity"},
		{memory.ErrInvalidName, 400, "invalid_name"},
		{memory.ErrInvalidQuery, 400, "invalid_query"},
		{memory.ErrInvalidCursor, 400, "invalid_cursor"},
		{memory.ErrInvalidOptions, 400, "invalid_options"},
		{engine.ErrInvalidRecord, 400, "invalid_record"},
		{memory.ErrNotFound, 404, "not_found"},
		{memory.ErrEntityNotFound, 404, "entity_not_found"},
		{memory.ErrFactNotFound, 404, "fact_not_found"},
		{memory.ErrTooLarge, 413, "too_large"},
		{memory.ErrAliasConflict, 409, "alias_conflict"},
		{engine.ErrConflict, 409, "conflict"},
		{memory.ErrBudgetTooSmall, 422, "budget_too_small"},
		{memory.ErrEmbedding, 502, "embedding_failed"},
		{memory.ErrSummarization, 502, "summarization_failed"},
		{&memory.StatusError{StatusCode: 429, Body: "rate limited"}, 502, "summarization_failed"},
		{memory.ErrDiskFull, 507, "disk_full"},
		{memory.ErrClosed, 503, "unavailable"},
		{context.DeadlineExceeded, 504, "timeout"},
		{context.Canceled, 499, "canceled"},
		{memory.ErrCorrupt, 500, "internal"},
		{engine.ErrCorrupt, 500, "internal"},
		{errors.New("open /var/lib/engram/000123.vlog: permission denied"), 500, "internal"},
		{badRequest("invalid_parameter", "x"), 400, "invalid_parameter"},
		{fmt.Errorf("%w: this node holds no lease on partition", kv.ErrFenced), 503, "partition_moved"},
		{&kv.LeaseHeldError{Lease: kv.Lease{Node: "b"}}, 503, "partition_moved"},
		{&cluster.UnavailableError{Owner: "b", Reason: "it could not be reached", Err: errors.New("dial 10.0.0.2")}, 503, "owner_unavailable"},
	} {
		t.Run(tc.err.Error(), func(t *testing.T) {
			wrapped := fmt.Errorf("append message 3 in /srv/data: %w", tc.err)
			status, code, msg := classify(wrapped)
			if status != tc.status || code != tc.code {
				t.Fatalf("classify = %d %s, want %d %s", status, code, tc.status, tc.code)
			}
			if status >= 500 && strings.Contains(msg, "/srv/data") {
				t.Errorf("a server error leaks its detail: %q", msg)
			}
			// A client error keeps its reason, the class's own words
			// after the package's: "unknown role", not "memory:
			// invalid message: unknown role".
			reason := tc.err.Error()
			reason = reason[strings.LastIndex(reason, ": ")+1:]
			if status < 500 && status != 499 && !strings.Contains(msg, reason) {
				t.Errorf("a client error hides its reason: %q", msg)
			}
		})
	}
}

// TestClosedStore: calls after the store closed answer 503, not 500.
func TestClosedStore(t *testing.T) {
	s := newTestServer(t, nil, nil)
	if err := s.store.Close(); err != nil {
		t.Fatal(err)
	}
	r := s.call("GET", "/v1/users/alice/sessions", tokenAcme, nil)
	if r.status != http.StatusServiceUnavailable || r.errorCode() != "unavailable" {
		t.Fatalf("= %d %s", r.status, r.body)
	}
	if !strings.Contains(s.log.String(), `"level":"ERROR"`) {
		t.Errorf("a 503 is not logged as an error:\n%s", s.log.String())
	}
}

// TestOwnershipErrors: a partition that moved, or an owner that cannot be
// reached, is answered 503 with Retry-After (a retry finds the new owner),
// naming the owner and nothing internal; never 500.
func TestOwnershipErrors(t *testing.T) {
	h := &Handler{}
	for _, tc := range []struct {
		err      error
		code     string
		contains string
	}{
		{fmt.Errorf("remember: %w: this node (a) holds no lease on partition \"t\\x00acme\"", kv.ErrFenced), "partition_moved", "moved to another node"},
		{fmt.Errorf("remember: %w", &kv.LeaseHeldError{Lease: kv.Lease{Node: "node-b", Partition: []byte("secret-part")}}), "partition_moved", "node node-b"},
		{&cluster.UnavailableError{Owner: "node-b", Reason: "it could not be reached", Err: errors.New("dial tcp 10.0.0.2:7437")}, "owner_unavailable", "node node-b"},
	} {
		rec := httptest.NewRecorder()
		h.writeError(rec, httptest.NewRequest("GET", "/", nil), tc.err)
		body := rec.Body.String()
		if rec.Code != 503 || rec.Header().Get("Retry-After") != "1" || !strings.Contains(body, tc.code) || !strings.Contains(body, tc.contains) {
			t.Errorf("%v: %d Retry-After %q %s", tc.err, rec.Code, rec.Header().Get("Retry-After"), body)
		}
		for _, leak := range []string{"10.0.0.2", "secret-part", "acme"} {
			if strings.Contains(body, leak) {
				t.Errorf("%v: the answer shows %q: %s", tc.err, leak, body)
			}
		}
	}
	rec := httptest.NewRecorder()
	h.writeError(rec, httptest.NewRequest("GET", "/", nil), memory.ErrClosed)
	if rec.Header().Get("Retry-After") != "" {
		t.Errorf("Retry-After on a closed store's 503")
	}
}

// TestFieldMessages: a bad message or fact in a request body is answered
// with the path of the field at fault in that body and why, never the
// chain of calls inside the store ("batch op 0: append message 0: memory:
// invalid message: ...").
func TestFieldMessages(t *testing.T) {
	s := newTestServer(t, nil, nil)
	msgs := "/v1/users/alice/sessions/s/messages"
	user := map[string]any{"role": "user", "content": "hi"}
	for _, tc := range []struct {
		name string
		body map[string]any
		code string
		want string
	}{
		{"role", map[string]any{"messages": []any{map[string]any{"role": "robot", "content": "a"}}},
			"invalid_message", `messages[0].role: unknown role "robot"`},
		{"empty second message", map[string]any{"messages": []any{user, map[string]any{"role": "user", "content": ""}}},
			"invalid_message", "messages[1].content: empty user message"},
		{"tool call id", map[string]any{"messages": []any{map[string]any{"role": "assistant", "tool_calls": []any{map[string]any{"id": "a", "name": "f"}, map[string]any{"id": "a", "name": "f"}}}}},
			"invalid_message", `messages[0].tool_calls[1].id: duplicate tool-call id "a"`},
		{"orphan tool result", map[string]any{"messages": []any{user, map[string]any{"role": "tool", "tool_call_id": "nope", "content": "x"}}},
			"invalid_message", "messages[1].tool_call_id: tool result answers no earlier tool call"},
		{"tool result on a user message", map[string]any{"messages": []any{map[string]any{"role": "user", "content": "x", "tool_call_id": "c1"}}},
			"invalid_message", "messages[0].tool_call_id: a tool-call id belongs on a tool result, not on a user message"},
		{"second fact", map[string]any{"messages": []any{user}, "facts": []any{
			map[string]any{"subject": "a", "predicate": "p", "object": "o"}, map[string]any{"subject": "", "predicate": "p", "object": "o"}}},
			"invalid_fact", "facts[1]: empty subject"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := s.call("POST", msgs, tokenAcme, tc.body)
			var e errorBody
			if err := json.Unmarshal(r.body, &e); err != nil || r.status != 400 {
				t.Fatalf("%d %s", r.status, r.body)
			}
			if e.Error.Code != tc.code || !strings.HasPrefix(e.Error.Message, tc.want) {
				t.Errorf("error = %+v, want %s %q...", e.Error, tc.code, tc.want)
			}
			for _, leak := range []string{"batch op", "append message", "memory:", "graph:", "engine:"} {
				if strings.Contains(e.Error.Message, leak) {
					t.Errorf("message %q shows %q", e.Error.Message, leak)
				}
			}
		})
	}
}

// TestClientMessagesOnce: a client error's message says why once, without
// the package prefixes of the classes its code already names. Before, a
// fact with an empty subject answered "graph: invalid fact: graph: invalid
// name: empty subject".
func TestClientMessagesOnce(t *testing.T) {
	s := newTestServer(t, nil, nil)
	for _, tc := range []struct {
		method, path, body string
		code, want         string
	}{
		{"POST", "/v1/users/alice/memories", `{"text":""}`, "invalid_memory", "empty text"},
		{"POST", "/v1/users/alice/memories", `{"text":"x","kind":"bogus"}`, "invalid_memory", `unknown kind "bogus"`},
		{"POST", "/v1/users/alice/facts", `{"subject":"","predicate":"p","object":"o"}`, "invalid_fact", "empty subject"},
		{"POST", "/v1/users/alice/facts", `{"subject":"s","predicate":"p","object":"o","confidence":2}`, "invalid_fact", "Confidence 2 is outside [0, 1]"},
		{"GET", "/v1/users/" + strings.Repeat("u", 300) + "/sessions", ``, "invalid_scope", "User is 300 bytes; the limit is 256"},
	} {
		r := s.call(tc.method, tc.path, tokenAcme, tc.body)
		var e errorBody
		if err := json.Unmarshal(r.body, &e); err != nil {
			t.Fatalf("%s %s: %s", tc.method, tc.path, r.body)
		}
		if e.Error.Code != tc.code || e.Error.Message != tc.want {
			t.Errorf("%s %.40s %s: %+v, want %s %q", tc.method, tc.path, tc.body, e.Error, tc.code, tc.want)
		}
	}
}
