package httpapi

import (
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// The request and response bodies. Field names are snake_case, except the
// entity, relation and observation shapes, which keep the MCP memory
// server's camelCase (entityType, relationType, entityName) so that the same
// JSON works against both. openapi.json describes each one; a test checks
// that the JSON fields of these types match the document's schemas.

// messageInput is a message to append: memory.Message without the fields
// the store assigns (id, tokens).
type messageInput struct {
	Role       memory.Role       `json:"role"`
	Content    string            `json:"content,omitempty"`
	Name       string            `json:"name,omitempty"`
	ToolCalls  []memory.ToolCall `json:"tool_calls,omitempty"`
	ToolCallID string            `json:"tool_call_id,omitempty"`
	Time       bodyTime          `json:"time,omitzero"`
	Metadata   map[string]string `json:"metadata,omitempty"`
}

// message is the message at index i of a batch; c checks its time.
func (m messageInput) message(c *timeCheck, i int) memory.Message {
	for j := range m.ToolCalls {
		// A null field is one left out; encoding/json keeps a null
		// json.RawMessage as the text null, which would be stored.
		if string(m.ToolCalls[j].Arguments) == "null" {
			m.ToolCalls[j].Arguments = nil
		}
	}
	return memory.Message{Role: m.Role, Content: m.Content, Name: m.Name, ToolCalls: m.ToolCalls,
		ToolCallID: m.ToolCallID, Time: c.get(indexed("messages", i, "time"), m.Time), Metadata: m.Metadata}
}

// appendRequest is the body of POST .../messages: messages, and facts drawn
// from them, committed in one transaction.
type appendRequest struct {
	Messages []messageInput `json:"messages"`
	Facts    []factInput    `json:"facts,omitempty"`
}

type appendResponse struct {
	IDs   []string      `json:"ids"`
	Facts []memory.Fact `json:"facts"`
}

type messagesResponse struct {
	Messages []memory.Message `json:"messages"`
	Next     string           `json:"next,omitempty"`
}

type windowResponse struct {
	Messages []memory.Message `json:"messages"`
	Tokens   int              `json:"tokens"`
	Summary  string           `json:"summary,omitempty"`
}

type sessionInfo struct {
	ID       string    `json:"id"`
	Created  time.Time `json:"created"`
	Updated  time.Time `json:"updated"`
	Messages int       `json:"messages"`
}

type sessionsResponse struct {
	Sessions []sessionInfo `json:"sessions"`
	Next     string        `json:"next,omitempty"`
}

// memoryInput is the body of POST and PUT .../memories: memory.Memory
// without the fields the store assigns.
type memoryInput struct {
	Kind       memory.Kind       `json:"kind,omitempty"`
	Text       string            `json:"text"`
	Tags       []string          `json:"tags,omitempty"`
	Metadata   map[string]string `json:"metadata,omitempty"`
	Source     []string          `json:"source,omitempty"`
	ExpiresAt  bodyTime          `json:"expires_at,omitzero"`
	Importance float64           `json:"importance,omitempty"`
	// Agent is recorded as the memory's writer.
	Agent string `json:"agent,omitempty"`
}

// memory is the memory, or a 400 for a bad expires_at.
func (m memoryInput) memory() (memory.Memory, error) {
	c := timeCheck{code: "invalid_memory"}
	mem := memory.Memory{Kind: m.Kind, Text: m.Text, Tags: m.Tags, Metadata: m.Metadata,
		Source: m.Source, ExpiresAt: c.get("expires_at", m.ExpiresAt), Importance: m.Importance}
	return mem, c.err
}

type memoriesResponse struct {
	Memories []memory.Memory `json:"memories"`
	Next     string          `json:"next,omitempty"`
}

// factInput is the body of POST .../facts: memory.Fact without the fields
// the store assigns.
type factInput struct {
	Subject    string   `json:"subject"`
	Predicate  string   `json:"predicate"`
	Object     string   `json:"object"`
	ValidFrom  bodyTime `json:"valid_from,omitzero"`
	ValidTo    bodyTime `json:"valid_to,omitzero"`
	Source     string   `json:"source,omitempty"`
	Confidence float64  `json:"confidence,omitempty"`
}

// fact is the fact; c checks its times, prefix naming it ("" for the
// body itself, or "facts[2].").
func (f factInput) fact(c *timeCheck, prefix string) memory.Fact {
	return memory.Fact{Subject: f.Subject, Predicate: f.Predicate, Object: f.Object,
		ValidFrom: c.get(prefix+"valid_from", f.ValidFrom), ValidTo: c.get(prefix+"valid_to", f.ValidTo),
		Source: f.Source, Confidence: f.Confidence}
}

type factsResponse struct {
	Facts []memory.Fact `json:"facts"`
	Next  string        `json:"next,omitempty"`
}

// traverseRequest is graph.TraverseQuery with the direction spelt out.
type traverseRequest struct {
	From       []string `json:"from"`
	MaxHops    int      `json:"max_hops,omitempty"`
	Direction  string   `json:"direction,omitempty"`
	Predicates []string `json:"predicates,omitempty"`
	AsOf       bodyTime `json:"as_of,omitzero"`
	MaxFanout  int      `json:"max_fanout,omitempty"`
	Limit      int      `json:"limit,omitempty"`
}

type traversalResponse struct {
	Steps     []graph.Step `json:"steps"`
	Truncated bool         `json:"truncated"`
}

// entityInput is graph.Entity without its creation time.
type entityInput struct {
	Name         string   `json:"name"`
	Type         string   `json:"entityType"`
	Observations []string `json:"observations,omitempty"`
	Aliases      []string `json:"aliases,omitempty"`
}

type entitiesRequest struct {
	Entities []entityInput `json:"entities"`
}

type entitiesResponse struct {
	Entities []graph.Entity `json:"entities"`
}

type deleteEntitiesRequest struct {
	EntityNames []string `json:"entityNames"`
}

type relationsRequest struct {
	Relations []graph.Relation `json:"relations"`
}

type relationsResponse struct {
	Relations []graph.Relation `json:"relations"`
}

// observationInput is one entity's observations to add, in the MCP
// memory server's add_observations shape.
type observationInput struct {
	EntityName string   `json:"entityName"`
	Contents   []string `json:"contents,omitempty"`
	// Observations is the name Contents had before the API took the MCP
	// shape. Deprecated: send contents; one of the two, not both.
	Observations []string `json:"observations,omitempty"`
}

// addObservationsRequest is the body of POST .../observations, as MCP's
// add_observations takes it.
type addObservationsRequest struct {
	Observations []observationInput `json:"observations"`
}

// addedObservations is one entity's new observations, as MCP's
// add_observations answers them.
type addedObservations struct {
	EntityName        string   `json:"entityName"`
	AddedObservations []string `json:"addedObservations"`
}

// observationsResponse answers POST .../observations: results in MCP's
// shape, and the same again in the shape of before.
type observationsResponse struct {
	Results []addedObservations `json:"results"`
	// Observations is the answer's shape before the API took MCP's.
	// Deprecated: read results.
	Observations []graph.ObservationSet `json:"observations"`
}

// deleteObservationsRequest is the body of DELETE .../observations, as
// MCP's delete_observations takes it.
type deleteObservationsRequest struct {
	Deletions []graph.ObservationSet `json:"deletions,omitempty"`
	// Observations is the name Deletions had before the API took the MCP
	// shape. Deprecated: send deletions; one of the two, not both.
	Observations []graph.ObservationSet `json:"observations,omitempty"`
}

type openNodesRequest struct {
	Names []string `json:"names"`
}

type graphResponse struct {
	Entities  []graph.Entity   `json:"entities"`
	Relations []graph.Relation `json:"relations"`
	Next      string           `json:"next,omitempty"`
}

// recallRequest is memory.Query; the tenant comes from the token.
type recallRequest struct {
	User        string   `json:"user"`
	Session     string   `json:"session,omitempty"`
	Text        string   `json:"text"`
	MaxMessages int      `json:"max_messages,omitempty"`
	MaxTokens   int      `json:"max_tokens,omitempty"`
	TopK        int      `json:"top_k,omitempty"`
	Hops        int      `json:"hops,omitempty"`
	Since       bodyTime `json:"since,omitzero"`
	Until       bodyTime `json:"until,omitzero"`
	// HalfLife is a Go duration such as "720h" or "90m".
	HalfLife string   `json:"half_life,omitempty"`
	Sources  []string `json:"sources,omitempty"`
	// Shared adds the tenant's shared memories to Sources (to the
	// default sources when Sources is empty).
	Shared    bool     `json:"shared,omitempty"`
	Retrieval string   `json:"retrieval,omitempty"`
	MMR       float64  `json:"mmr,omitempty"`
	Now       bodyTime `json:"now,omitzero"`
	// Trace asks for the trace of every candidate in the answer.
	Trace bool `json:"trace,omitempty"`
}

// recallResponse is the context for the next model call: the chat
// messages, the session summary and the preamble, then the items and trace
// that the MCP recall tool and engram recall --json write too.
type recallResponse struct {
	// Messages is Recollection.ChatMessages(): the preamble, then the window.
	Messages []memory.Message `json:"messages"`
	Summary  string           `json:"summary,omitempty"`
	Preamble string           `json:"preamble,omitempty"`
	wire.Recall
}

func newRecallResponse(rec *memory.Recollection) recallResponse {
	return recallResponse{Messages: nonNil(rec.ChatMessages()), Summary: rec.Summary, Preamble: rec.Preamble,
		Recall: wire.NewRecall(rec)}
}

// entities returns es with nil observation lists as empty ones, the MCP
// memory server's shape.
func entities(es []graph.Entity) []graph.Entity {
	es = nonNil(es)
	for i := range es {
		es[i].Observations = nonNil(es[i].Observations)
	}
	return es
}

func newGraphResponse(g graph.Graph, next string) graphResponse {
	return graphResponse{Entities: entities(g.Entities), Relations: nonNil(g.Relations), Next: next}
}
