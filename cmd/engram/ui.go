package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/memory"
)

type uiOptions struct {
	serve  serveOptions
	tenant string
}

func newUICmd() *cobra.Command {
	o := uiOptions{serve: serveOptions{
		maxBodyBytes: httpapi.DefaultMaxBodyBytes, shutdownTimeout: 10 * time.Second,
		metrics: "off", logFormat: "text", durability: "sync",
	}}
	cmd := &cobra.Command{
		Use:   "ui --dir DIR [--tenant T] [--addr 127.0.0.1:0]",
		Short: "Open a store's memory inspector in the browser, on this machine only",
		Long: `ui opens the store in --dir, serves the memory inspector on a loopback
address and prints its URL and a token to sign in with. The page shows the
tenant's users and sessions, the messages and the window the next model call
would see, the memories (search, edit, add, delete), the knowledge graph and
an entity's facts through time, and a Recall with its trace.

The token is made for this run and is never written anywhere: it is printed
here, not put in the URL, and it stops working when ui stops. --tenant picks
the tenant shown (default: the store's only tenant, or "default" in a store
with no data yet). ui never creates a store: a missing or empty --dir is
refused (no store in DIR). It takes no --redact or --retain-*, which change
what a store keeps: give them to serve or mcp. Extraction is off, as in
every command that administers a store.
ui listens on loopback only; to share the inspector, run engram serve
with a tokens file instead, which serves it at /ui/ too.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return runUI(cmd.Context(), cmd.OutOrStdout(), cmd.ErrOrStderr(), o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.serve.dir, "dir", "", "the store's directory (required)")
	f.StringVar(&o.serve.addr, "addr", "127.0.0.1:0", "loopback address to listen on; port 0 picks a free one")
	f.StringVar(&o.tenant, "tenant", "", "the tenant to inspect (default: the store's only tenant, or \"default\")")
	o.serve.open.register(f, true)
	// No --redact or --retain-*: they change what the store keeps, which
	// ui, a look at a store, must not; a user who passes one is told so
	// rather than left believing it took effect.
	cmd.SetFlagErrorFunc(uiFlagError)
	return cmd
}

// uiFlagError explains the unknown-flag error of the flags serve and mcp
// take and ui does not: those that change what the store keeps.
func uiFlagError(_ *cobra.Command, err error) error {
	for _, name := range []string{"redact", "retain-messages", "retain-episodes", "retain-memories"} {
		if strings.Contains(err.Error(), "--"+name) {
			return fmt.Errorf("%w: ui does not take --%s: it changes what the store keeps, and ui only looks at a store and corrects it by hand; give it to engram serve or engram mcp", err, name)
		}
	}
	return err
}

// runUI serves the inspector over the store for one local user until ctx
// is done.
func runUI(ctx context.Context, stdout, stderr io.Writer, o uiOptions) error {
	if o.serve.dir == "" {
		return errors.New("--dir is required")
	}
	if err := loopbackAddr(o.serve.addr); err != nil {
		return err
	}
	// The flags first, then the store, which must exist: ui shows a
	// store, it does not make one for a mistyped --dir.
	if err := o.serve.open.apply(&memory.Options{}); err != nil {
		return err
	}
	if err := storeExists(o.serve.dir); err != nil {
		return err
	}
	if o.tenant == "" {
		t, err := onlyTenant(ctx, o.serve)
		if err != nil {
			return err
		}
		o.tenant = t
	}
	token, doc, err := newTokensFile(o.tenant, "engram ui", tenantToken)
	if err != nil {
		return err
	}
	tokens, err := httpapi.ParseTokens(doc) // checks the tenant id
	if err != nil {
		return fmt.Errorf("--tenant %q: %w", o.tenant, err)
	}
	o.serve.tokenSet = tokens
	o.serve.uiLocal = true
	// Like every command that administers a store, ui never runs an
	// extractor (perhaps a paid one) as a side effect: what is queued
	// stays queued for the next serve or mcp.
	o.serve.extract = extractFlags{mode: "off"}
	ready := o.serve.ready
	o.serve.ready = func(a net.Addr) {
		fmt.Fprintf(stdout, "engram: memory inspector for tenant %q: http://%s/ui/\n", o.tenant, a)
		fmt.Fprintf(stdout, "engram: sign in with this token (it works until ui stops): %s\n", token)
		if ready != nil {
			ready(a)
		}
	}
	return runServe(ctx, stdout, stderr, o.serve)
}

// loopbackAddr refuses an address other machines could reach.
func loopbackAddr(addr string) error {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("--addr %q: %w", addr, err)
	}
	if host == "localhost" {
		return nil
	}
	if ip := net.ParseIP(host); ip == nil || !ip.IsLoopback() {
		return fmt.Errorf("--addr %q: ui listens on loopback only (127.0.0.1 or ::1); use engram serve with a tokens file to share the inspector", addr)
	}
	return nil
}

// onlyTenant returns the store's tenant when it has one, "default" when it
// has none (a store with no data yet), and an error naming them when it
// has several.
func onlyTenant(ctx context.Context, o serveOptions) (string, error) {
	opts := &memory.Options{}
	if err := o.open.apply(opts); err != nil {
		return "", err
	}
	st, err := memory.Open(o.dir, opts)
	if err != nil {
		return "", openError(o.dir, err)
	}
	defer st.Close()
	t, err := soleTenant(ctx, st)
	if err == nil && t == "" {
		t = defaultTokensTenant
	}
	return t, err
}

// soleTenant returns the store's tenant when it has exactly one, "" when
// it has none, and an error naming them when it has several.
func soleTenant(ctx context.Context, st *memory.Store) (string, error) {
	ts, err := st.Tenants(ctx, memory.ListOptions{Limit: 6})
	switch {
	case err != nil:
		return "", err
	case len(ts) == 0:
		return "", nil
	case len(ts) == 1:
		return ts[0], nil
	}
	return "", fmt.Errorf("the store holds several tenants (%v...): choose one with --tenant", ts)
}

// loopbackHosts are the Host headers a browser sends for addr, a loopback
// listener: its address as bound, and "localhost" with its port.
func loopbackHosts(addr net.Addr) []string {
	_, port, err := net.SplitHostPort(addr.String())
	if err != nil {
		return []string{addr.String()}
	}
	return []string{addr.String(), net.JoinHostPort("localhost", port), net.JoinHostPort("127.0.0.1", port), net.JoinHostPort("::1", port)}
}
