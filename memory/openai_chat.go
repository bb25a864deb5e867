package memory

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/engramdb/engram/embed"
)

// StatusError is returned by [OpenAISummarizer.Summarize] and
// [OpenAIExtractor.Extract] when the server answers with a status other
// than 2xx. It wraps [ErrSummarization] when Summarize returns it and
// [ErrExtraction] when Extract does; use errors.As to read the status, to
// tell a bad key (401) from a rate limit (429) or an outage (5xx).
type StatusError struct {
	// StatusCode is the HTTP status of the reply.
	StatusCode int
	// Body is the start of the reply's body, at most 512 bytes, trimmed,
	// with the API key replaced by "[redacted]" should the server echo it.
	Body string

	class error // ErrSummarization or ErrExtraction; nil means ErrSummarization
}

// Error returns the status and the start of the body.
func (e *StatusError) Error() string {
	if e.Body == "" {
		return fmt.Sprintf("%v: server replied %d %s", e.Unwrap(), e.StatusCode, http.StatusText(e.StatusCode))
	}
	return fmt.Sprintf("%v: server replied %d %s: %s", e.Unwrap(), e.StatusCode, http.StatusText(e.StatusCode), e.Body)
}

// Unwrap returns the class of the failed call: [ErrSummarization] or
// [ErrExtraction].
func (e *StatusError) Unwrap() error { return cmp.Or(e.class, ErrSummarization) }

// maxStatusBody is how many bytes of an error reply a StatusError keeps.
const maxStatusBody = 512

// chatClient is the part of an OpenAI chat-completions client shared by the
// summarizer and the extractor: the endpoint, the key, the model, the HTTP
// client and the timeout of one call. It is immutable, so safe for
// concurrent use.
type chatClient struct {
	endpoint string // BaseURL + "/chat/completions"
	apiKey   string
	model    string
	client   *http.Client
	timeout  time.Duration // 0: none
}

// newChatClient checks the fields every chat client has and returns the
// client, or the errors naming each bad field. A zero timeout means def; a
// negative one, none.
func newChatClient(baseURL, apiKey, model string, client *http.Client, timeout, def time.Duration) (chatClient, []error) {
	var errs []error
	base := strings.TrimRight(baseURL, "/")
	if base == "" {
		errs = append(errs, errors.New("BaseURL is required"))
	} else if _, err := embed.ParseBaseURL(base); err != nil {
		errs = append(errs, err)
	}
	if model == "" {
		errs = append(errs, errors.New("Model is required"))
	}
	switch {
	case timeout == 0:
		timeout = def
	case timeout < 0:
		timeout = 0
	}
	return chatClient{
		endpoint: base + "/chat/completions",
		apiKey:   apiKey,
		model:    model,
		client:   cmp.Or(client, http.DefaultClient),
		timeout:  timeout,
	}, errs
}

// withTimeout returns ctx bounded by the client's timeout, if it has one.
func (c *chatClient) withTimeout(ctx context.Context) (context.Context, context.CancelFunc) {
	if c.timeout > 0 {
		return context.WithTimeout(ctx, c.timeout)
	}
	return ctx, func() {}
}

// post sends body and returns the reply's body when its status is 2xx and
// it holds at most maxReply bytes. Errors wrap class (a *StatusError for a
// status other than 2xx, tooLarge for a reply over maxReply), except that
// a done ctx makes them wrap ctx.Err() too, for the caller to sort.
func (c *chatClient) post(ctx context.Context, body []byte, class, tooLarge error, maxReply int64) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, c.endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", class, err)
	}
	req.Header.Set("Content-Type", "application/json")
	req.Header.Set("Accept", "application/json")
	if c.apiKey != "" {
		req.Header.Set("Authorization", "Bearer "+c.apiKey)
	}
	resp, err := c.client.Do(req)
	if err != nil {
		// net/http strips a password from the URL it reports; the key
		// travels in a header and is never part of the error.
		return nil, fmt.Errorf("%w: %w", class, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, maxStatusBody))
		return nil, &StatusError{StatusCode: resp.StatusCode, Body: c.redact(snippet(string(b))), class: class}
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, maxReply+1))
	if err != nil {
		return nil, fmt.Errorf("%w: read reply: %w", class, err)
	}
	if int64(len(b)) > maxReply {
		return nil, fmt.Errorf("%w: reply is over %d bytes", tooLarge, maxReply)
	}
	return b, nil
}

// redact replaces the API key in text a server sent back.
func (c *chatClient) redact(text string) string {
	if c.apiKey == "" {
		return text
	}
	return strings.ReplaceAll(text, c.apiKey, "[redacted]")
}

// snippet bounds text a server sent for an error message: at most
// maxStatusBody bytes, valid UTF-8, trimmed.
func snippet(text string) string {
	return strings.TrimSpace(strings.ToValidUTF8(cutBytes(text, maxStatusBody), ""))
}

// cutBytes returns at most n bytes of s, not splitting a character.
func cutBytes(s string, n int) string {
	if len(s) <= n {
		return s
	}
	for n > 0 && !utf8.RuneStart(s[n]) {
		n--
	}
	return s[:n]
}
