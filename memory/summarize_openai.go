package memory

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/engramdb/engram/memory/internal/bpe"
)

// DefaultSummaryPrompt is the system prompt of an [OpenAISummarizer] whose
// options leave Prompt empty.
const DefaultSummaryPrompt = "You keep the rolling summary of a conversation. " +
	"Rewrite the summary so far to also cover the new messages. " +
	"Write a concise summary in the third person. " +
	"Keep names, dates, numbers, decisions and open questions; drop greetings and small talk. " +
	"Reply with the summary only."

// Errors of [OpenAISummarizer.Summarize]. Each wraps [ErrSummarization], as
// does [*StatusError], so errors.Is(err, ErrSummarization) matches every
// failure of the server or of the way to it. A done context is not one of
// them: it returns an error wrapping ctx.Err() alone.
var (
	// ErrSummarization is returned when the summarization server cannot be
	// reached, does not answer within the timeout, or answers with an
	// error or a reply that holds no usable summary.
	ErrSummarization = errors.New("memory: summarization failed")
	// ErrMalformedSummary is returned for a reply that is not the JSON of a
	// chat completion, or is larger than 4 MiB.
	ErrMalformedSummary = fmt.Errorf("%w: malformed reply", ErrSummarization)
	// ErrEmptySummary is returned for a reply with no choices or with empty
	// content.
	ErrEmptySummary = fmt.Errorf("%w: reply holds no summary", ErrSummarization)
)

// Limits of the OpenAI summarizer.
const (
	defaultSummaryTimeout = time.Minute
	maxSummaryReply       = 4 << 20 // bytes read of a reply; a summary is a few KiB
	maxTranscriptPart     = 2000    // bytes of one tool call or tool result sent
)

// OpenAISummarizerOptions configures [NewOpenAISummarizer]. A nil
// *OpenAISummarizerOptions is invalid: BaseURL and Model are required. Every
// zero field means the documented default. NewOpenAISummarizer copies it:
// the caller may change or share it afterwards.
type OpenAISummarizerOptions struct {
	// BaseURL is the API root; requests go to BaseURL + "/chat/completions",
	// such as "https://api.openai.com/v1" or "http://localhost:11434/v1".
	// Required: the store reaches no network it was not pointed at. It must
	// be an http or https URL without a query or fragment.
	BaseURL string

	// APIKey, when set, is sent as "Authorization: Bearer <APIKey>". It is
	// never read from the environment, and never appears in an error.
	APIKey string

	// Model is the chat model, such as "gpt-4o-mini". Required.
	Model string

	// HTTPClient sends the requests. Nil means [http.DefaultClient].
	HTTPClient *http.Client

	// Timeout bounds one Summarize call's request, reply included. Zero
	// means one minute; negative means no timeout of its own (ctx still
	// applies).
	Timeout time.Duration

	// Prompt is the system prompt. Empty means [DefaultSummaryPrompt].
	Prompt string

	// Encoding is the tiktoken encoding that counts maxTokens. Empty means
	// [DefaultEncoding]; set it to the store's Options.Encoding when that is
	// different.
	Encoding string
}

// OpenAISummarizer is a [Summarizer] that asks a chat model for the summary,
// through OpenAI's chat-completions API (POST BaseURL/chat/completions) or
// any server compatible with it (Ollama's /v1, vLLM, LiteLLM, ...).
//
// Each call sends one request: the system prompt, then one user message
// holding the summary so far, the new messages as a transcript ("user: ...",
// or the speaker's Name) and the budget, with max_tokens set to maxTokens.
// System messages are left out; tool calls and results are sent cut to 2000
// bytes each. A reply longer than maxTokens (in Encoding) is cut at the last
// sentence that fits, or else at a word or token boundary.
//
// It makes no request when there is nothing new to summarize: no messages
// with content and a previous summary that fits maxTokens (returned as is).
//
// An OpenAISummarizer is safe for concurrent use.
type OpenAISummarizer struct {
	chat     chatClient
	prompt   string
	encoding string
}

// NewOpenAISummarizer returns an [OpenAISummarizer]. It makes no request. It
// returns an error wrapping [ErrInvalidOptions] for bad options, naming
// every bad field.
func NewOpenAISummarizer(opts *OpenAISummarizerOptions) (*OpenAISummarizer, error) {
	var o OpenAISummarizerOptions
	if opts != nil {
		o = *opts
	}
	chat, errs := newChatClient(o.BaseURL, o.APIKey, o.Model, o.HTTPClient, o.Timeout, defaultSummaryTimeout)
	encoding := cmp.Or(o.Encoding, DefaultEncoding)
	if !knownEncoding(encoding) {
		errs = append(errs, fmt.Errorf("Encoding %q is not one of %v", o.Encoding, encodings))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	s := &OpenAISummarizer{
		chat:     chat,
		prompt:   cmp.Or(o.Prompt, DefaultSummaryPrompt),
		encoding: encoding,
	}
	return s, nil
}

// The chat-completions wire format, the parts used.
type (
	chatMessage struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	chatRequest struct {
		Model     string        `json:"model"`
		Messages  []chatMessage `json:"messages"`
		MaxTokens int           `json:"max_tokens"`
	}
	chatResponse struct {
		Choices []struct {
			Message struct {
				Content string `json:"content"`
			} `json:"message"`
		} `json:"choices"`
		// Some compatible servers answer an error with status 200.
		Error *struct {
			Message string `json:"message"`
		} `json:"error"`
	}
)

// Summarize asks the model for a summary of prev and msgs and returns it,
// trimmed, in at most maxTokens tokens. It returns an error wrapping
// [ErrInvalidOptions] for a maxTokens that is not positive, an error
// wrapping [ErrSummarization] (a [*StatusError], [ErrMalformedSummary],
// [ErrEmptySummary], a timeout or a transport error) when the server fails,
// and an error wrapping ctx.Err() when ctx ends first.
func (s *OpenAISummarizer) Summarize(ctx context.Context, prev string, msgs []Message, maxTokens int) (string, error) {
	if maxTokens <= 0 {
		return "", fmt.Errorf("%w: summary budget of %d tokens is not positive", ErrInvalidOptions, maxTokens)
	}
	enc, err := tokenizer(s.encoding)
	if err != nil {
		return "", err
	}
	if err := ctx.Err(); err != nil {
		return "", fmt.Errorf("memory: summarize: %w", err)
	}
	prev = strings.TrimSpace(strings.ToValidUTF8(prev, "\uFFFD"))
	transcript := renderTranscript(msgs)
	if transcript == "" && countText(enc, prev) <= maxTokens {
		return prev, nil
	}

	var user strings.Builder
	user.WriteString("Summary so far:\n")
	user.WriteString(cmp.Or(prev, "(none)"))
	user.WriteString("\n\nNew messages, oldest first:\n")
	user.WriteString(cmp.Or(transcript, "(none)"))
	fmt.Fprintf(&user, "\n\nThe summary must fit in %d tokens.", maxTokens)
	body, err := json.Marshal(chatRequest{
		Model: s.chat.model,
		Messages: []chatMessage{
			{Role: string(RoleSystem), Content: s.prompt},
			{Role: string(RoleUser), Content: user.String()},
		},
		MaxTokens: maxTokens,
	})
	if err != nil {
		return "", fmt.Errorf("%w: encode request: %w", ErrSummarization, err)
	}

	reqCtx, cancel := s.chat.withTimeout(ctx)
	defer cancel()
	reply, err := s.chat.post(reqCtx, body, ErrSummarization, ErrMalformedSummary, maxSummaryReply)
	if err != nil {
		switch {
		case ctx.Err() != nil:
			return "", fmt.Errorf("memory: summarize: %w", ctx.Err())
		case reqCtx.Err() != nil:
			return "", fmt.Errorf("%w: no reply within %v: %w", ErrSummarization, s.chat.timeout, reqCtx.Err())
		}
		return "", err
	}

	var resp chatResponse
	if err := json.Unmarshal(reply, &resp); err != nil {
		return "", fmt.Errorf("%w: %w", ErrMalformedSummary, err)
	}
	if len(resp.Choices) == 0 {
		if resp.Error != nil && resp.Error.Message != "" {
			return "", fmt.Errorf("%w: server error: %s", ErrEmptySummary, s.chat.redact(snippet(resp.Error.Message)))
		}
		return "", fmt.Errorf("%w: no choices", ErrEmptySummary)
	}
	out := strings.TrimSpace(strings.ToValidUTF8(resp.Choices[0].Message.Content, "\uFFFD"))
	if out == "" {
		return "", fmt.Errorf("%w: empty content", ErrEmptySummary)
	}
	return fitTokens(enc, out, maxTokens), nil
}

// renderTranscript writes the messages as lines "speaker: text", oldest
// first, leaving out system messages and cutting tool calls and results to
// maxTranscriptPart bytes.
func renderTranscript(msgs []Message) string {
	var b strings.Builder
	part := func(s string) string {
		s = strings.TrimSpace(strings.ToValidUTF8(s, "\uFFFD"))
		if len(s) > maxTranscriptPart {
			s = cutBytes(s, maxTranscriptPart) + "…"
		}
		return s
	}
	line := func(speaker, text string) {
		if text == "" {
			return
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(speaker)
		b.WriteString(": ")
		b.WriteString(text)
	}
	for i := range msgs {
		m := &msgs[i]
		switch m.Role {
		case RoleUser, RoleAssistant:
			line(speakerOf(m), strings.TrimSpace(strings.ToValidUTF8(m.Content, "\uFFFD")))
			for _, c := range m.ToolCalls {
				line(speakerOf(m), part("calls "+c.Name+" "+string(c.Arguments)))
			}
		case RoleTool:
			speaker := "tool"
			if m.Name != "" {
				speaker = "tool " + strings.ToValidUTF8(m.Name, "\uFFFD")
			}
			line(speaker, part(m.Content))
		}
	}
	return b.String()
}

// fitTokens returns text if it fits n tokens, else its longest prefix that
// ends a sentence and fits, else its prefix cut by [truncateTokens].
func fitTokens(enc *bpe.Encoder, text string, n int) string {
	if countText(enc, text) <= n {
		return text
	}
	best := ""
	for _, sp := range sentenceSpans(text) {
		p := strings.TrimSpace(text[:sp.end])
		if countText(enc, p) > n {
			break
		}
		best = p
	}
	if best != "" {
		return best
	}
	return truncateTokens(enc, text, n)
}
