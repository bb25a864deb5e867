package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"

	"github.com/spf13/cobra"

	"github.com/engramdb/engram/cmd/engram/internal/httpapi"
	"github.com/engramdb/engram/cmd/engram/internal/mcpserver"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/memory"
)

// engram serve mounts the same tools at /mcp, over streamable HTTP: the
// tenant of each request is its bearer token's, the user and session come
// from the X-Engram-User and X-Engram-Session headers ("default" when
// absent).
func init() {
	scope := mcpserver.ScopeFromHeaders(func(r *http.Request) string {
		return httpapi.Tenant(r.Context())
	})
	serveMCP = func(store *memory.Store, _ *slog.Logger) (http.Handler, error) {
		return mcpserver.NewHTTPHandler(store, scope), nil
	}
	serveMCPScope = scope
}

type mcpOptions struct {
	dir, tenant, user, session string
	// shared works on the tenant's shared memory (no user, no session).
	shared bool
	// dirGiven says --dir was given, perhaps empty.
	dirGiven bool
	pg       postgresFlags
	open     openFlags
	privacy  privacyFlags
	extract  extractFlags
}

func newMCPCmd() *cobra.Command {
	var o mcpOptions
	cmd := &cobra.Command{
		Use:   "mcp",
		Short: "Serve the store to an MCP client over stdio",
		Long: `mcp serves the store in --dir to one MCP client over stdin and stdout, as a
desktop client (Claude Desktop, an IDE) starts it. It offers the official
memory server's nine knowledge-graph tools (create_entities, read_graph,
search_nodes, ...), with the same arguments and results, so clients written
for that server work unchanged; and Engram's own: remember, recall,
append_message, get_window and forget.

Every call reads and writes the memory of one scope: --tenant, --user and
--session (each "default" unless given). The knowledge graph and memories
belong to the user; the conversation window to the session.

A tenant also has a shared memory and a shared knowledge graph, which every
user and agent of the tenant may reach. remember and recall take shared:
true to store in it and to draw on it. With --shared (instead of --user and
--session) the whole connection is the tenant's shared memory: the nine
graph tools work on the shared graph (their arguments stay the reference
server's) and remember stores shared memories; the tools that need a user
(recall, append_message, get_window, forget) refuse. Register a second
server with --shared next to your own to give an agent both graphs.

One process opens a directory at a time. To share a store between clients,
serve it with engram serve, which offers the same tools at /mcp over
streamable HTTP: the tenant is the bearer token's, the user and session come
from the X-Engram-User and X-Engram-Session headers ("default" when absent),
and X-Engram-Shared: true makes a request the tenant's shared memory, as
--shared does.

With --postgres DSN (or $ENGRAM_POSTGRES) instead of --dir the store is in
PostgreSQL: a write takes its partition's lease when no engram serve node
holds it, and is refused while one does (serve the tools from there, at
/mcp).

Messages appended (append_message) become memories, entities and facts in
the background (--extract async, the default), by the offline rule
extractor or a chat model (--extract-model, --extract-base-url).

Register it in Claude Desktop's claude_desktop_config.json with the binary's
absolute path (desktop clients do not read your shell's PATH; go install
puts it at $(go env GOPATH)/bin/engram, /Users/me/go/bin/engram here):

  {
    "mcpServers": {
      "engram": {
        "command": "/Users/me/go/bin/engram",
        "args": ["mcp", "--dir", "/Users/me/.engram", "--user", "me"]
      }
    }
  }`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			o.dirGiven = cmd.Flags().Changed("dir")
			if o.shared && (cmd.Flags().Changed("user") || cmd.Flags().Changed("session")) {
				return errors.New("mcp: --shared works on the tenant's shared memory, which has no user or session: leave --user and --session out")
			}
			return runMCP(cmd.Context(), o, cmd.InOrStdin(), cmd.OutOrStdout())
		},
	}
	cmd.Flags().StringVar(&o.dir, "dir", "", "the store's directory, created if needed (this or --postgres is required)")
	o.pg.register(cmd.Flags())
	cmd.Flags().StringVar(&o.tenant, "tenant", mcpserver.DefaultTenant, "the tenant every call works in")
	cmd.Flags().StringVar(&o.user, "user", mcpserver.DefaultUser, "the user whose memories and knowledge graph the tools read and write")
	cmd.Flags().StringVar(&o.session, "session", mcpserver.DefaultSession, "the conversation append_message, get_window, recall and forget work on")
	cmd.Flags().BoolVar(&o.shared, "shared", false, "work on the tenant's shared memory and knowledge graph instead of a user's (not with --user or --session)")
	o.open.register(cmd.Flags(), true)
	o.privacy.register(cmd.Flags())
	o.extract.register(cmd.Flags())
	return cmd
}

// scope returns the scope of every call: the tenant's shared memory with
// --shared, else the user's session.
func (o mcpOptions) scope() (memory.Scope, error) {
	if o.shared {
		scope := memory.Scope{Tenant: o.tenant}
		if err := scope.Validate(engine.LevelTenant); err != nil {
			return memory.Scope{}, fmt.Errorf("mcp: --tenant: %w", err)
		}
		return scope, nil
	}
	scope := memory.Scope{Tenant: o.tenant, User: o.user, Session: o.session}
	if err := scope.Validate(engine.LevelSession); err != nil {
		return memory.Scope{}, fmt.Errorf("mcp: --tenant, --user, --session: %w", err)
	}
	return scope, nil
}

// runMCP serves one MCP client on in and out until the client closes in
// or ctx ends (SIGINT, SIGTERM), then closes the store.
func runMCP(ctx context.Context, o mcpOptions, in io.Reader, out io.Writer) (err error) {
	if o.dirGiven && o.dir == "" {
		return errors.New("mcp: --dir is empty: name the store's directory")
	}
	dsn, err := o.pg.dsn(o.dir)
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	scope, err := o.scope()
	if err != nil {
		return err
	}
	if err := errors.Join(o.privacy.validate()...); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	var opts memory.Options
	if err := o.open.apply(&opts); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	o.privacy.apply(&opts)
	if err := o.extract.apply(&opts); err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	where := o.dir
	var store *memory.Store
	if dsn != "" {
		// One client, one process: a write takes its partition's lease
		// when no other live node (an engram serve) holds it.
		where = o.pg.where()
		opts.Postgres = &memory.PostgresOptions{DSN: dsn, Schema: o.pg.schema}
		if store, err = memory.Open("", &opts); err != nil {
			return fmt.Errorf("mcp: %w", o.pg.openError(err))
		}
	} else if store, err = memory.Open(o.dir, &opts); err != nil {
		return fmt.Errorf("mcp: %w", openError(o.dir, err))
	}
	defer func() {
		if cerr := store.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("mcp: close %s: %w", where, cerr)
		}
	}()
	srv := mcpserver.NewServer(store, func(context.Context) (memory.Scope, error) { return scope, nil })
	// Stdout carries the protocol and nothing else; the store is silent.
	// A bad input line is answered with a JSON-RPC error, not the end.
	err = srv.Run(ctx, mcpserver.NewStdioTransport(in, out))
	if err != nil && ctx.Err() != nil {
		return nil // asked to stop: a clean shutdown
	}
	if err != nil {
		return fmt.Errorf("mcp: %w", err)
	}
	return nil
}
