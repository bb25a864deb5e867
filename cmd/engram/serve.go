package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"runtime/debug"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/cmd/engram/internal/fileio"
	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/cmd/engram/internal/plural"
	"github.com/engramdb/engram/cmd/engram/internal/webui"
	"github.com/engramdb/engram/memory"
)

type serveOptions struct {
	dir             string
	addr            string
	tokens          string
	maxBodyBytes    int64
	shutdownTimeout time.Duration
	flushTimeout    time.Duration
	metrics         string
	logFormat       string
	durability      string
	singleValued    []string
	open            openFlags
	// memoryLimit is --memory-limit: the Go runtime's soft memory
	// limit; zero means the partition budget plus a headroom
	// (memlimit.go), unless $GOMEMLIMIT is set.
	memoryLimit    byteSize
	pg             postgresFlags
	nodeID         string
	advertise      string
	leaseTTL       time.Duration
	privacy        privacyFlags
	extract        extractFlags
	noUI           bool
	uiSecureCookie bool
	// uiHosts are --ui-host: the only Host headers served, on every
	// path; empty serves any.
	uiHosts []string
	// uiLocal makes the inspector answer only requests naming the
	// loopback address it listens on (engram ui): a DNS-rebinding page
	// reaches it under a name of its own.
	uiLocal bool

	// tokenSet, when set, is used instead of a tokens file (engram ui's
	// token for one run).
	tokenSet *httpapi.Tokens
	// ready, when set, is called with the address the server listens on
	// once it accepts connections (a test seam).
	ready func(net.Addr)
}

// serveMCP, when set, builds the MCP streamable HTTP handler that serve
// mounts at /mcp behind the API's bearer authentication; the handler reads
// each request's tenant with httpapi.Tenant. It is set by the file that
// implements `engram mcp`, so that serve does not depend on how.
var serveMCP func(store *memory.Store, logger *slog.Logger) (http.Handler, error)

// serveMCPScope, set with serveMCP, says whose memory an /mcp request
// works on, so that a node of a cluster routes it to the owner.
var serveMCPScope func(*http.Request) (memory.Scope, error)

func newServeCmd() *cobra.Command {
	o := serveOptions{}
	cmd := &cobra.Command{
		Use:   "serve --dir DIR [--tokens FILE] | serve --postgres DSN --tokens FILE",
		Short: "Serve a store over an HTTP JSON API (and MCP) with bearer tokens",
		Long: `serve opens the store in --dir and serves Engram's HTTP JSON API on --addr:
sessions and messages, windows, memories, facts and entities, recall with its
trace, and forget, under /v1/; /healthz; /metrics for Prometheus; the
OpenAPI document at /openapi.json; and the memory inspector, a web page to
see, search, correct and erase what the store holds, at /ui/ (sign in with a
token; --no-ui turns it off).

Every /v1/ call needs "Authorization: Bearer <token>". The tokens file maps
each token to exactly one tenant, and a token never reaches another tenant:

  {"tokens": [
    {"token": "<at least 16 characters; openssl rand -hex 32>", "tenant": "acme", "name": "ci"}
  ]}

serve refuses a tokens file that its group or other users can read or write
(chmod 600 it). Without --tokens, serve uses DIR/tokens.json, and on the first
run creates it (mode 0600) with one random token for tenant "default",
marked "admin": true (the operator's own: it may also call the store-wide
admin routes, GET /v1/admin/backup, /export and /stats, that engram backup,
export and inspect --url use; other tokens need "admin": true for them); it
says on stderr where the file is (read the token with
jq -r '.tokens[0].token' DIR/tokens.json). Access logs (one line per request, never a token) go to
stderr. On SIGINT or SIGTERM serve stops accepting connections, lets the
requests in flight finish (up to --shutdown-timeout), then closes the store.

The store forms memories, entities and facts from the messages it is given
(--extract async, the default: an append returns before; POST
/v1/admin/flush waits for it, up to --flush-timeout), with the offline rule extractor, or with a
chat model over an OpenAI-compatible API (--extract-model,
--extract-base-url; the key from the variable --extract-api-key-env names).
engram inspect shows the extraction queue and the jobs parked after failing.

With --postgres DSN (or $ENGRAM_POSTGRES, which keeps a password out of ps)
instead of --dir, the store lives in a PostgreSQL database, and any number of
serve processes (nodes) may share it: each (tenant, user) partition is served
by one node at a time, the holder of its lease, and a node forwards the
requests of partitions it does not own to their owner (--advertise names
where others reach this node). Every node needs the same --tokens file. When a
node dies its leases lapse after --lease-ttl and other nodes take its
partitions over. See docs/cluster.md.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runServe(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.dir, "dir", "", "the store's directory (created if missing; this or --postgres is required)")
	o.pg.register(f)
	f.StringVar(&o.nodeID, "node-id", "", "with --postgres: this node's name in the lease and heartbeat tables, unique among the nodes (default: host name, process id and a random suffix)")
	f.StringVar(&o.advertise, "advertise", "", "with --postgres: host:port other nodes forward requests to (default: the bound --addr; required when it is a wildcard such as :7437 or 0.0.0.0)")
	f.DurationVar(&o.leaseTTL, "lease-ttl", 10*time.Second, "with --postgres: how long a partition lease and a node's heartbeat last unless renewed (every third of it); a dead node's partitions move after at most this")
	f.StringVar(&o.addr, "addr", "127.0.0.1:7437", `address to listen on; ":0" picks a free port and prints it`)
	f.StringVar(&o.tokens, "tokens", "", "the tokens file: JSON mapping bearer tokens to tenants (mode 0600); default: DIR/"+defaultTokensFile+", created on the first run with a token for tenant "+defaultTokensTenant)
	o.open.register(f, true)
	f.Var(&o.memoryLimit, "memory-limit",
		"soft limit of the process's Go memory (the collector works harder near it), such as 1GiB. 0: the partition cache plus 768MiB; $GOMEMLIMIT, when set, is used instead (GOMEMLIMIT=off: none)")
	o.privacy.register(f)
	o.extract.register(f)
	f.Int64Var(&o.maxBodyBytes, "max-body-bytes", httpapi.DefaultMaxBodyBytes, "largest request body; larger ones get 413")
	f.DurationVar(&o.shutdownTimeout, "shutdown-timeout", 30*time.Second, "how long shutdown waits for requests in flight")
	f.DurationVar(&o.flushTimeout, "flush-timeout", httpapi.DefaultFlushTimeout, "how long POST /v1/admin/flush waits for extraction before answering 503 extraction_pending with the count still queued")
	f.StringVar(&o.metrics, "metrics", "public", "who may read /metrics: public, token (any valid token) or off")
	f.StringVar(&o.logFormat, "log-format", "text", "access log format on stderr: text or json")
	f.StringVar(&o.durability, "durability", "sync", "sync (a write survives power loss once acknowledged) or async")
	f.StringSliceVar(&o.singleValued, "single-valued", nil, "graph predicates that hold one object per subject at a time (comma-separated)")
	f.BoolVar(&o.noUI, "no-ui", false, "do not serve the memory inspector at /ui/")
	f.BoolVar(&o.uiSecureCookie, "ui-secure-cookie", false, "mark the inspector's session cookie Secure (HTTPS only): for a server behind an HTTPS reverse proxy")
	f.StringSliceVar(&o.uiHosts, "ui-host", nil, "the host names the server answers, as host or host:port (repeat or comma-separate); others get 421 on every path, which stops a DNS-rebinding page from reading the inspector, /metrics, /healthz and /openapi.json. Default: any host")
	return cmd
}

// runServe serves until ctx is done, then shuts down gracefully. It returns
// nil after a clean shutdown, and an error when the server cannot start,
// fails, or requests were still running at the shutdown timeout.
func runServe(ctx context.Context, stdout, stderr io.Writer, o serveOptions) (err error) {
	if err := o.validate(); err != nil {
		return err
	}
	metricsAccess, err := httpapi.ParseMetricsAccess(o.metrics)
	if err != nil {
		return fmt.Errorf("--metrics: %w", err)
	}
	dsn, _ := o.pg.dsn(o.dir) // validate checked it
	newLogHandler := func(level slog.Level) slog.Handler {
		if o.logFormat == "json" {
			return slog.NewJSONHandler(stderr, &slog.HandlerOptions{Level: level})
		}
		return slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level})
	}
	logHandler := newLogHandler(slog.LevelInfo)
	logger := slog.New(logHandler)

	// The storage layer logs compaction details at info level, dozens of
	// lines on every close; only its warnings belong among access logs.
	storeOpts := &memory.Options{Logger: slog.New(newLogHandler(slog.LevelWarn)), SingleValued: o.singleValued}
	if o.durability == "async" {
		storeOpts.Durability = memory.Async
	}
	if err := o.open.apply(storeOpts); err != nil {
		return err
	}
	o.privacy.apply(storeOpts)
	if err := o.extract.apply(storeOpts); err != nil {
		return err
	}
	// Without a limit the collector lets the heap grow to twice what is
	// live, past the partition budget the operator chose. A process that
	// runs serve in it (bench load, tests) gets its own limit back after.
	defer debug.SetMemoryLimit(debug.SetMemoryLimit(-1))
	setMemoryLimit(o.memoryLimit, storeOpts.PartitionCacheBytes, os.Getenv)

	// Listen before opening the store: with PostgreSQL the address other
	// nodes forward to is part of this node's heartbeat.
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		return err
	}
	defer ln.Close() // a second Close after Serve's is harmless
	// Only now, every flag checked and the address bound, may the
	// default tokens file be written: a typo leaves nothing behind.
	tokens, err := o.loadTokens(stderr)
	if err != nil {
		return err
	}
	where := o.dir
	var store *memory.Store
	if dsn != "" {
		advertise, err := advertiseAddr(o.advertise, ln.Addr())
		if err != nil {
			return err
		}
		where = o.pg.where()
		storeOpts.Postgres = &memory.PostgresOptions{
			DSN: dsn, Schema: o.pg.schema, Node: o.nodeID, Addr: advertise, LeaseTTL: o.leaseTTL,
			// Leases are taken by the router (cluster.Router), before
			// a partition's request is served here.
			ExplicitLeases: true,
		}
		if store, err = memory.Open("", storeOpts); err != nil {
			return o.pg.openError(err)
		}
	} else if store, err = memory.Open(o.dir, storeOpts); err != nil {
		return openError(o.dir, err)
	}
	defer func() {
		if cerr := store.Close(); cerr != nil {
			err = errors.Join(err, fmt.Errorf("close store: %w", cerr))
		}
	}()

	apiOpts := &httpapi.Options{
		Tokens:       tokens,
		MaxBodyBytes: o.maxBodyBytes,
		Logger:       logger,
		Metrics:      metricsAccess,
		FlushTimeout: o.flushTimeout,
		Where:        where,
	}
	if serveMCP != nil {
		if apiOpts.MCP, err = serveMCP(store, logger); err != nil {
			return fmt.Errorf("mcp: %w", err)
		}
		apiOpts.MCPScope = serveMCPScope
	}
	if c := store.Cluster(); c != nil {
		router := cluster.New(c, &cluster.Options{Logger: logger})
		defer router.Close()
		apiOpts.Router = router
	}
	api, err := httpapi.New(store, apiOpts)
	if err != nil {
		return err
	}
	handler, err := o.withUI(api, tokens, logger, store.Cluster(), ln.Addr())
	if err != nil {
		return err
	}

	srv := &http.Server{
		Handler: handler,
		// Bounds a client that opens a connection and sends headers
		// slowly; bodies are bounded by --max-body-bytes. No write
		// timeout: MCP streams server-sent events for as long as a
		// session lasts.
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          slog.NewLogLogger(logHandler, slog.LevelWarn),
	}
	served := make(chan error, 1)
	// net/http's own 431, 400 and 501 answers come in the API's JSON shape.
	go func() { served <- srv.Serve(httpapi.Listener(ln)) }()

	if c := store.Cluster(); c != nil {
		where += ", node " + c.Node() + ", advertised " + c.Addr()
	}
	fmt.Fprintf(stdout, "engram: serving http://%s (store %s; %s, %s)\n",
		ln.Addr(), where, plural.Count(tokens.Len(), "token"), plural.Count(len(tokens.Tenants()), "tenant"))
	o.printEndpoints(stdout, ln.Addr(), apiOpts.MCP != nil)
	if o.ready != nil {
		o.ready(ln.Addr())
	}

	select {
	case err := <-served:
		// Serve returns only on a listener failure before any shutdown.
		return fmt.Errorf("serve: %w", err)
	case <-ctx.Done():
	}
	logger.Info("shutting down: no new connections; waiting for requests in flight", "timeout", o.shutdownTimeout)
	sctx, cancel := context.WithTimeout(context.Background(), o.shutdownTimeout)
	defer cancel()
	shutdownErr := srv.Shutdown(sctx)
	<-served // http.ErrServerClosed
	if shutdownErr != nil {
		// Cut what is left, so nothing uses the store after it closes.
		srv.Close()
		return fmt.Errorf("shutdown: requests still running after %s were cut off: %w", o.shutdownTimeout, shutdownErr)
	}
	fmt.Fprintln(stdout, "engram: stopped")
	return nil
}

// printEndpoints says where each endpoint is, as full URLs on the
// address the server listens on, and which ones are off.
func (o *serveOptions) printEndpoints(w io.Writer, addr net.Addr, mcp bool) {
	if o.uiLocal {
		return // engram ui prints its own lines
	}
	base := "http://" + addr.String()
	ui := base + "/ui/ (sign in with a token)"
	if o.noUI {
		ui = "off (--no-ui)"
	}
	mcpURL := base + "/mcp (streamable HTTP; bearer token)"
	if !mcp {
		mcpURL = "off (not built in)"
	}
	metrics := base + "/metrics"
	switch o.metrics {
	case "off":
		metrics = "off (--metrics off)"
	case "token":
		metrics += " (bearer token)"
	}
	for _, e := range [][2]string{
		{"API", base + "/v1/ (bearer token)"},
		{"UI", ui},
		{"MCP", mcpURL},
		{"metrics", metrics},
		{"health", base + "/healthz"},
		{"OpenAPI", base + "/openapi.json"},
	} {
		fmt.Fprintf(w, "engram:   %-8s %s\n", e[0], e[1])
	}
}

// loadTokens returns the tokens the options set (engram ui's), or those of
// --tokens, or of the default tokens file, made on the first run.
func (o *serveOptions) loadTokens(stderr io.Writer) (*httpapi.Tokens, error) {
	if o.tokenSet != nil {
		return o.tokenSet, nil
	}
	path := o.tokens
	if path == "" {
		var err error
		if path, err = defaultTokens(o.dir, stderr); err != nil {
			return nil, err
		}
	}
	return httpapi.LoadTokens(path)
}

// withUI returns the inspector in front of api, or api alone with
// --no-ui. The inspector answers only the --ui-host names (and, on a
// cluster, the advertised address other nodes forward to), or for engram
// ui the loopback names of addr.
func (o *serveOptions) withUI(api http.Handler, tokens *httpapi.Tokens, logger *slog.Logger, c *memory.Cluster, addr net.Addr) (http.Handler, error) {
	if o.noUI {
		return api, nil
	}
	uiOpts := &webui.Options{Logger: logger, SecureCookie: o.uiSecureCookie, Hosts: o.uiHosts}
	if len(o.uiHosts) > 0 && c != nil {
		uiOpts.Hosts = append(slices.Clip(uiOpts.Hosts), c.Addr())
	}
	if o.uiLocal {
		uiOpts.Hosts = loopbackHosts(addr)
	}
	return webui.New(api, tokens, uiOpts)
}

// validateUIHosts reports what is wrong with --ui-host.
func (o *serveOptions) validateUIHosts() []error {
	var errs []error
	if o.noUI && len(o.uiHosts) > 0 {
		errs = append(errs, errors.New("--ui-host needs the inspector: it is checked in front of it; drop --no-ui"))
	}
	for _, h := range o.uiHosts {
		if h == "" || strings.ContainsAny(h, "/ \t") {
			errs = append(errs, fmt.Errorf("--ui-host %q is not a host name or host:port", h))
		}
	}
	return errs
}

func (o *serveOptions) validate() error {
	var errs []error
	dsn, err := o.pg.dsn(o.dir)
	switch {
	case errors.Is(err, errNoStore):
		errs = append(errs, errors.New("--dir is required (or --postgres DSN, or $"+postgresEnv+")"))
	case err != nil:
		errs = append(errs, err)
	}
	if dsn != "" {
		if o.tokens == "" {
			errs = append(errs, errors.New("--postgres needs --tokens: there is no store directory to keep a generated tokens file in (every node needs the same file)"))
		}
		if o.leaseTTL < time.Second {
			errs = append(errs, fmt.Errorf("--lease-ttl %s is shorter than a second", o.leaseTTL))
		}
		if o.advertise != "" {
			if _, err := advertiseAddr(o.advertise, nil); err != nil {
				errs = append(errs, err)
			}
		}
	} else if err == nil && o.pg.fs != nil {
		for _, name := range []string{"node-id", "advertise", "lease-ttl"} {
			if o.pg.fs.Changed(name) {
				errs = append(errs, fmt.Errorf("--%s needs --postgres", name))
			}
		}
	}
	errs = append(errs, o.validateUIHosts()...)
	errs = append(errs, o.privacy.validate()...)
	if o.maxBodyBytes <= 0 {
		errs = append(errs, fmt.Errorf("--max-body-bytes %d is not positive", o.maxBodyBytes))
	}
	if o.flushTimeout < 0 {
		errs = append(errs, fmt.Errorf("--flush-timeout %s is negative", o.flushTimeout))
	}
	if o.shutdownTimeout <= 0 {
		errs = append(errs, fmt.Errorf("--shutdown-timeout %s is not positive", o.shutdownTimeout))
	}
	if o.logFormat != "text" && o.logFormat != "json" {
		errs = append(errs, fmt.Errorf("--log-format %q is not text or json", o.logFormat))
	}
	if o.durability != "sync" && o.durability != "async" {
		errs = append(errs, fmt.Errorf("--durability %q is not sync or async", o.durability))
	}
	return errors.Join(errs...)
}

// defaultTokensFile is the tokens file serve creates in the store
// directory, and reads there on later runs, when --tokens is not given.
const defaultTokensFile = "tokens.json"

// defaultTokensTenant is the tenant of the token serve generates.
const defaultTokensTenant = "default"

// defaultTokens returns the path of the store's own tokens file, creating
// it on the first run: one random 256-bit token for tenant "default", mode
// 0600. It says on stderr where the file is (never the token: stderr often
// ends up in logs). A run that finds the file reuses it as it is; LoadTokens
// then checks it like any tokens file.
func defaultTokens(dir string, stderr io.Writer) (string, error) {
	path := filepath.Join(dir, defaultTokensFile)
	if _, err := os.Lstat(path); err == nil {
		fmt.Fprintf(stderr, "engram: no --tokens: using %s\n", path)
		return path, nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("create the store directory: %w", err)
	}
	// The operator's own token: admin, so that engram backup, export and
	// inspect --url work with it at once.
	_, data, err := newTokensFile(defaultTokensTenant, "generated by engram serve", adminToken)
	if err != nil {
		return "", err
	}
	err = fileio.WriteNewPrivate(path, func(w io.Writer) error {
		_, err := w.Write(append(data, '\n'))
		return err
	})
	switch {
	case errors.Is(err, fs.ErrExist):
		// Another serve created it first (it then holds the store, and
		// this one fails to open it); the file is as good.
		fmt.Fprintf(stderr, "engram: no --tokens: using %s\n", path)
		return path, nil
	case err != nil:
		return "", fmt.Errorf("create the tokens file %s: %w", path, err)
	}
	fmt.Fprintf(stderr, "engram: no --tokens: created %s (mode 0600) with a token for tenant %q; "+
		"send it as Authorization: Bearer <token>, e.g. with jq -r '.tokens[0].token' %s\n", path, defaultTokensTenant, path)
	return path, nil
}

// advertiseAddr returns the address other nodes forward requests to:
// flag when given (host:port, a host that is not a wildcard and a port
// that is not 0), else bound when its host is not a wildcard.
func advertiseAddr(flag string, bound net.Addr) (string, error) {
	if flag != "" {
		host, port, err := net.SplitHostPort(flag)
		if err != nil {
			return "", fmt.Errorf("--advertise %q: %w (want host:port)", flag, err)
		}
		if host == "" || isWildcard(host) || port == "" || port == "0" {
			return "", fmt.Errorf("--advertise %q: want the host:port other nodes reach this one at, not a wildcard or port 0", flag)
		}
		return flag, nil
	}
	if bound == nil {
		return "", nil
	}
	host, _, err := net.SplitHostPort(bound.String())
	if err != nil || isWildcard(host) {
		return "", fmt.Errorf("--advertise is required with --postgres when --addr (%s) listens on every interface: name the host:port other nodes reach this one at", bound)
	}
	return bound.String(), nil
}

// isWildcard reports whether host is an unspecified address (every
// interface): other nodes cannot forward to it.
func isWildcard(host string) bool {
	if host == "" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsUnspecified()
}

// tokenRole says whether a generated token may call the admin routes.
type tokenRole int

const (
	tenantToken tokenRole = iota // its tenant's routes only
	adminToken                   // and the store-wide admin routes
)

// newTokensFile makes a random 256-bit token for tenant and returns it
// with a tokens file (see httpapi.Tokens) that holds it alone, marked
// admin for adminToken.
func newTokensFile(tenant, name string, role tokenRole) (token string, data []byte, err error) {
	var secret [32]byte
	if _, err := rand.Read(secret[:]); err != nil {
		return "", nil, fmt.Errorf("generate a token: %w", err)
	}
	token = hex.EncodeToString(secret[:])
	type entry struct {
		Token  string `json:"token"`
		Tenant string `json:"tenant"`
		Name   string `json:"name"`
		Admin  bool   `json:"admin,omitempty"`
	}
	var file struct {
		Tokens []entry `json:"tokens"`
	}
	file.Tokens = []entry{{Token: token, Tenant: tenant, Name: name, Admin: role == adminToken}}
	data, err = json.MarshalIndent(file, "", "  ")
	return token, data, err
}
