package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// DefaultExtractionPrompt is the system prompt of an [OpenAIExtractor]
// whose options leave Prompt empty. It describes the reply's JSON in words
// too, for servers that ignore the schema.
const DefaultExtractionPrompt = `You extract long-term memory from one message of a conversation, for an assistant that will talk with the same people again later.

The user message is JSON. "message" is the message to read: its speaker, time and text. "previous" holds earlier messages of the conversation, for context only (what "it" or "yes" refers to): extract nothing that "message" does not itself say or confirm. "known_entities", "known_memories" and "known_facts" are what is already stored; memories and facts have ids.

First person in the message ("I", "me", "my", "mine") is the speaker named in message.speaker: write that name, never "I", "me" or "the user".

Reply with one JSON object with these keys, each a list, empty when there is nothing to say:
- "add": new memories worth keeping for weeks: facts about people and things, preferences and standing instructions, events with their dates. "kind" is fact, preference, episode or observation. "text" is one self-contained sentence in the third person that names who it is about, with relative dates ("last Saturday") resolved against message.time. "tags" are a few lowercase keywords. "importance" is from 0 to 1.
- "update": {"id", "text"} for a known memory that the message changes or makes more precise; "text" is the whole new memory.
- "delete": ids of known memories that the message shows to be wrong.
- "entities": people, organizations, places, products, accounts and projects the message names: "name" as written (a known entity's name when it is one), "type" (person, organization, place, product, account, project, event or other), "aliases" (other names it is given) and "observations" (short facts about it).
- "facts": relations as "subject", "predicate", "object". The predicate is lowercase snake_case, such as works_at, lives_in, renewal_owner, sister_of. "valid_from" is an RFC 3339 time when the message says when it began, else null. "confidence" is from 0 to 1. "single_valued" is true when the subject has one object at a time for the predicate (lives_in, renewal_owner, married_to), false otherwise (likes, visited).
- "invalidate": known facts the message says no longer hold: {"id"} of the known fact, or its "subject", "predicate" and "object" (null when unknown).

Do not repeat what a known memory or fact already says. Use only ids from known_memories and known_facts. Greetings, small talk and questions give nothing: when the message says nothing worth remembering, reply with every list empty. Never state anything the message does not say.`

// Errors of [OpenAIExtractor.Extract]. Each wraps [ErrExtraction], as does
// a [*StatusError] it returns, so errors.Is(err, ErrExtraction) matches
// every failure of the server or of the way to it. A done context is not
// one of them: it returns an error wrapping ctx.Err() alone.
var (
	// ErrExtraction is returned when the extraction server cannot be
	// reached, does not answer within the timeout, or answers with an
	// error or a reply that holds no usable extraction.
	ErrExtraction = errors.New("memory: extraction failed")
	// ErrMalformedExtraction is returned for a reply that is not the JSON
	// of a chat completion, is larger than 1 MiB, has no content, or whose
	// content is not a JSON object of the extraction's shape (see
	// [OpenAIExtractor]). A retry may succeed: models are not
	// deterministic.
	ErrMalformedExtraction = fmt.Errorf("%w: malformed reply", ErrExtraction)
	// ErrExtractionRefused is returned when the model refuses to answer
	// (its message has a refusal, or the reply's finish_reason is
	// "content_filter"). Retrying the same message is pointless: the
	// store parks such a job at once, where `engram inspect` shows it.
	ErrExtractionRefused = fmt.Errorf("%w: the model refused", ErrExtraction)
)

// Limits of the OpenAI extractor: what is sent, what is read back, what is
// kept of a reply. A memory or fact should be a sentence, not a page: a
// longer item is dropped rather than cut, since a cut sentence can say
// something else.
const (
	defaultExtractTimeout   = time.Minute
	defaultExtractMaxTokens = 2048
	maxExtractReply         = 1 << 20 // bytes read of a reply
	maxExtractMessage       = 8 << 10 // bytes of the message's text sent
	maxExtractPrevious      = 2 << 10 // bytes of each previous message's text sent
	maxExtractKnownText     = 1 << 10 // bytes of each known memory's text sent
	extractKnownFacts       = 50      // facts of the named entities sent
	extractKnownMemories    = 10      // best-matching memories sent
	maxExtractItems         = 64      // items kept of each list of a reply
	maxExtractText          = 2 << 10 // bytes of a memory's text kept
	maxExtractName          = 256     // bytes of a name or predicate kept
	maxExtractType          = 64      // bytes of an entity type kept (cut)
	maxExtractTags          = 16
	maxExtractAliases       = 16
	maxExtractObservations  = 16
)

// OpenAIExtractorOptions configures [NewOpenAIExtractor]. A nil
// *OpenAIExtractorOptions is invalid: BaseURL and Model are required. Every
// zero field means the documented default. NewOpenAIExtractor copies it:
// the caller may change or share it afterwards.
type OpenAIExtractorOptions struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions",
	// such as "https://api.openai.com/v1", Ollama's
	// "http://localhost:11434/v1", LM Studio's "http://localhost:1234/v1"
	// or a vLLM server's "http://host:8000/v1". Required: the store
	// reaches no network it was not pointed at. It must be an http or
	// https URL without a query or fragment.
	BaseURL string

	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>". It is
	// never read from the environment, and never appears in an error.
	APIKey string

	// Model is the chat model, such as "gpt-4o-mini" or "llama3.2".
	// Required. It should follow a JSON schema (OpenAI's structured
	// outputs, Ollama's and vLLM's constrained decoding do that).
	Model string

	// HTTPClient sends the requests. Nil means [http.DefaultClient].
	HTTPClient *http.Client

	// Timeout bounds one Extract call's request, reply included. Zero
	// means one minute; negative means no timeout of its own (ctx still
	// applies).
	Timeout time.Duration

	// MaxTokens is sent as max_tokens, bounding the reply. Zero means
	// 2048; negative sends none (OpenAI's reasoning models refuse
	// max_tokens).
	MaxTokens int

	// Prompt is the system prompt. Empty means [DefaultExtractionPrompt].
	// A custom prompt should still describe the reply's keys: the schema
	// is sent too, but not every server enforces it.
	Prompt string
}

// OpenAIExtractor is an [Extractor] that asks a chat model, through
// OpenAI's chat-completions API (POST BaseURL/chat/completions) or any
// server compatible with it (Ollama's /v1, LM Studio, vLLM, LiteLLM, ...).
// It is never the default: a store uses it only when given it.
//
// Each call sends one request: the system prompt, then one user message
// holding, as JSON, the message (speaker, role, time, text cut to 8 KiB),
// the Previous messages (each cut to 2 KiB), and what the store already
// holds for it: the entities the message and the previous ones name, up to
// 50 facts valid now about those entities and the speaker, and the 10
// memories that best match the message. Known facts and memories are sent
// with short ids ("f1", "m1"), as mem0 does, so that the model does not
// have to copy ULIDs. The request asks for a reply in a strict JSON schema
// (response_format "json_schema") of mem0-style decisions: memories to
// add, stored memories to update or delete, entities, facts to add and
// facts to invalidate. A server that rejects response_format with a 400
// naming it is asked again without it, then and in later calls; a reply
// whose content holds the JSON inside a ```json fence, or after a
// <think> block, is accepted too.
//
// What the model says is checked before it is returned, and every item
// that fails is dropped on its own: empty or over-long parts, invalid
// UTF-8 or control characters, a memory kind that is not one of the five
// (compared case-insensitively), an importance or confidence outside
// [0, 1], a confidence of exactly 0, an id of a memory or fact that was not
// sent (a model must not touch what it was not shown), and a fact to
// invalidate by subject and predicate that matches no fact sent (it
// becomes the ids of those it matches). "I", "me" and "my" as a name stand
// for ExtractInput.Speaker; the item is dropped when there is none.
// Predicates are folded to lowercase snake_case ("Renewal Owner" becomes
// "renewal_owner"); an entity type is kept as given, trimmed and cut to 64
// bytes. A valid_from that is not an RFC 3339 time or a date is ignored.
//
// It does not retry (the store does), does not stream, sends no
// temperature (some models accept only their default) and sends no tool
// calls or tool definitions. A message with no text makes no request.
//
// An OpenAIExtractor is safe for concurrent use.
type OpenAIExtractor struct {
	chat      chatClient
	prompt    string
	maxTokens int // 0: none sent

	// noSchema is set once the server has rejected response_format.
	noSchema atomic.Bool
}

// NewOpenAIExtractor returns an [OpenAIExtractor]. It makes no request. It
// returns an error wrapping [ErrInvalidOptions] for bad options, naming
// every bad field.
func NewOpenAIExtractor(opts *OpenAIExtractorOptions) (*OpenAIExtractor, error) {
	var o OpenAIExtractorOptions
	if opts != nil {
		o = *opts
	}
	chat, errs := newChatClient(o.BaseURL, o.APIKey, o.Model, o.HTTPClient, o.Timeout, defaultExtractTimeout)
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	x := &OpenAIExtractor{
		chat:      chat,
		prompt:    cmp.Or(o.Prompt, DefaultExtractionPrompt),
		maxTokens: o.MaxTokens,
	}
	switch {
	case x.maxTokens == 0:
		x.maxTokens = defaultExtractMaxTokens
	case x.maxTokens < 0:
		x.maxTokens = 0
	}
	return x, nil
}

// extractionSchema is the JSON schema of a reply, strict in OpenAI's sense:
// every object lists all its properties as required and allows no others;
// optional values are nullable.
var extractionSchema = func() json.RawMessage {
	str := map[string]any{"type": "string"}
	nullStr := map[string]any{"type": []string{"string", "null"}}
	num := map[string]any{"type": "number"}
	strs := map[string]any{"type": "array", "items": str}
	object := func(props map[string]any) map[string]any {
		req := make([]string, 0, len(props))
		for k := range props {
			req = append(req, k)
		}
		slices.Sort(req)
		return map[string]any{"type": "object", "properties": props, "required": req, "additionalProperties": false}
	}
	list := func(items any) map[string]any { return map[string]any{"type": "array", "items": items} }
	schema := object(map[string]any{
		"add": list(object(map[string]any{
			"kind":       map[string]any{"type": "string", "enum": []string{"fact", "preference", "episode", "observation"}},
			"text":       str,
			"tags":       strs,
			"importance": num,
		})),
		"update": list(object(map[string]any{"id": str, "text": str})),
		"delete": list(str),
		"entities": list(object(map[string]any{
			"name":         str,
			"type":         str,
			"aliases":      strs,
			"observations": strs,
		})),
		"facts": list(object(map[string]any{
			"subject":       str,
			"predicate":     str,
			"object":        str,
			"valid_from":    nullStr,
			"confidence":    num,
			"single_valued": map[string]any{"type": "boolean"},
		})),
		"invalidate": list(object(map[string]any{
			"id":        nullStr,
			"subject":   nullStr,
			"predicate": nullStr,
			"object":    nullStr,
		})),
	})
	b, err := json.Marshal(schema)
	if err != nil {
		panic(err) // a literal above; cannot fail
	}
	return b
}()

// The wire format of an extraction request and reply, the parts used.
type (
	extractRequest struct {
		Model          string          `json:"model"`
		Messages       []chatMessage   `json:"messages"`
		MaxTokens      int             `json:"max_tokens,omitempty"`
		ResponseFormat *responseFormat `json:"response_format,omitempty"`
	}
	responseFormat struct {
		Type       string          `json:"type"`
		JSONSchema *jsonSchemaSpec `json:"json_schema,omitempty"`
	}
	jsonSchemaSpec struct {
		Name   string          `json:"name"`
		Strict bool            `json:"strict"`
		Schema json.RawMessage `json:"schema"`
	}
	extractResponse struct {
		Choices []struct {
			Message struct {
				Content *string `json:"content"`
				Refusal *string `json:"refusal"`
			} `json:"message"`
			FinishReason string `json:"finish_reason"`
		} `json:"choices"`
		// Some compatible servers answer an error with status 200.
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

// What is sent about the message and the store, as the user message's JSON.
type (
	extractPayload struct {
		Message       extractSaid       `json:"message"`
		Previous      []extractSaid     `json:"previous"`
		KnownEntities []string          `json:"known_entities"`
		KnownMemories []extractKnownMem `json:"known_memories"`
		KnownFacts    []extractKnownFct `json:"known_facts"`
	}
	extractSaid struct {
		Speaker string `json:"speaker"`
		Role    string `json:"role"`
		Time    string `json:"time,omitempty"`
		Text    string `json:"text"`
	}
	extractKnownMem struct {
		ID   string `json:"id"`
		Kind Kind   `json:"kind"`
		Text string `json:"text"`
	}
	extractKnownFct struct {
		ID        string `json:"id"`
		Subject   string `json:"subject"`
		Predicate string `json:"predicate"`
		Object    string `json:"object"`
		ValidFrom string `json:"valid_from,omitempty"`
	}
)

// extractReply is the content of a reply: the model's decisions.
type extractReply struct {
	Add    []extractReplyAdd `json:"add"`
	Update []struct {
		ID   string `json:"id"`
		Text string `json:"text"`
	} `json:"update"`
	Delete     []extractID              `json:"delete"`
	Entities   []extractReplyEntity     `json:"entities"`
	Facts      []extractReplyFact       `json:"facts"`
	Invalidate []extractReplyInvalidate `json:"invalidate"`
}

// extractReplyAdd is a memory the model adds.
type extractReplyAdd struct {
	Kind       string   `json:"kind"`
	Text       string   `json:"text"`
	Tags       []string `json:"tags"`
	Importance *float64 `json:"importance"`
}

// extractReplyEntity is an entity the model names.
type extractReplyEntity struct {
	Name         string   `json:"name"`
	Type         string   `json:"type"`
	Aliases      []string `json:"aliases"`
	Observations []string `json:"observations"`
}

// extractReplyFact is a fact the model states.
type extractReplyFact struct {
	Subject      string   `json:"subject"`
	Predicate    string   `json:"predicate"`
	Object       string   `json:"object"`
	ValidFrom    *string  `json:"valid_from"`
	Confidence   *float64 `json:"confidence"`
	SingleValued bool     `json:"single_valued"`
}

// extractReplyInvalidate is a fact the model closes, by id or by triple.
type extractReplyInvalidate struct {
	ID        *string `json:"id"`
	Subject   *string `json:"subject"`
	Predicate *string `json:"predicate"`
	Object    *string `json:"object"`
}

// extractReplyKeys are the keys of a reply; an object with none of them is
// not a reply.
var extractReplyKeys = []string{"add", "update", "delete", "entities", "facts", "invalidate"}

// extractID is an id in a list: "m1", or {"id": "m1"} as some models write.
type extractID string

// UnmarshalJSON accepts a string, an object with an "id" string, or null.
func (id *extractID) UnmarshalJSON(b []byte) error {
	var s *string
	if err := json.Unmarshal(b, &s); err == nil {
		if s != nil {
			*id = extractID(*s)
		}
		return nil
	}
	var o struct {
		ID string `json:"id"`
	}
	if err := json.Unmarshal(b, &o); err != nil {
		return errors.New("an id is neither a string nor an object with an id")
	}
	*id = extractID(o.ID)
	return nil
}

// Extract asks the model what in.Message adds to, changes in or removes
// from what the store holds, and returns it checked (see
// [OpenAIExtractor]). It returns an error wrapping [ErrExtraction] (a
// [*StatusError], [ErrMalformedExtraction], [ErrExtractionRefused], a
// timeout or a transport error) when the server fails, an error wrapping
// ctx.Err() when ctx ends first, an error from in.Known when the store
// cannot be read, and an error wrapping [ErrInvalidOptions] for a nil in.
func (x *OpenAIExtractor) Extract(ctx context.Context, in *ExtractInput) (*Extraction, error) {
	if in == nil {
		return nil, fmt.Errorf("%w: nil ExtractInput", ErrInvalidOptions)
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("memory: extract: %w", err)
	}
	text := extractSendText(in.Message.Content, maxExtractMessage)
	if text == "" {
		return &Extraction{}, nil
	}
	payload, refs, err := x.payload(ctx, in, text)
	if err != nil {
		return nil, err
	}
	user, err := json.Marshal(payload)
	if err != nil {
		return nil, fmt.Errorf("%w: encode request: %w", ErrExtraction, err)
	}

	reqCtx, cancel := x.chat.withTimeout(ctx)
	defer cancel()
	reply, err := x.ask(reqCtx, string(user))
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return nil, fmt.Errorf("memory: extract: %w", ctx.Err())
		case reqCtx.Err() != nil:
			return nil, fmt.Errorf("%w: no reply within %v: %w", ErrExtraction, x.chat.timeout, reqCtx.Err())
		}
		return nil, err
	}
	content, err := x.content(reply)
	if err != nil {
		return nil, err
	}
	var r extractReply
	if err := decodeExtractReply(content, &r); err != nil {
		return nil, err
	}
	return refs.check(&r, in.Speaker), nil
}

// ask sends the request, with the schema unless the server rejected it,
// and returns the reply's body. A 400 that names response_format or
// json_schema makes it ask again without, and stop sending it.
func (x *OpenAIExtractor) ask(ctx context.Context, user string) ([]byte, error) {
	req := extractRequest{
		Model: x.chat.model,
		Messages: []chatMessage{
			{Role: string(RoleSystem), Content: x.prompt},
			{Role: string(RoleUser), Content: user},
		},
		MaxTokens: x.maxTokens,
	}
	for {
		withSchema := !x.noSchema.Load()
		req.ResponseFormat = nil
		if withSchema {
			req.ResponseFormat = &responseFormat{
				Type:       "json_schema",
				JSONSchema: &jsonSchemaSpec{Name: "engram_extraction", Strict: true, Schema: extractionSchema},
			}
		}
		body, err := json.Marshal(req)
		if err != nil {
			return nil, fmt.Errorf("%w: encode request: %w", ErrExtraction, err)
		}
		reply, err := x.chat.post(ctx, body, ErrExtraction, ErrMalformedExtraction, maxExtractReply)
		var se *StatusError
		if withSchema && errors.As(err, &se) && se.StatusCode == http.StatusBadRequest &&
			(strings.Contains(se.Body, "response_format") || strings.Contains(se.Body, "json_schema")) {
			x.noSchema.Store(true)
			continue
		}
		return reply, err
	}
}

// content returns the content of the reply's first choice, or the error
// the reply stands for.
func (x *OpenAIExtractor) content(reply []byte) (string, error) {
	var resp extractResponse
	if err := json.Unmarshal(reply, &resp); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformedExtraction, err)
	}
	if len(resp.Choices) == 0 {
		if resp.Error != nil && resp.Error.Message != "" {
			return "", fmt.Errorf("%w: server error: %s", ErrExtraction, x.chat.redact(snippet(resp.Error.Message)))
		}
		return "", fmt.Errorf("%w: no choices", ErrMalformedExtraction)
	}
	c := &resp.Choices[0]
	if c.Message.Refusal != nil && strings.TrimSpace(*c.Message.Refusal) != "" {
		return "", fmt.Errorf("%w: %s", ErrExtractionRefused, x.chat.redact(snippet(*c.Message.Refusal)))
	}
	if c.FinishReason == "content_filter" {
		return "", fmt.Errorf("%w: finish_reason content_filter", ErrExtractionRefused)
	}
	if c.Message.Content == nil || strings.TrimSpace(*c.Message.Content) == "" {
		return "", fmt.Errorf("%w: empty content (finish_reason %q)", ErrMalformedExtraction, snippet(c.FinishReason))
	}
	return *c.Message.Content, nil
}

// decodeExtractReply reads content as an extraction: a JSON object with at
// least one of the reply's keys, bare or inside a ``` fence, possibly after
// a <think> block or a line of prose.
func decodeExtractReply(content string, r *extractReply) error {
	var firstErr error
	for _, cand := range extractJSONCandidates(content) {
		var keys map[string]json.RawMessage
		if err := json.Unmarshal([]byte(cand), &keys); err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		found := false
		for k := range keys {
			if slices.Contains(extractReplyKeys, strings.ToLower(k)) {
				found = true
				break
			}
		}
		if !found {
			firstErr = cmp.Or(firstErr, fmt.Errorf("an object with none of the keys %v", extractReplyKeys))
			continue
		}
		if err := json.Unmarshal([]byte(cand), r); err != nil {
			// The right object, the wrong shape: say so, whatever else
			// the content holds.
			return fmt.Errorf("%w: %w", ErrMalformedExtraction, err)
		}
		return nil
	}
	if firstErr == nil {
		firstErr = errors.New("no JSON object")
	}
	return fmt.Errorf("%w: content is not an extraction: %w", ErrMalformedExtraction, firstErr)
}

// extractJSONCandidates returns the texts in content that may be the
// reply's JSON, most likely first: content itself, the inside of its first
// ``` fence, and the span from its first '{' to its last '}', each after a
// leading <think>...</think> block is removed.
func extractJSONCandidates(content string) []string {
	s := strings.TrimSpace(content)
	if rest, ok := strings.CutPrefix(s, "<think>"); ok {
		if _, after, ok := strings.Cut(rest, "</think>"); ok {
			s = strings.TrimSpace(after)
		}
	}
	out := []string{s}
	if _, after, ok := strings.Cut(s, "```"); ok {
		// Skip the info string ("json") up to the end of the line.
		if nl := strings.IndexByte(after, '\n'); nl >= 0 {
			after = after[nl+1:]
		}
		if inside, _, ok := strings.Cut(after, "```"); ok {
			out = append(out, strings.TrimSpace(inside))
		}
	}
	if i, j := strings.IndexByte(s, '{'), strings.LastIndexByte(s, '}'); i >= 0 && j > i {
		out = append(out, s[i:j+1])
	}
	return out
}

// extractRefs maps the short ids sent for known memories and facts back to
// the store's, and keeps the facts sent, for invalidation by triple.
type extractRefs struct {
	memories map[string]string // short id or real id -> real id
	facts    map[string]string
	shown    []Fact
}

// payload gathers what is sent about in, and the refs of what was shown.
func (x *OpenAIExtractor) payload(ctx context.Context, in *ExtractInput, text string) (*extractPayload, *extractRefs, error) {
	p := &extractPayload{
		Message: extractSaid{
			Speaker: extractSpeaker(&in.Message, in.Speaker, in.User),
			Role:    string(in.Message.Role),
			Time:    extractTime(in.Message.Time),
			Text:    text,
		},
		Previous:      []extractSaid{},
		KnownEntities: []string{},
		KnownMemories: []extractKnownMem{},
		KnownFacts:    []extractKnownFct{},
	}
	refs := &extractRefs{memories: map[string]string{}, facts: map[string]string{}}
	var names []string
	addNames := func(ns ...string) {
		for _, n := range ns {
			if n = strings.TrimSpace(n); n != "" && !slices.ContainsFunc(names, func(m string) bool { return graph.Fold(m) == graph.Fold(n) }) {
				names = append(names, n)
			}
		}
	}
	if in.Known != nil {
		addNames(in.Known.Entities(text)...)
	}
	prev := in.Previous
	if len(prev) > ExtractContextMessages {
		prev = prev[len(prev)-ExtractContextMessages:]
	}
	for i := range prev {
		m := &prev[i]
		t := extractSendText(m.Content, maxExtractPrevious)
		if t == "" || m.Role == RoleSystem {
			continue
		}
		p.Previous = append(p.Previous, extractSaid{
			Speaker: extractSpeaker(m, "", in.User),
			Role:    string(m.Role),
			Time:    extractTime(m.Time),
			Text:    t,
		})
		if in.Known != nil {
			addNames(in.Known.Entities(t)...)
		}
	}
	p.KnownEntities = append(p.KnownEntities, names...)
	if in.Known == nil {
		return p, refs, nil
	}

	// The speaker and the user are asked about too: "my renewal owner is
	// now Sam" is about a fact of theirs that the text does not name.
	addNames(in.Speaker, in.User)
	facts, err := in.Known.Facts(ctx, names, extractKnownFacts)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: extract: read known facts: %w", err)
	}
	for i := range facts {
		f := &facts[i]
		if f.ID == "" {
			continue
		}
		ref := "f" + strconv.Itoa(len(refs.shown)+1)
		refs.facts[ref], refs.facts[f.ID] = f.ID, f.ID
		refs.shown = append(refs.shown, *f)
		p.KnownFacts = append(p.KnownFacts, extractKnownFct{
			ID: ref, Subject: f.Subject, Predicate: f.Predicate, Object: f.Object, ValidFrom: extractTime(f.ValidFrom),
		})
	}
	mems, err := in.Known.Memories(ctx, text, extractKnownMemories)
	if err != nil {
		return nil, nil, fmt.Errorf("memory: extract: read known memories: %w", err)
	}
	for i := range mems {
		m := &mems[i]
		if m.ID == "" {
			continue
		}
		ref := "m" + strconv.Itoa(len(p.KnownMemories)+1)
		refs.memories[ref], refs.memories[m.ID] = m.ID, m.ID
		p.KnownMemories = append(p.KnownMemories, extractKnownMem{ID: ref, Kind: m.Kind, Text: extractSendText(m.Text, maxExtractKnownText)})
	}
	return p, refs, nil
}

// extractSpeaker names who said m: speaker when set, else m's Name, else
// the user for a user message, else the role.
func extractSpeaker(m *Message, speaker, user string) string {
	switch {
	case speaker != "":
		return speaker
	case m.Name != "":
		return speakerOf(m)
	case m.Role == RoleUser && user != "":
		return user
	}
	return string(m.Role)
}

// extractTime formats t for the model; the zero time is "".
func extractTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.Format(time.RFC3339)
}

// extractSendText is s made valid UTF-8, trimmed and cut to n bytes.
func extractSendText(s string, n int) string {
	s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
	if len(s) > n {
		s = cutBytes(s, n) + "…"
	}
	return s
}

// check turns a decoded reply into an Extraction, dropping every item that
// breaks a rule (see OpenAIExtractor).
func (refs *extractRefs) check(r *extractReply, speaker string) *Extraction {
	x := &Extraction{}
	for _, a := range r.Add {
		if len(x.Memories) == maxExtractItems {
			break
		}
		if m, ok := extractAdd(&a); ok {
			x.Memories = append(x.Memories, m)
		}
	}
	for _, d := range r.Delete {
		if id, ok := refs.memories[strings.TrimSpace(string(d))]; ok && !slices.Contains(x.Deletes, id) && len(x.Deletes) < maxExtractItems {
			x.Deletes = append(x.Deletes, id)
		}
	}
	for _, u := range r.Update {
		id, ok := refs.memories[strings.TrimSpace(u.ID)]
		text, good := extractText(u.Text)
		if !ok || !good || slices.Contains(x.Deletes, id) || len(x.Updates) == maxExtractItems ||
			slices.ContainsFunc(x.Updates, func(m Memory) bool { return m.ID == id }) {
			continue
		}
		x.Updates = append(x.Updates, Memory{ID: id, Text: text})
	}
	for _, e := range r.Entities {
		if len(x.Entities) == maxExtractItems {
			break
		}
		if ent, ok := extractEntity(&e, speaker); ok {
			x.Entities = append(x.Entities, ent)
		}
	}
	extractFacts(x, r.Facts, speaker)
	for _, id := range refs.invalidated(r.Invalidate, speaker) {
		if len(x.Invalidate) == maxExtractItems {
			break
		}
		x.Invalidate = append(x.Invalidate, Fact{ID: id})
	}
	return x
}

// extractAdd checks a memory the model adds.
func extractAdd(a *extractReplyAdd) (Memory, bool) {
	kind := Kind(strings.ToLower(strings.TrimSpace(a.Kind)))
	text, ok := extractText(a.Text)
	if !ok || !kind.Valid() {
		return Memory{}, false
	}
	m := Memory{Kind: kind, Text: text, Tags: extractTags(a.Tags)}
	if a.Importance != nil {
		if *a.Importance < 0 || *a.Importance > 1 {
			return Memory{}, false
		}
		m.Importance = *a.Importance
	}
	return m, true
}

// extractEntity checks an entity the model names, keeping its valid
// aliases and observations up to their bounds.
func extractEntity(e *extractReplyEntity, speaker string) (graph.Entity, bool) {
	n, ok := extractName(e.Name, speaker)
	if !ok {
		return graph.Entity{}, false
	}
	ent := graph.Entity{Name: n, Type: extractType(e.Type)}
	for _, a := range e.Aliases {
		if a, ok := extractName(a, ""); ok && graph.Fold(a) != graph.Fold(n) && len(ent.Aliases) < maxExtractAliases &&
			!slices.ContainsFunc(ent.Aliases, func(b string) bool { return graph.Fold(a) == graph.Fold(b) }) {
			ent.Aliases = append(ent.Aliases, a)
		}
	}
	for _, o := range e.Observations {
		if o, ok := extractObservation(o); ok && len(ent.Observations) < maxExtractObservations && !slices.Contains(ent.Observations, o) {
			ent.Observations = append(ent.Observations, o)
		}
	}
	return ent, true
}

// extractFacts adds to x the facts of the reply that pass, and their
// single-valued predicates.
func extractFacts(x *Extraction, facts []extractReplyFact, speaker string) {
	for i := range facts {
		if len(x.Facts) == maxExtractItems {
			break
		}
		f := &facts[i]
		fact, ok := extractFact(f, speaker)
		if !ok {
			continue
		}
		x.Facts = append(x.Facts, fact)
		if f.SingleValued && !slices.Contains(x.SingleValued, fact.Predicate) {
			x.SingleValued = append(x.SingleValued, fact.Predicate)
		}
	}
}

// extractFact checks a fact the model states.
func extractFact(f *extractReplyFact, speaker string) (Fact, bool) {
	subj, ok1 := extractName(f.Subject, speaker)
	obj, ok2 := extractName(f.Object, speaker)
	pred, ok3 := extractPredicate(f.Predicate)
	if !ok1 || !ok2 || !ok3 {
		return Fact{}, false
	}
	fact := Fact{Subject: subj, Predicate: pred, Object: obj}
	if f.Confidence != nil {
		if *f.Confidence <= 0 || *f.Confidence > 1 {
			return Fact{}, false
		}
		fact.Confidence = *f.Confidence
	}
	if f.ValidFrom != nil {
		fact.ValidFrom = extractValidFrom(*f.ValidFrom)
	}
	return fact, true
}

// invalidated returns the ids of the facts the reply closes, each once:
// by the id the prompt showed, or by a triple naming facts it showed.
func (refs *extractRefs) invalidated(invs []extractReplyInvalidate, speaker string) []string {
	var ids []string
	for i := range invs {
		inv := &invs[i]
		if inv.ID != nil && strings.TrimSpace(*inv.ID) != "" {
			if id, ok := refs.facts[strings.TrimSpace(*inv.ID)]; ok && !slices.Contains(ids, id) {
				ids = append(ids, id)
			}
			continue
		}
		ids = refs.invalidatedTriple(ids, inv, speaker)
	}
	return ids
}

// invalidatedTriple appends to ids the facts shown that the triple of inv
// names: subject and predicate, and the object unless it has none.
func (refs *extractRefs) invalidatedTriple(ids []string, inv *extractReplyInvalidate, speaker string) []string {
	subj, ok1 := extractName(deref(inv.Subject), speaker)
	pred, ok2 := extractPredicate(deref(inv.Predicate))
	if !ok1 || !ok2 {
		return ids
	}
	obj, hasObj := extractName(deref(inv.Object), speaker)
	if !hasObj && strings.TrimSpace(deref(inv.Object)) != "" {
		return ids // an object it cannot name: not "any object"
	}
	for _, f := range refs.shown {
		if graph.Fold(f.Subject) == graph.Fold(subj) && graph.Fold(f.Predicate) == graph.Fold(pred) &&
			(!hasObj || graph.Fold(f.Object) == graph.Fold(obj)) && !slices.Contains(ids, f.ID) {
			ids = append(ids, f.ID)
		}
	}
	return ids
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// extractFirstPerson are the names that stand for the speaker.
var extractFirstPerson = []string{"i", "me", "my", "mine", "myself", "user", "the user", "speaker", "the speaker"}

// extractName checks a name from a reply: trimmed, 1 to maxExtractName
// bytes of printable UTF-8. A first-person name stands for speaker (and
// is refused without one).
func extractName(s, speaker string) (string, bool) {
	s = strings.TrimSpace(s)
	if slices.Contains(extractFirstPerson, strings.ToLower(s)) {
		s = speaker
	}
	if s == "" || len(s) > maxExtractName || !extractPrintable(s) {
		return "", false
	}
	return s, true
}

// extractPrintable reports whether s is valid UTF-8 without U+FFFD (what
// invalid UTF-8 decodes to) or control characters other than spaces.
func extractPrintable(s string) bool {
	if !utf8.ValidString(s) {
		return false
	}
	for _, r := range s {
		if r == utf8.RuneError || (unicode.IsControl(r) && !unicode.IsSpace(r)) {
			return false
		}
	}
	return true
}

// extractText checks a memory's text: trimmed, printable, at most
// maxExtractText bytes.
func extractText(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > maxExtractText || !extractPrintable(s) {
		return "", false
	}
	return s, true
}

// extractObservation checks an entity's observation.
func extractObservation(s string) (string, bool) {
	s = strings.TrimSpace(s)
	if s == "" || len(s) > min(maxExtractText, graph.MaxObservationLength) || !extractPrintable(s) {
		return "", false
	}
	return s, true
}

// extractPredicate folds a predicate to lowercase snake_case: "Renewal
// Owner" and "renewal-owner" become "renewal_owner".
func extractPredicate(s string) (string, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	if s == "" || len(s) > maxExtractName || !extractPrintable(s) {
		return "", false
	}
	var b strings.Builder
	sep := false
	for _, r := range s {
		if unicode.IsSpace(r) || r == '-' || r == '_' {
			sep = true
			continue
		}
		if sep && b.Len() > 0 {
			b.WriteByte('_')
		}
		sep = false
		b.WriteRune(r)
	}
	if b.Len() == 0 {
		return "", false
	}
	return b.String(), true
}

// extractType trims an entity type, keeps its printable characters and
// cuts it to maxExtractType bytes.
func extractType(s string) string {
	s = strings.Map(func(r rune) rune {
		if r == utf8.RuneError || unicode.IsControl(r) {
			return -1
		}
		return r
	}, strings.TrimSpace(s))
	return strings.TrimSpace(cutBytes(s, maxExtractType))
}

// extractTags keeps the tags the store accepts, trimmed and lowercased,
// without repeats, at most maxExtractTags.
func extractTags(tags []string) []string {
	var out []string
	for _, t := range tags {
		t = strings.ToLower(strings.TrimSpace(t))
		if t == "" || len(t) > MaxTagLength || !extractPrintable(t) || engine.ValidateID(t) != nil || slices.Contains(out, t) {
			continue
		}
		if out = append(out, t); len(out) == maxExtractTags {
			break
		}
	}
	return out
}

// extractValidFrom parses an RFC 3339 time or a date; anything else, or a
// time the store cannot keep, is the zero time (the message's time).
func extractValidFrom(s string) time.Time {
	s = strings.TrimSpace(s)
	t, err := time.Parse(time.RFC3339, s)
	if err != nil {
		if t, err = time.Parse(time.DateOnly, s); err != nil {
			return time.Time{}
		}
	}
	if t.Year() < 1678 || t.Year() > 2261 {
		return time.Time{}
	}
	return t
}
