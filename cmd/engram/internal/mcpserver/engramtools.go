package mcpserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/google/jsonschema-go/jsonschema"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

// The wire shapes of Engram's own tools: snake_case, as the chat format and
// Engram's HTTP API spell them.
type (
	// toolCallJSON is an assistant message's tool call. Arguments is the
	// JSON text of the call's arguments, as in the chat-completions API.
	toolCallJSON struct {
		ID        string `json:"id" jsonschema:"the call's id; the tool result that answers it carries it as tool_call_id"`
		Name      string `json:"name" jsonschema:"the function called"`
		Arguments string `json:"arguments,omitempty" jsonschema:"the arguments as a JSON text, such as {\"city\":\"Lisbon\"}"`
	}
	messageJSON struct {
		ID         string            `json:"id,omitempty"`
		Role       string            `json:"role"`
		Content    string            `json:"content,omitempty"`
		Name       string            `json:"name,omitempty"`
		ToolCalls  []toolCallJSON    `json:"tool_calls,omitempty"`
		ToolCallID string            `json:"tool_call_id,omitempty"`
		Time       time.Time         `json:"time,omitzero"`
		Metadata   map[string]string `json:"metadata,omitempty"`
		Tokens     int               `json:"tokens,omitempty"`
	}
	rememberIn struct {
		Text       string      `json:"text" jsonschema:"what to remember, in a sentence or a few (at most 16 KiB)"`
		Kind       string      `json:"kind,omitempty" jsonschema:"fact (the default), preference, episode, summary or observation"`
		Tags       []string    `json:"tags,omitempty" jsonschema:"labels for filtering (at most 64)"`
		Metadata   metadataArg `json:"metadata,omitempty" jsonschema:"string data kept with the memory, as a list of {key, value} pairs"`
		Importance float64     `json:"importance,omitempty" jsonschema:"how much it matters, from 0 to 1"`
		ExpiresAt  time.Time   `json:"expires_at,omitzero" jsonschema:"when to forget it by itself (RFC 3339); leave out to keep it"`
		Shared     bool        `json:"shared,omitempty" jsonschema:"true stores it in the tenant's shared memory, which every user and agent of the tenant may recall (recall with shared), instead of the user's"`
	}
	rememberOut struct {
		ID string `json:"id" jsonschema:"the memory's id; an existing id when the memory was already known (its tags and metadata are merged)"`
	}
	recallIn struct {
		Text        string   `json:"text" jsonschema:"what the context is for: usually the user's latest message"`
		MaxTokens   int      `json:"max_tokens,omitempty" jsonschema:"token budget of the whole context (default 4000)"`
		MaxMessages int      `json:"max_messages,omitempty" jsonschema:"message budget of the conversation window (default 20)"`
		TopK        int      `json:"top_k,omitempty" jsonschema:"the most memories, episodes and facts to recall (default 10, at most 200)"`
		Hops        int      `json:"hops,omitempty" jsonschema:"graph distance from the entities the text names (default 2, at most 8)"`
		Sources     []string `json:"sources,omitempty" jsonschema:"what to draw on: memories, shared (the tenant's shared memories), episodes (earlier messages of every session), graph; default memories, episodes and graph"`
		Shared      bool     `json:"shared,omitempty" jsonschema:"true also draws on the tenant's shared memories (those remembered with shared): adds shared to sources, or to the default sources"`
		Trace       bool     `json:"trace,omitempty" jsonschema:"true also returns the trace: every candidate, its ranks and scores, and why it was kept or dropped"`
	}
	recallOut struct {
		Messages []messageJSON `json:"messages" jsonschema:"the context as chat messages: a system preamble with the summary and recalled items, then the window"`
		wire.Recall
	}
	appendMessageIn struct {
		Role       string         `json:"role" jsonschema:"system, user, assistant or tool"`
		Content    string         `json:"content,omitempty" jsonschema:"the text; required except on an assistant message with tool_calls and on a tool result"`
		Name       string         `json:"name,omitempty" jsonschema:"the participant: a user's name or a tool's"`
		ToolCalls  []toolCallJSON `json:"tool_calls,omitempty" jsonschema:"the calls an assistant message makes"`
		ToolCallID string         `json:"tool_call_id,omitempty" jsonschema:"on a tool result: the id of the call it answers"`
		Metadata   metadataArg    `json:"metadata,omitempty" jsonschema:"string data kept with the message, as a list of {key, value} pairs"`
	}
	appendMessageOut struct {
		ID string `json:"id" jsonschema:"the message's id (a ULID: ids sort in append order)"`
	}
	getWindowIn struct {
		MaxMessages int `json:"max_messages,omitempty" jsonschema:"the most messages, system messages included (default 50)"`
		MaxTokens   int `json:"max_tokens,omitempty" jsonschema:"the most tokens (o200k_base, chat framing included); default none"`
	}
	getWindowOut struct {
		Messages []messageJSON `json:"messages" jsonschema:"the window, oldest first"`
		Tokens   int           `json:"tokens" jsonschema:"the tokens the window takes"`
	}
	forgetIn struct {
		EraseUser bool `json:"erase_user,omitempty" jsonschema:"true erases the whole user: every session, memory and the knowledge graph. Leave out to erase only the current session"`
	}
	forgetOut struct {
		Erased  string `json:"erased" jsonschema:"session or user"`
		User    string `json:"user"`
		Session string `json:"session,omitempty"`
	}
)

// inferSchema returns the schema of T's JSON, changed by edit. It panics
// on a type the inference rejects: the types are this file's, so that is
// a bug caught by every test.
func inferSchema[T any](edit func(props map[string]*jsonschema.Schema)) *jsonschema.Schema {
	s, err := jsonschema.For[T](nil)
	if err != nil {
		panic(fmt.Sprintf("mcpserver: schema of %T: %v", *new(T), err))
	}
	if edit != nil {
		edit(s.Properties)
	}
	return s
}

func enumOf[T ~string](vals ...T) []any {
	out := make([]any, len(vals))
	for i, v := range vals {
		out[i] = string(v)
	}
	return out
}

// metadataArg is the metadata argument of remember and append_message:
// a list of {key, value} pairs, the shape strict clients can declare (an
// object of free-form keys has no strict form), or the object of before,
// which the server still takes.
type metadataArg map[string]string

// UnmarshalJSON reads a list of pairs or an object. A key given twice in
// a list is an error: it is never clear which value was meant.
func (m *metadataArg) UnmarshalJSON(b []byte) error {
	var pairs []struct {
		Key   string `json:"key"`
		Value string `json:"value"`
	}
	if err := json.Unmarshal(b, &pairs); err != nil {
		var obj map[string]string
		if json.Unmarshal(b, &obj) != nil {
			return fmt.Errorf("metadata is a list of {key, value} pairs: %w", err)
		}
		*m = obj
		return nil
	}
	out := make(metadataArg, len(pairs))
	for _, p := range pairs {
		if _, ok := out[p.Key]; ok {
			return fmt.Errorf("metadata key %q is given twice", p.Key)
		}
		out[p.Key] = p.Value
	}
	*m = out
	return nil
}

// metadataSchema is the schema calls are validated with: a list of
// {key, value} pairs (what the strict schema advertises, see strict.go)
// or, as before, an object of string values.
func metadataSchema(desc string) *jsonschema.Schema {
	pair := objectSchema(true, map[string]*jsonschema.Schema{
		"key":   {Type: "string", Description: "the name"},
		"value": {Type: "string", Description: "its value"},
	}, "key", "value")
	pair.PropertyOrder = []string{"key", "value"}
	return &jsonschema.Schema{Description: desc, AnyOf: []*jsonschema.Schema{
		{Type: "array", Items: pair},
		{Type: "object", AdditionalProperties: &jsonschema.Schema{Type: "string"}},
	}}
}

func nonNegative(props map[string]*jsonschema.Schema, names ...string) {
	for _, n := range names {
		props[n].Minimum = jsonschema.Ptr(0.0)
	}
}

// engramTools are the definitions of Engram's own tools, built once.
var engramTools = struct {
	remember, recall, appendMessage, getWindow, forget *mcp.Tool
}{
	remember: &mcp.Tool{
		Name:  "remember",
		Title: "Remember",
		Description: "Store a long-term memory about the user: a fact (the default), preference, episode, summary or observation. " +
			"Memories are deduplicated: the same text (up to case and white space) or a near-identical one returns the existing id " +
			"and merges the tags and metadata. recall finds memories again.",
		InputSchema: inferSchema[rememberIn](func(p map[string]*jsonschema.Schema) {
			p["kind"].Enum = enumOf(memory.KindFact, memory.KindPreference, memory.KindEpisode, memory.KindSummary, memory.KindObservation)
			p["importance"].Minimum, p["importance"].Maximum = jsonschema.Ptr(0.0), jsonschema.Ptr(1.0)
			p["expires_at"].Format = "date-time"
			p["metadata"] = metadataSchema(p["metadata"].Description)
		}),
		Annotations: hints(false, false, true),
	},
	recall: &mcp.Tool{
		Name:  "recall",
		Title: "Recall",
		Description: "Return the context for the next model call about text, within a token budget: the current conversation's " +
			"window and rolling summary, then the memories, earlier messages (with sources including episodes) and knowledge-graph " +
			"facts that match, fused by rank. With trace, also returns every candidate, its scores, and why it was kept or dropped.",
		InputSchema: inferSchema[recallIn](func(p map[string]*jsonschema.Schema) {
			nonNegative(p, "max_tokens", "max_messages", "top_k", "hops")
			p["top_k"].Maximum = jsonschema.Ptr(float64(memory.MaxTopK))
			p["sources"].Items.Enum = enumOf(memory.Sources()...)
		}),
		// Recall writes only the session's rolling summary when the window
		// has moved on: to the caller it reads.
		Annotations: hints(true, false, false),
	},
	appendMessage: &mcp.Tool{
		Name:  "append_message",
		Title: "Append Message",
		Description: "Append a message to the current conversation, in the chat-completions shape. A tool result " +
			"(role tool) must answer an earlier tool call of the conversation by its tool_call_id.",
		InputSchema: inferSchema[appendMessageIn](func(p map[string]*jsonschema.Schema) {
			p["role"].Enum = enumOf(memory.RoleSystem, memory.RoleUser, memory.RoleAssistant, memory.RoleTool)
			p["metadata"] = metadataSchema(p["metadata"].Description)
		}),
		Annotations: hints(false, false, false),
	},
	getWindow: &mcp.Tool{
		Name:  "get_window",
		Title: "Get Window",
		Description: "Return the most recent part of the current conversation that fits a message and token budget: " +
			"system messages are always kept, older messages are trimmed first, and a tool call stays with its results.",
		InputSchema: inferSchema[getWindowIn](func(p map[string]*jsonschema.Schema) {
			nonNegative(p, "max_messages", "max_tokens")
		}),
		Annotations: hints(true, false, true),
	},
	forget: &mcp.Tool{
		Name:  "forget",
		Title: "Forget",
		Description: "Erase the current conversation: its messages and summary. With erase_user, erase the whole user instead: " +
			"every conversation, every memory and the knowledge graph. Erased data cannot be recovered.",
		InputSchema: inferSchema[forgetIn](nil),
		Annotations: hints(false, true, true),
	},
}

func (h *handlers) addEngramTools(s *mcp.Server) {
	t := &engramTools
	mcp.AddTool(s, t.remember, h.remember)
	mcp.AddTool(s, t.recall, h.recall)
	mcp.AddTool(s, t.appendMessage, h.appendMessage)
	mcp.AddTool(s, t.getWindow, h.getWindow)
	mcp.AddTool(s, t.forget, h.forget)
}

func (h *handlers) remember(ctx context.Context, req *mcp.CallToolRequest, in rememberIn) (*mcp.CallToolResult, rememberOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, rememberOut{}, err
	}
	if in.ExpiresAt.IsZero() && givenTime(req, "expires_at") {
		// The store reads the zero time as "no expiry" (issue 26).
		return nil, rememberOut{}, errors.New("remember: expires_at 0001-01-01T00:00:00Z is the zero time; leave it out for no expiry")
	}
	if in.Shared {
		sc = memory.Scope{Tenant: sc.Tenant} // the tenant's shared partition
	}
	id, err := h.store.Remember(ctx, sc, memory.Memory{
		Kind:       memory.Kind(in.Kind),
		Text:       in.Text,
		Tags:       in.Tags,
		Metadata:   in.Metadata,
		Importance: in.Importance,
		ExpiresAt:  in.ExpiresAt,
	})
	if err != nil {
		return nil, rememberOut{}, fmt.Errorf("remember: %w", err)
	}
	return nil, rememberOut{ID: id}, nil
}

func (h *handlers) recall(ctx context.Context, _ *mcp.CallToolRequest, in recallIn) (*mcp.CallToolResult, recallOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, recallOut{}, err
	}
	q := memory.Query{
		Scope:       sc,
		Text:        in.Text,
		MaxTokens:   in.MaxTokens,
		MaxMessages: in.MaxMessages,
		TopK:        in.TopK,
		Hops:        in.Hops,
		Trace:       in.Trace,
	}
	for _, s := range in.Sources {
		q.Sources = append(q.Sources, memory.Source(s))
	}
	if in.Shared {
		q.Sources = wire.WithShared(q.Sources)
	}
	if sc.User == "" {
		return nil, recallOut{}, errNoUser("recall")
	}
	rec, err := h.store.Recall(ctx, q)
	if err != nil {
		return nil, recallOut{}, fmt.Errorf("recall: %w", err)
	}
	out := recallOut{Messages: toMessages(rec.ChatMessages()), Recall: wire.NewRecall(rec)}
	// The records repeat what the items' text and the preamble say; a model
	// reading the result would pay for every line twice.
	for i := range out.Items {
		out.Items[i].Memory, out.Items[i].Fact = nil, nil
	}
	return nil, out, nil
}

func toMessages(msgs []memory.Message) []messageJSON {
	out := make([]messageJSON, 0, len(msgs))
	for _, m := range msgs {
		w := messageJSON{
			ID: m.ID, Role: string(m.Role), Content: m.Content, Name: m.Name,
			ToolCallID: m.ToolCallID, Time: m.Time, Metadata: m.Metadata, Tokens: m.Tokens,
		}
		for _, c := range m.ToolCalls {
			w.ToolCalls = append(w.ToolCalls, toolCallJSON{ID: c.ID, Name: c.Name, Arguments: string(c.Arguments)})
		}
		out = append(out, w)
	}
	return out
}

func (h *handlers) appendMessage(ctx context.Context, _ *mcp.CallToolRequest, in appendMessageIn) (*mcp.CallToolResult, appendMessageOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, appendMessageOut{}, err
	}
	if sc.User == "" {
		return nil, appendMessageOut{}, errNoUser("append_message")
	}
	m := memory.Message{
		Role: memory.Role(in.Role), Content: in.Content, Name: in.Name,
		ToolCallID: in.ToolCallID, Metadata: in.Metadata,
	}
	for _, c := range in.ToolCalls {
		var args json.RawMessage
		if c.Arguments != "" {
			args = json.RawMessage(c.Arguments)
		}
		m.ToolCalls = append(m.ToolCalls, memory.ToolCall{ID: c.ID, Name: c.Name, Arguments: args})
	}
	// A batch, not Session.Append, because its result carries the new id.
	var b memory.Batch
	b.Append(sc, m)
	res, err := h.store.Write(ctx, &b)
	if err != nil {
		return nil, appendMessageOut{}, fmt.Errorf("append_message: %w", err)
	}
	return nil, appendMessageOut{ID: res.MessageIDs[0]}, nil
}

func (h *handlers) getWindow(ctx context.Context, _ *mcp.CallToolRequest, in getWindowIn) (*mcp.CallToolResult, getWindowOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, getWindowOut{}, err
	}
	if sc.User == "" {
		return nil, getWindowOut{}, errNoUser("get_window")
	}
	msgs, err := h.store.Session(sc).Window(ctx, memory.WindowOptions{MaxMessages: in.MaxMessages, MaxTokens: in.MaxTokens})
	if err != nil {
		return nil, getWindowOut{}, fmt.Errorf("get_window: %w", err)
	}
	out := getWindowOut{Messages: toMessages(msgs)}
	for _, m := range msgs {
		out.Tokens += m.Tokens
	}
	return nil, out, nil
}

func (h *handlers) forget(ctx context.Context, _ *mcp.CallToolRequest, in forgetIn) (*mcp.CallToolResult, forgetOut, error) {
	sc, err := h.scopeOf(ctx)
	if err != nil {
		return nil, forgetOut{}, err
	}
	if sc.User == "" {
		// Forget with a tenant alone would erase the whole tenant.
		return nil, forgetOut{}, errNoUser("forget")
	}
	target := memory.Scope{Tenant: sc.Tenant, User: sc.User, Session: sc.Session}
	out := forgetOut{Erased: "session", User: sc.User, Session: sc.Session}
	if in.EraseUser {
		target.Session = ""
		out = forgetOut{Erased: "user", User: sc.User}
	} else if sc.Session == "" {
		return nil, forgetOut{}, errors.New("forget: this connection has no session; set erase_user to erase the whole user")
	}
	if err := h.store.Forget(ctx, target); err != nil {
		return nil, forgetOut{}, fmt.Errorf("forget: %w", err)
	}
	return nil, out, nil
}

// errNoUser is the error of a tool that needs a user, called on a
// connection to the tenant's shared memory (a scope with no user:
// engram mcp --shared, or X-Engram-Shared: true).
func errNoUser(tool string) error {
	return fmt.Errorf("%s: this connection is the tenant's shared memory and has no user; "+
		"connect as a user (without --shared or %s) for conversations and recall, and pass shared: true to reach the shared memories", tool, HeaderShared)
}

// givenTime reports whether the call's arguments hold field with a value
// other than null: a time.Time argument cannot tell the zero time given
// from one left out.
func givenTime(req *mcp.CallToolRequest, field string) bool {
	if req == nil || req.Params == nil {
		return false
	}
	var args map[string]json.RawMessage
	if json.Unmarshal(req.Params.Arguments, &args) != nil {
		return false
	}
	v, ok := args[field]
	return ok && string(v) != "null"
}
