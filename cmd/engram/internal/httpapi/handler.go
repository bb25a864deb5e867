package httpapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"mime"
	"net/http"
	"path"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/memory"
)

// DefaultMaxBodyBytes is the request body limit when Options.MaxBodyBytes is
// zero: 4 MiB, four times the largest message a store accepts
// ([memory.MaxMessageBytesLimit]), so a batch of several large messages fits.
const DefaultMaxBodyBytes = 4 << 20

// MaxPageSize is the largest limit a listing accepts.
const MaxPageSize = 1000

// MetricsAccess says who may read /metrics.
type MetricsAccess int

const (
	// MetricsPublic serves /metrics without authentication, as Prometheus
	// scrapers expect. The metrics carry route patterns, status classes and
	// store sizes, never tenants, users or ids. The default.
	MetricsPublic MetricsAccess = iota
	// MetricsToken serves /metrics to any valid bearer token.
	MetricsToken
	// MetricsOff does not serve /metrics (the route answers 404).
	MetricsOff
)

// String returns "public", "token" or "off".
func (m MetricsAccess) String() string {
	switch m {
	case MetricsPublic:
		return "public"
	case MetricsToken:
		return "token"
	case MetricsOff:
		return "off"
	}
	return "MetricsAccess(" + strconv.Itoa(int(m)) + ")"
}

// ParseMetricsAccess parses the names String returns.
func ParseMetricsAccess(s string) (MetricsAccess, error) {
	for _, m := range []MetricsAccess{MetricsPublic, MetricsToken, MetricsOff} {
		if s == m.String() {
			return m, nil
		}
	}
	return 0, fmt.Errorf("%w: metrics access %q is not public, token or off", ErrInvalidOptions, s)
}

// Options configures a [Handler]. Tokens is required; every other zero field
// means the documented default.
type Options struct {
	// Tokens authenticate every /v1/ call (and /mcp) and name its tenant.
	// Required.
	Tokens *Tokens

	// MaxBodyBytes bounds a request body; a larger body is answered 413.
	// Zero means [DefaultMaxBodyBytes].
	MaxBodyBytes int64

	// Logger receives one access-log record per request (method, route
	// pattern, status, bytes, duration, tenant and client name; never the
	// token) and the details of internal errors, which responses leave
	// out. Nil is silent.
	Logger *slog.Logger

	// Metrics says who may read /metrics. Zero is [MetricsPublic].
	Metrics MetricsAccess

	// Registry receives the handler's metrics and is what /metrics serves.
	// Nil means a new registry of the handler's own, with the Go runtime
	// and process collectors added; the global registry is never used.
	Registry *prometheus.Registry

	// MCP, when set, is mounted at /mcp (POST: a stateless streamable
	// HTTP transport; GET and DELETE answer 405) behind the same bearer
	// authentication and body limit; the request's context carries the
	// token's tenant, read with [Tenant]. Its HTTP errors are answered in
	// the API's JSON envelope; JSON-RPC answers pass through.
	MCP http.Handler

	// Router, when set, sends each request that names a partition to the
	// node that owns it (a store in PostgreSQL shared by several
	// servers): the routes under /v1/users/{user}/ by the token's tenant
	// and the user, those under /v1/shared/ by the tenant's shared
	// partition, /v1/recall by the user of its body, and /mcp by
	// MCPScope. A request this node serves is served as without it.
	Router *cluster.Router

	// MCPScope, with MCP, says whose memory an /mcp request works on
	// (the scope function the MCP handler uses): a request it refuses is
	// answered 400 invalid_scope (403 for other errors), and with Router
	// the request is routed by it. Nil serves every /mcp request here.
	MCPScope func(*http.Request) (memory.Scope, error)

	// FlushTimeout bounds the wait of POST /v1/admin/flush: past it the
	// request is answered 503 extraction_pending, with the count of
	// messages still queued. Zero means [DefaultFlushTimeout].
	FlushTimeout time.Duration

	// Where names the store in GET /v1/admin/stats, as engram inspect
	// names it: its directory or its PostgreSQL schema, never a DSN.
	// Empty means the store's directory, "postgres", or "(in memory)".
	Where string
}

// DefaultFlushTimeout is the default [Options.FlushTimeout].
const DefaultFlushTimeout = 30 * time.Second

func (o *Options) validate() error {
	var errs []error
	if o.Tokens == nil || o.Tokens.Len() == 0 {
		errs = append(errs, errors.New("Tokens is required"))
	}
	if o.MaxBodyBytes < 0 {
		errs = append(errs, fmt.Errorf("MaxBodyBytes %d is negative", o.MaxBodyBytes))
	}
	if o.FlushTimeout < 0 {
		errs = append(errs, fmt.Errorf("FlushTimeout %s is negative", o.FlushTimeout))
	}
	if o.Metrics < MetricsPublic || o.Metrics > MetricsOff {
		errs = append(errs, fmt.Errorf("Metrics %v is unknown", o.Metrics))
	}
	if len(errs) > 0 {
		return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
	}
	return nil
}

// Handler is Engram's HTTP JSON API over one [memory.Store]: the routes
// under /v1/, /healthz, /metrics, /openapi.json and, when configured, /mcp.
// It is safe for concurrent use. It does not own the store: close the store
// after the server that uses the handler has shut down.
type Handler struct {
	store   *memory.Store
	tokens  *Tokens
	maxBody int64
	log     *slog.Logger
	metrics *metrics
	mcp     http.Handler
	mux     *http.ServeMux
	// routes are the routes registered, in table order.
	routes []route
	// router sends requests to their partition's owner; nil serves all
	// here.
	router   *cluster.Router
	mcpScope func(*http.Request) (memory.Scope, error)
	// compactMu runs one forced compaction at a time (admin.go).
	compactMu sync.Mutex
	// flushTimeout bounds POST /v1/admin/flush (admin.go).
	flushTimeout time.Duration
	// where names the store in GET /v1/admin/stats (stats.go).
	where string
}

// New returns a Handler over store. It registers its metrics in
// opts.Registry (or a registry of its own) and returns an error wrapping
// [ErrInvalidOptions] for bad options, or the registry's error when the
// metrics are already registered there.
func New(store *memory.Store, opts *Options) (*Handler, error) {
	if store == nil {
		return nil, fmt.Errorf("%w: store is nil", ErrInvalidOptions)
	}
	if opts == nil {
		opts = &Options{}
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	h := &Handler{
		store:    store,
		tokens:   opts.Tokens,
		maxBody:  opts.MaxBodyBytes,
		log:      opts.Logger,
		mcp:      opts.MCP,
		mux:      http.NewServeMux(),
		router:   opts.Router,
		mcpScope: opts.MCPScope,
	}
	if h.maxBody == 0 {
		h.maxBody = DefaultMaxBodyBytes
	}
	if h.flushTimeout = opts.FlushTimeout; h.flushTimeout == 0 {
		h.flushTimeout = DefaultFlushTimeout
	}
	if h.log == nil {
		h.log = slog.New(slog.DiscardHandler)
	}
	if h.where = opts.Where; h.where == "" {
		switch st := store.Stats(); {
		case st.Dir != "":
			h.where = st.Dir
		case st.Backend == "postgres":
			h.where = "postgres"
		default:
			h.where = "(in memory)"
		}
	}
	m, err := newMetrics(store, opts.Router, opts.Registry)
	if err != nil {
		return nil, err
	}
	h.metrics = m
	for _, rt := range h.table(opts.Metrics) {
		if h.router != nil {
			rt.partition = h.partitionOf(rt)
		}
		h.mux.Handle(rt.method+" "+rt.path, h.wrap(rt))
		h.routes = append(h.routes, rt)
	}
	return h, nil
}

// access says what a route needs of the caller.
type access int

const (
	public access = iota // no token
	tenant               // a valid bearer token; the tenant goes in the context
	admin                // a valid bearer token marked admin (403 for others)
)

// route is one entry of the route table: the method and ServeMux path
// pattern, which also label the route's metrics and access logs.
type route struct {
	method string
	path   string
	access access
	// body says the route reads a JSON body, so its Content-Type is
	// checked.
	body bool
	// query are the query parameters the route takes. Under /v1/ any
	// other is refused (400 invalid_parameter), as an unknown JSON field
	// is: a misspelt limit or as_of is not silently left out.
	query []string
	// serve answers the request; an error it returns becomes the JSON
	// error response (see writeError).
	serve func(w http.ResponseWriter, r *http.Request) error
	// shared marks a route under /v1/shared/: the copy of a memory or
	// graph route under /v1/users/{user}/ that works on the tenant's
	// shared partition (see sharedRoutes and ownerScope).
	shared bool
	// partition, when set, returns the partition the request works on,
	// to route it to its owner (see Options.Router); false serves it
	// here (a request it cannot tell is refused here, as without a
	// router).
	partition func(r *http.Request) ([]byte, bool)
}

// table is the route table: every route the handler serves comes from it, and
// a test checks it against openapi.json.
func (h *Handler) table(metricsAccess MetricsAccess) []route {
	rs := []route{
		{method: "GET", path: "/healthz", serve: h.healthz},
		{method: "GET", path: "/openapi.json", serve: serveOpenAPI},

		{method: "GET", path: "/v1/users", query: []string{"after", "limit"}, access: tenant, serve: h.listUsers},
		{method: "GET", path: "/v1/users/{user}/sessions", query: []string{"after", "limit"}, access: tenant, serve: h.listSessions},
		{method: "POST", path: "/v1/users/{user}/sessions/{session}/messages", access: tenant, body: true, serve: h.appendMessages},
		{method: "GET", path: "/v1/users/{user}/sessions/{session}/messages", query: []string{"after", "before", "since", "until", "limit", "reverse"}, access: tenant, serve: h.listMessages},
		{method: "GET", path: "/v1/users/{user}/sessions/{session}/window", query: []string{"max_messages", "max_tokens"}, access: tenant, serve: h.window},
		{method: "DELETE", path: "/v1/users/{user}/sessions/{session}", access: tenant, serve: h.forgetSession},
		{method: "DELETE", path: "/v1/users/{user}", access: tenant, serve: h.forgetUser},

		{method: "POST", path: "/v1/users/{user}/memories", access: tenant, body: true, serve: h.remember},
		{method: "GET", path: "/v1/users/{user}/memories", query: []string{"kind", "tag", "after", "limit"}, access: tenant, serve: h.listMemories},
		{method: "GET", path: "/v1/users/{user}/memories/{id}", access: tenant, serve: h.getMemory},
		{method: "PUT", path: "/v1/users/{user}/memories/{id}", access: tenant, body: true, serve: h.updateMemory},
		{method: "DELETE", path: "/v1/users/{user}/memories/{id}", access: tenant, serve: h.deleteMemory},
		{method: "GET", path: "/v1/users/{user}/memories/{id}/history", access: tenant, serve: h.memoryHistory},

		{method: "POST", path: "/v1/users/{user}/facts", access: tenant, body: true, serve: h.relate},
		{method: "GET", path: "/v1/users/{user}/facts", query: []string{"subject", "predicate", "object", "as_of", "history", "after", "limit"}, access: tenant, serve: h.listFacts},
		{method: "DELETE", path: "/v1/users/{user}/facts/{id}", access: tenant, serve: h.deleteFact},
		{method: "POST", path: "/v1/users/{user}/traverse", access: tenant, body: true, serve: h.traverse},

		{method: "POST", path: "/v1/users/{user}/entities", access: tenant, body: true, serve: h.createEntities},
		{method: "DELETE", path: "/v1/users/{user}/entities", access: tenant, body: true, serve: h.deleteEntities},
		{method: "POST", path: "/v1/users/{user}/relations", access: tenant, body: true, serve: h.createRelations},
		{method: "DELETE", path: "/v1/users/{user}/relations", access: tenant, body: true, serve: h.deleteRelations},
		{method: "POST", path: "/v1/users/{user}/observations", access: tenant, body: true, serve: h.addObservations},
		{method: "DELETE", path: "/v1/users/{user}/observations", access: tenant, body: true, serve: h.deleteObservations},
		{method: "GET", path: "/v1/users/{user}/graph", query: []string{"cursor", "limit"}, access: tenant, serve: h.readGraph},
		{method: "GET", path: "/v1/users/{user}/graph/search", query: []string{"q", "limit"}, access: tenant, serve: h.searchNodes},
		{method: "POST", path: "/v1/users/{user}/graph/open", access: tenant, body: true, serve: h.openNodes},
	}
	rs = append(rs, sharedRoutes(rs)...)
	rs = append(rs, []route{
		{method: "POST", path: "/v1/recall", access: tenant, body: true, serve: h.recall},
		{method: "POST", path: "/v1/admin/compact", access: tenant, serve: h.compact},
		{method: "POST", path: "/v1/admin/flush", access: tenant, serve: h.flush},
		{method: "GET", path: "/v1/admin/backup", access: admin, serve: h.backup},
		{method: "GET", path: "/v1/admin/export", query: []string{"format", "tenant", "user"}, access: admin, serve: h.export},
		{method: "GET", path: "/v1/admin/stats", query: []string{"tenant", "user"}, access: admin, serve: h.stats},
	}...)
	switch metricsAccess {
	case MetricsPublic:
		rs = append(rs, route{method: "GET", path: "/metrics", serve: h.serveMetrics})
	case MetricsToken:
		rs = append(rs, route{method: "GET", path: "/metrics", access: tenant, serve: h.serveMetrics})
	}
	if h.mcp != nil {
		// POST only: the stateless transport has no stream to GET or
		// session to DELETE, so those answer 405 with Allow: POST.
		rs = append(rs, route{method: "POST", path: "/mcp", access: tenant, serve: h.serveMCP})
	}
	return rs
}

// ServeHTTP serves the request with the route that matches it, or answers
// a JSON 404 (no such path) or 405 (the path exists, with other methods). A
// path with empty or dot segments is answered 400 unclean_path under /v1/
// and /mcp, and redirected to its clean form elsewhere. Under /v1/
// and /mcp a request needs a valid bearer token before any of that: without
// one the answer is 401 whatever the path, so an unknown or odd path tells
// an unauthenticated caller nothing.
//
// Exactly one handler runs for a request, and it writes the answer. The
// mux's choice is asked once: a route is served by the mux itself (which
// sets the path values), and anything else (the mux's redirect, 404 or 405)
// is answered by unmatched, which never runs a route. Before, an unclean
// decoded path (/v1/users/..%2Fevil/memories decodes to
// /v1/users/../evil/memories, while the mux matches the escaped path, which
// is clean) sent the request to unmatched, which ran the mux, and so the
// route, into a recorder, and then answered 404.
func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	hd, _ := h.mux.Handler(r)
	if _, ok := hd.(*routeHandler); ok {
		h.mux.ServeHTTP(w, r)
		return
	}
	h.unmatched(w, r, hd)
}

// protected reports whether a request's path is in the API's authenticated
// space, /v1/ or /mcp, in any spelling the mux could clean or redirect to
// it (dot segments, doubled slashes, escapes, case).
func protected(r *http.Request) bool {
	for _, p := range []string{r.URL.Path, r.URL.EscapedPath(), r.URL.RawPath} {
		if p == "" {
			continue
		}
		c := strings.ToLower(path.Clean("/" + p))
		if c == "/v1" || strings.HasPrefix(c, "/v1/") || c == "/mcp" || strings.HasPrefix(c, "/mcp/") {
			return true
		}
	}
	return false
}

// unmatched answers a request that no route serves: hd is the mux's own
// handler for it (a redirect to a clean path, a 405 with its Allow header,
// or a 404), never a route's. It runs hd into a recorder and answers in
// JSON, after authenticating a request under /v1/ or /mcp.
func (h *Handler) unmatched(w http.ResponseWriter, r *http.Request, hd http.Handler) {
	rt := route{method: r.Method, path: "unmatched"}
	h.instrument(rt, w, r, func(w http.ResponseWriter, r *http.Request) error {
		api := protected(r)
		if api {
			var ok bool
			if r, ok = h.authenticate(w, r); !ok {
				return nil
			}
		}
		rec := &headerRecorder{header: http.Header{}}
		hd.ServeHTTP(rec, r)
		switch {
		case rec.status >= 300 && rec.status < 400 && api:
			// An API client would follow the redirect with a body
			// dropped or a method changed, or to a path it did not
			// name (/v1/users/../sessions is /v1/sessions): it gets
			// the clean path to send itself, never a redirect.
			return &apiError{status: http.StatusBadRequest, code: "unclean_path",
				message: fmt.Sprintf("the path has empty or dot segments; send it as %s", quote(rec.header.Get("Location")))}
		case rec.status >= 300 && rec.status < 400:
			w.Header().Set("Location", rec.header.Get("Location"))
			w.WriteHeader(rec.status)
			return nil
		case rec.status == http.StatusMethodNotAllowed:
			w.Header().Set("Allow", rec.header.Get("Allow"))
			return &apiError{status: http.StatusMethodNotAllowed, code: "method_not_allowed",
				message: fmt.Sprintf("%s is not allowed here; allowed: %s", r.Method, rec.header.Get("Allow"))}
		}
		return &apiError{status: http.StatusNotFound, code: "not_found", message: "no such route: " + r.URL.Path}
	})
}

// headerRecorder keeps what the mux's own 404, 405 and redirect handlers
// write, minus the plain-text body.
type headerRecorder struct {
	header http.Header
	status int
}

func (r *headerRecorder) Header() http.Header { return r.header }
func (r *headerRecorder) WriteHeader(code int) {
	if r.status == 0 {
		r.status = code
	}
}
func (r *headerRecorder) Write(p []byte) (int, error) {
	r.WriteHeader(http.StatusOK)
	return len(p), nil
}

// routeHandler is the handler of one route, as registered in the mux: its
// own type, so that ServeHTTP can tell a route from the mux's 404, 405 and
// redirect handlers.
type routeHandler struct {
	h  *Handler
	rt route
}

// wrap builds the handler of a route: instrumentation and access logs,
// authentication, the body limit and content type, then the route.
func (h *Handler) wrap(rt route) *routeHandler { return &routeHandler{h: h, rt: rt} }

func (rh *routeHandler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h, rt := rh.h, rh.rt
	h.instrument(rt, w, r, func(w http.ResponseWriter, r *http.Request) error {
		if rt.access != public {
			var ok bool
			if r, ok = h.authenticate(w, r); !ok {
				return nil
			}
			if rt.access == admin && !isAdmin(r.Context()) {
				return errAdminRequired
			}
		}
		if err := unknownParameter(rt, r); err != nil {
			return err
		}
		if r.ContentLength > h.maxBody {
			return errBodyTooLarge(h.maxBody)
		}
		r.Body = http.MaxBytesReader(w, r.Body, h.maxBody)
		if rt.body {
			if ct := r.Header.Get("Content-Type"); ct != "" {
				if mt, _, err := mime.ParseMediaType(ct); err != nil || mt != "application/json" {
					return &apiError{status: http.StatusUnsupportedMediaType, code: "unsupported_media_type",
						message: fmt.Sprintf("the body must be application/json, not %s (curl: -H 'Content-Type: application/json', or --json)", quote(ct))}
				}
			}
		}
		r, err := withOwner(rt, r)
		if err != nil {
			return err
		}
		if rt.partition != nil {
			if part, ok := rt.partition(r); ok {
				local, err := h.router.Route(w, r, part)
				if err != nil || !local {
					return err // nil: the owner's answer is written
				}
			}
		}
		return rt.serve(w, r)
	})
}

type infoKey struct{}

// requestInfo is what the access log learns while a request is served.
type requestInfo struct {
	tenant, client string
	err            error // an internal error, logged but not answered
}

func infoFrom(ctx context.Context) *requestInfo {
	info, _ := ctx.Value(infoKey{}).(*requestInfo)
	return info
}

// instrument serves the request with serve, turning its error into the JSON
// error response and a panic into a 500, and records the request's latency
// and its access-log line.
func (h *Handler) instrument(rt route, w http.ResponseWriter, r *http.Request, serve func(http.ResponseWriter, *http.Request) error) {
	start := time.Now()
	info := &requestInfo{}
	r = r.WithContext(context.WithValue(r.Context(), infoKey{}, info))
	rw := &responseWriter{ResponseWriter: w}
	if rt.path != "/metrics" {
		h.metrics.inFlight.Inc()
		defer h.metrics.inFlight.Dec()
	}
	defer func() {
		// A streamed response cut on purpose (http.ErrAbortHandler) is
		// logged and counted, then the panic goes on to net/http, which
		// closes the connection.
		abort := false
		if p := recover(); p != nil && p == http.ErrAbortHandler {
			abort = true
		} else if p != nil {
			if rw.status == 0 {
				h.writeError(rw, r, &apiError{status: http.StatusInternalServerError, code: "internal", message: "internal error; see the server log"})
			}
			info.err = fmt.Errorf("panic: %v\n%s", p, debug.Stack())
		}
		if rw.status == 0 {
			rw.status = http.StatusOK // nothing written: net/http sends 200
		}
		d := time.Since(start)
		h.metrics.observe(rt, rw.status, d)
		h.logAccess(r, rt, rw, d, info)
		if abort {
			panic(http.ErrAbortHandler)
		}
	}()
	if err := serve(rw, r); err != nil {
		h.writeError(rw, r, err)
	}
}

func (h *Handler) logAccess(r *http.Request, rt route, rw *responseWriter, d time.Duration, info *requestInfo) {
	level := slog.LevelInfo
	if rw.status >= 500 {
		level = slog.LevelError
	}
	ctx := context.WithoutCancel(r.Context())
	if !h.log.Enabled(ctx, level) {
		return
	}
	attrs := []slog.Attr{
		slog.String("method", r.Method),
		slog.String("route", rt.path),
		slog.Int("status", rw.status),
		slog.Int64("bytes", rw.bytes),
		slog.Duration("duration", d),
		slog.String("remote", r.RemoteAddr),
	}
	if info.tenant != "" {
		attrs = append(attrs, slog.String("tenant", info.tenant))
	}
	if info.client != "" {
		attrs = append(attrs, slog.String("client", info.client))
	}
	if info.err != nil {
		attrs = append(attrs, slog.String("error", info.err.Error()))
	}
	h.log.LogAttrs(ctx, level, "http request", attrs...)
}

// responseWriter records the status and size of a response. It passes
// Flush through (and Unwrap, for http.ResponseController), so streaming
// handlers such as MCP's server-sent events work behind it.
type responseWriter struct {
	http.ResponseWriter
	status int
	bytes  int64
}

func (w *responseWriter) WriteHeader(code int) {
	if w.status == 0 {
		w.status = code
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *responseWriter) Write(p []byte) (int, error) {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	n, err := w.ResponseWriter.Write(p)
	w.bytes += int64(n)
	return n, err
}

func (w *responseWriter) Flush() {
	if w.status == 0 {
		w.status = http.StatusOK
	}
	if f, ok := w.ResponseWriter.(http.Flusher); ok {
		f.Flush()
	}
}

func (w *responseWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }

func (h *Handler) healthz(w http.ResponseWriter, r *http.Request) error {
	c := h.store.Cluster()
	if c == nil {
		writeJSON(w, http.StatusOK, map[string]string{"status": "ok"})
		return nil
	}
	status, body := h.clusterHealth(r.Context(), c)
	writeJSON(w, status, body)
	return nil
}

// unknownParameter returns a 400 for a query parameter the route does not
// take, on the routes under /v1/.
func unknownParameter(rt route, r *http.Request) error {
	if !strings.HasPrefix(rt.path, "/v1/") || r.URL.RawQuery == "" {
		return nil
	}
	for name := range r.URL.Query() {
		if !slices.Contains(rt.query, name) {
			takes := "none"
			if len(rt.query) > 0 {
				takes = strings.Join(rt.query, ", ")
			}
			return badRequest("invalid_parameter", "unknown query parameter %s; this route takes %s", quote(name), takes)
		}
	}
	return nil
}
