package embed

import (
	"context"
	"errors"
	"fmt"
	"math"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/philippgille/chromem-go"
)

// Defaults of the network providers.
const (
	// DefaultOllamaBaseURL is [OllamaOptions.BaseURL] when empty: a local
	// Ollama server's API root.
	DefaultOllamaBaseURL = "http://localhost:11434/api"

	// DefaultOpenAIBaseURL is [OpenAIOptions.BaseURL] when empty.
	DefaultOpenAIBaseURL = "https://api.openai.com/v1"

	// DefaultConcurrency is the number of requests a [Provider] keeps in
	// flight when its options say 0. Both APIs take one text per request (as
	// chromem-go calls them), so a batch is as fast as its requests overlap.
	// Ollama serves at most OLLAMA_NUM_PARALLEL requests per model at once
	// (4 or 1 by default, depending on memory, per its FAQ); more would only
	// queue at a local server.
	DefaultConcurrency = 4
)

// OllamaOptions configures [NewOllama]. A nil *OllamaOptions is invalid:
// Model is required. Every zero field means the documented default. NewOllama
// copies it: the caller may change or share it afterwards.
type OllamaOptions struct {
	// BaseURL is the API root; requests go to BaseURL + "/embeddings".
	// Empty means [DefaultOllamaBaseURL]. It must be an http or https URL
	// without a query or fragment.
	BaseURL string

	// Model is the embedding model, such as "nomic-embed-text". Required.
	Model string

	// Dimensions, when set, is the length every returned vector must have;
	// 0 means learn it from the first response. At most [MaxDimensions].
	Dimensions int

	// Concurrency is the maximum number of requests in flight during one
	// Embed call. Zero means [DefaultConcurrency].
	Concurrency int
}

// OpenAIOptions configures [NewOpenAI], for OpenAI and any server that
// speaks its embeddings API (vLLM, LiteLLM, LocalAI, Ollama's /v1, ...).
// A nil *OpenAIOptions is invalid: Model is required. Every zero field means
// the documented default. NewOpenAI copies it: the caller may change or share
// it afterwards.
type OpenAIOptions struct {
	// BaseURL is the API root; requests go to BaseURL + "/embeddings".
	// Empty means [DefaultOpenAIBaseURL]. It must be an http or https URL
	// without a query or fragment.
	BaseURL string

	// APIKey is sent as "Authorization: Bearer <APIKey>" on every request.
	// Required for api.openai.com; other servers may not need one, but the
	// header is sent even when it is empty. It is never read from the
	// environment: the program decides where keys come from.
	APIKey string

	// Model is the embedding model, such as "text-embedding-3-small".
	// Required.
	Model string

	// Dimensions, when set, is the length every returned vector must have;
	// 0 means learn it from the first response. At most [MaxDimensions]. It
	// is checked, not requested: the request carries no "dimensions" field.
	Dimensions int

	// Concurrency is the maximum number of requests in flight during one
	// Embed call. Zero means [DefaultConcurrency].
	Concurrency int
}

// endpoint is the validated common part of both option structs.
type endpoint struct {
	provider    string
	baseURL     string // without a trailing slash
	model       string
	dimensions  int
	concurrency int
}

// validateEndpoint checks the fields both providers share and reports every
// bad one at once; it returns the normalised endpoint.
func validateEndpoint(provider, baseURL, defaultBaseURL, model string, dimensions, concurrency int) (endpoint, string, []error) {
	var errs []error
	if baseURL == "" {
		baseURL = defaultBaseURL
	}
	baseURL = strings.TrimRight(baseURL, "/")
	var where string
	if u, err := ParseBaseURL(baseURL); err != nil {
		errs = append(errs, err)
	} else {
		// Host and path only: never the scheme (same server either way) nor
		// the user info (a credential must not end up in cache keys).
		where = strings.ToLower(u.Host) + u.EscapedPath()
	}
	if model == "" {
		errs = append(errs, errors.New("Model is required"))
	}
	if dimensions < 0 || dimensions > MaxDimensions {
		errs = append(errs, fmt.Errorf("Dimensions %d is outside [0, %d]", dimensions, MaxDimensions))
	}
	if concurrency < 0 {
		errs = append(errs, fmt.Errorf("Concurrency %d is negative", concurrency))
	}
	if concurrency == 0 {
		concurrency = DefaultConcurrency
	}
	return endpoint{
		provider:    provider,
		baseURL:     baseURL,
		model:       model,
		dimensions:  dimensions,
		concurrency: concurrency,
	}, where, errs
}

// NewOllama returns a [Provider] that embeds texts with an Ollama server's
// embeddings API (POST BaseURL/embeddings, {"model", "prompt"}), through
// chromem-go's Ollama embedding function. It makes no request until Embed is
// called. It returns an error wrapping [ErrInvalidOptions] for bad options.
func NewOllama(opts *OllamaOptions) (*Provider, error) {
	var o OllamaOptions
	if opts != nil {
		o = *opts
	}
	ep, where, errs := validateEndpoint("ollama", o.BaseURL, DefaultOllamaBaseURL, o.Model, o.Dimensions, o.Concurrency)
	if err := joinInvalid(errs); err != nil {
		return nil, err
	}
	return newProvider(ep, where, ollamaModelCheck(ep.model, chromem.NewEmbeddingFuncOllama(ep.model, ep.baseURL))), nil
}

// ollamaModelCheck returns fn with the 404 Ollama answers for a model it
// has not pulled turned into an error wrapping [ErrUnknownModel] that names
// the model. chromem-go reports a reply's status only in its error's text.
func ollamaModelCheck(model string, fn chromem.EmbeddingFunc) chromem.EmbeddingFunc {
	return func(ctx context.Context, text string) ([]float32, error) {
		v, err := fn(ctx, text)
		if err != nil && strings.Contains(err.Error(), "404 Not Found") {
			return nil, fmt.Errorf("%w: the server has no model %q (ollama pull %s): %v", ErrUnknownModel, model, model, err)
		}
		return v, err
	}
}

// NewOpenAI returns a [Provider] that embeds texts with OpenAI's embeddings
// API (POST BaseURL/embeddings, {"input", "model"}) or any server compatible
// with it, through chromem-go's OpenAI-compatible embedding function. It
// makes no request until Embed is called. It returns an error wrapping
// [ErrInvalidOptions] for bad options.
func NewOpenAI(opts *OpenAIOptions) (*Provider, error) {
	var o OpenAIOptions
	if opts != nil {
		o = *opts
	}
	ep, where, errs := validateEndpoint("openai", o.BaseURL, DefaultOpenAIBaseURL, o.Model, o.Dimensions, o.Concurrency)
	if o.APIKey == "" && ep.baseURL == DefaultOpenAIBaseURL {
		errs = append(errs, fmt.Errorf("APIKey is required for %s", DefaultOpenAIBaseURL))
	}
	if err := joinInvalid(errs); err != nil {
		return nil, err
	}
	// normalized = true tells chromem-go to return vectors untouched: the
	// Provider checks and normalises every vector itself, the same way for
	// both APIs, instead of trusting a guess made from the first response.
	normalized := true
	fn := chromem.NewEmbeddingFuncOpenAICompat(ep.baseURL, o.APIKey, ep.model, &normalized)
	return newProvider(ep, where, fn), nil
}

// Provider is an [Embedder] backed by a network embedding API; [NewOllama]
// and [NewOpenAI] return one. Texts are sent to the configured server, one
// request per text, at most the configured concurrency at a time.
//
// Every vector it returns has unit L2 norm (it normalises those the server
// does not) and the same length: the configured dimension, or the one
// learned from the first response.
//
// Its [Identity] is {Provider: "ollama" or "openai", Model:
// "<model>@<host><path>"}, such as "nomic-embed-text@localhost:11434/api":
// the model name alone does not identify a vector space across servers (an
// OpenAI-compatible gateway may serve anything as "embedding", and two Ollama
// servers may hold different versions of "nomic-embed-text:latest"), and
// mixing two spaces in one cache or index silently ruins recall. The price is
// a cold cache after a server moves; pass [CacheOptions.Identity] to keep the
// old entries when you know the model is the same.
//
// Requests carry no timeout of their own: set a deadline on the context
// given to Embed.
//
// A Provider is safe for concurrent use.
type Provider struct {
	id          Identity
	model       string
	fn          chromem.EmbeddingFunc // never nil: chromem-go defaults a nil func to OpenAI
	concurrency int
	fixedDims   int
	dims        atomic.Int64 // fixedDims, or learned from the first response; 0 until known
}

func newProvider(ep endpoint, where string, fn chromem.EmbeddingFunc) *Provider {
	p := &Provider{
		id:          Identity{Provider: ep.provider, Model: ep.model + "@" + where},
		model:       ep.model,
		fn:          fn,
		concurrency: ep.concurrency,
		fixedDims:   ep.dimensions,
	}
	p.dims.Store(int64(ep.dimensions))
	return p
}

// Identity returns the provider name and "<model>@<host><path>"; see
// [Provider].
func (p *Provider) Identity() Identity { return p.id }

// Model returns the model's name as configured, without the server that
// [Provider.Identity] adds: the same model gives the same vectors from any
// server.
func (p *Provider) Model() string { return p.model }

// Dimensions returns the configured dimension, else the one learned from the
// first response, else 0.
func (p *Provider) Dimensions() int { return int(p.dims.Load()) }

// Embed sends one request per text, at most the configured concurrency in
// flight, and returns the vectors in the order of texts. An empty texts
// slice returns (nil, nil) without a request. Each text is sent as is; most
// servers reject an empty one.
//
// On the first failure it cancels the requests still in flight and returns
// that error, naming the provider and the index of the text. It returns an
// error wrapping [ErrDimensionMismatch] for a vector of the wrong length and
// [ErrInvalidVector] for an unusable one. When ctx ends it returns promptly
// with an error wrapping ctx.Err(). No goroutine outlives the call.
func (p *Provider) Embed(ctx context.Context, texts []string) ([][]float32, error) {
	if len(texts) == 0 {
		return nil, nil
	}
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed %s: %w", p.id.Provider, err)
	}
	out := make([][]float32, len(texts))
	workCtx, cancel := context.WithCancel(ctx)
	defer cancel()

	var (
		next     atomic.Int64
		errOnce  sync.Once
		firstErr error
		wg       sync.WaitGroup
	)
	for range min(p.concurrency, len(texts)) {
		wg.Go(func() {
			for workCtx.Err() == nil {
				i := int(next.Add(1) - 1)
				if i >= len(texts) {
					return
				}
				v, err := p.embedOne(workCtx, texts[i])
				if err != nil {
					errOnce.Do(func() {
						firstErr = &chainError{what: fmt.Sprintf("embed %s: text %d", p.id.Provider, i), err: err}
						cancel()
					})
					return
				}
				out[i] = v
			}
		})
	}
	wg.Wait()
	// A cancelled caller gets its own context's error, not whichever request
	// happened to notice first.
	if err := ctx.Err(); err != nil {
		return nil, fmt.Errorf("embed %s: %w", p.id.Provider, err)
	}
	if firstErr != nil {
		return nil, firstErr
	}
	return out, nil
}

// embedOne requests one text's vector, then checks and normalises it.
func (p *Provider) embedOne(ctx context.Context, text string) ([]float32, error) {
	v, err := p.fn(ctx, text)
	if err != nil {
		return nil, err
	}
	if len(v) > MaxDimensions {
		return nil, fmt.Errorf("%d dimensions is more than %d: %w", len(v), MaxDimensions, ErrInvalidVector)
	}
	want := p.dims.Load()
	if want == 0 && p.dims.CompareAndSwap(0, int64(len(v))) {
		want = int64(len(v))
	} else if want == 0 {
		want = p.dims.Load()
	}
	if int64(len(v)) != want {
		if p.fixedDims > 0 {
			return nil, fmt.Errorf("got %d dimensions, configured %d: %w", len(v), want, ErrDimensionMismatch)
		}
		return nil, fmt.Errorf("got %d dimensions, earlier responses had %d: %w", len(v), want, ErrDimensionMismatch)
	}
	if err := normalize(v); err != nil {
		return nil, err
	}
	return v, nil
}

// normalize scales v in place to unit L2 norm. It leaves v untouched when it
// is already within 1e-6 of unit norm (the server normalised it), and fails
// with [ErrInvalidVector] for a NaN or infinite component or a zero vector.
func normalize(v []float32) error {
	var sum float64
	for i, x := range v {
		f := float64(x)
		if math.IsNaN(f) || math.IsInf(f, 0) {
			return fmt.Errorf("component %d is %v: %w", i, x, ErrInvalidVector)
		}
		sum += float64(f * f)
	}
	if sum == 0 {
		return fmt.Errorf("zero vector: %w", ErrInvalidVector)
	}
	norm := math.Sqrt(sum)
	if math.Abs(norm-1) <= 1e-6 {
		return nil
	}
	inv := 1 / norm
	for i, x := range v {
		v[i] = float32(float64(x) * inv)
	}
	return nil
}

// ParseBaseURL checks the base URL of an HTTP service (an embedding
// provider, an OpenAI-compatible chat server): http or https, a host, no
// query or fragment. Its errors name the field BaseURL and never repeat a
// password written into the URL.
func ParseBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		// url.Parse's error quotes the URL, which may hold a password.
		return nil, errors.New("BaseURL is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return nil, fmt.Errorf("BaseURL %q: scheme must be http or https", u.Redacted())
	case u.Host == "":
		return nil, fmt.Errorf("BaseURL %q has no host", u.Redacted())
	case u.RawQuery != "" || u.Fragment != "" || u.ForceQuery:
		return nil, fmt.Errorf("BaseURL %q must not have a query or fragment", u.Redacted())
	}
	return u, nil
}
