// Package mcpserver serves an Engram store to MCP clients, with the
// official Go SDK (github.com/modelcontextprotocol/go-sdk): over stdio for
// engram mcp, and over streamable HTTP at /mcp for engram serve.
//
// It exports two constructors, [NewServer] and [NewHTTPHandler], and
// [ScopeFromHeaders] for the HTTP scope.
//
// # Basics
//
//	store, _ := memory.Open(dir, nil)
//	scope := memory.Scope{Tenant: "default", User: "me", Session: "default"}
//	srv := mcpserver.NewServer(store, func(context.Context) (memory.Scope, error) { return scope, nil })
//	err := srv.Run(ctx, &mcp.StdioTransport{})
//
//	// engram serve, behind its bearer-token authentication:
//	mux.Handle("/mcp", mcpserver.NewHTTPHandler(store, mcpserver.ScopeFromHeaders(
//		func(r *http.Request) string { return httpapi.Tenant(r.Context()) })))
//
// Every tool call works on one [memory.Scope]: the tenant, the user (whose
// knowledge graph and memories the tools read and write) and the session
// (the conversation of append_message, get_window, recall's window and
// forget), or the tenant alone for its shared memory (below). Over stdio it comes from engram mcp's flags --tenant, --user and
// --session, each "default" when left out. Over HTTP it is chosen for every
// request: the tenant from the bearer token (never from the client), the
// user from the X-Engram-User header and the session from X-Engram-Session,
// each "default" when the header is absent (see [ScopeFromHeaders]).
//
//	client ──stdio──▶ engram mcp --dir D --tenant T --user U --session S ──▶ Store
//	client ──HTTP───▶ /mcp (token → tenant; X-Engram-User, X-Engram-Session) ──▶ Store
//
// # Shared memory
//
// A tenant also has a shared memory and a shared knowledge graph (the
// memory package's scopes with no user), which every user and agent of
// the tenant may reach; over HTTP they are under /v1/shared/. An agent
// reaches them two ways:
//
//   - remember and recall take shared: true. remember then stores in the
//     tenant's shared memories instead of the user's; recall also draws
//     on them (shared is added to sources, or to the default sources).
//     A default recall never does.
//   - A connection to the shared memory: engram mcp --shared (instead of
//     --user and --session), or X-Engram-Shared: true on an /mcp request
//     (without X-Engram-User and X-Engram-Session). Its scope is the
//     tenant's alone: the nine graph tools work on the shared graph, so
//     their schemas stay the reference's, and remember stores shared
//     memories. The tools that need a user (recall, append_message,
//     get_window, forget) refuse with a tool error. Register it as a
//     second server next to the user's own to give an agent both graphs.
//
// forget takes no shared argument: it erases the current session or user,
// and erasing a scope with no user would erase the whole tenant. Shared
// memories and entities are erased one by one (DELETE
// /v1/shared/memories/{id}; delete_entities on a shared connection).
//
// # Tools
//
// The official memory server's nine, with its names, input schemas,
// annotations and results: the same text content (the result as
// JSON.stringify(result, null, 2) writes it) and the same structured
// content.
//
//	create_entities     {entities: [{name, entityType, observations: [string]}]}
//	                    → {entities: [the ones created]}
//	create_relations    {relations: [{from, to, relationType}]} → {relations: [the ones created]}
//	add_observations    {observations: [{entityName, contents: [string]}]}
//	                    → {results: [{entityName, addedObservations}]}
//	delete_entities     {entityNames: [string]}                     → {success, message}
//	delete_observations {deletions: [{entityName, observations: [string]}]} → {success, message}
//	delete_relations    {relations: [{from, to, relationType}]}     → {success, message}
//	read_graph          {cursor?, limit?}                           → {entities, relations, nextCursor?}
//	search_nodes        {query}                                     → {entities, relations}
//	open_nodes          {names: [string]}                           → {entities, relations}
//
// read_graph takes two optional arguments the reference lacks: limit, the
// most entities and relations together in one answer (default
// [DefaultReadGraphLimit], 1000, so a small graph comes back whole as the
// reference returns it; at most [MaxReadGraphLimit]), and cursor, the
// nextCursor of the previous page, which an answer carries when the graph
// has more.
//
// Engram's own tools (snake_case arguments, as in the chat format):
//
//	remember       {text, kind?, tags?, metadata?: [{key, value}], importance?, expires_at?, shared?} → {id}
//	recall         {text, max_tokens?, max_messages?, top_k?, hops?, sources?, shared?}
//	               → {messages, items, trace}
//	append_message {role, content?, name?, tool_calls?: [{id, name, arguments?}], tool_call_id?, metadata?: [{key, value}]}
//	               → {id}
//	get_window     {max_messages?, max_tokens?}  → {messages, tokens}
//	forget         {erase_user?}                 → {erased: "session"|"user", user, session?}
//
// # Strict schemas
//
// tools/list advertises Engram's own five tools with input schemas that
// OpenAI's strict function calling and Gemini's function declarations
// both take: every property is listed in required, an optional one as
// anyOf [its schema, {"type": "null"}] (null means left out), every
// object has additionalProperties: false, no property has a list of
// types, and metadata is a list of {key, value} pairs rather than an
// object of free-form keys (which has no strict form). TestStrictSchemas
// checks the advertised schemas against both sets of rules, as the two
// providers document them (OpenAI's "Structured Outputs: supported
// schemas"; Gemini's FunctionDeclaration.parametersJsonSchema), plus
// the two refusals of Gemini's seen in issue 28 (a list of types, an
// object with no properties); the live APIs are not called.
//
// The server stays lenient: it validates calls with the schemas of
// before, so a client may still leave optional properties out and send
// metadata as an object ({"source": "chat"}); a key given twice in a
// list of pairs is an error. The nine graph tools keep the reference's
// schemas byte for byte, which OpenAI's strict mode does not take (their
// objects allow unknown properties): clients fall back to non-strict mode
// for those, as they do with the reference server.
//
// No schema fits every Gemini path: its older parameters field (an
// OpenAPI 3.0 subset, which some client libraries still convert to)
// has no additionalProperties at all, which OpenAI's strict mode
// requires. The schemas fit parametersJsonSchema, which Google's MCP
// bridge sends; a library that converts to parameters must drop
// additionalProperties, as most do.
//
// recall returns the context as chat messages (a system preamble with the
// rolling summary and the recalled memories, episodes and facts, then the
// session's window), the recalled items, and the trace of every candidate
// with its ranks and scores and why it was kept or dropped. forget erases
// the current session; with erase_user true, the whole user: every
// session, memory and the knowledge graph.
//
// Bad input is a tool error (a result with isError set and the reason as
// text), never a protocol error: arguments that fail the input schema,
// values the store refuses (an empty name, an unknown role, a tool result
// without its call), a bad cursor. add_observations on an unknown entity
// fails as the reference does, with "Entity with name X not found", and
// writes nothing.
//
// # Registering engram mcp
//
// In Claude Desktop's claude_desktop_config.json (other desktop clients
// take the same mcpServers block), with the absolute path go install wrote
// the binary to, since clients do not start servers with the shell's PATH
// ($(go env GOPATH)/bin/engram):
//
//	{
//	  "mcpServers": {
//	    "engram": {
//	      "command": "/Users/me/go/bin/engram",
//	      "args": ["mcp", "--dir", "/Users/me/.engram", "--user", "me"]
//	    }
//	  }
//	}
//
// # Differences from the reference memory server
//
// TestCompatibility runs testdata/compat_script.json (creates, duplicate
// creates, creates of an existing entity with other details, relations to
// entities never created, observations, add_observations errors, reads,
// searches, opens, deletes, invalid arguments) against Engram and against
// @modelcontextprotocol/server-memory (2026.8.31, with npx) and requires
// equal answers; it also compares the nine tools' titles, annotations and
// schemas. The script keeps to what the two share. Outside it:
//
//   - Names fold: "alice", "Alice" and " ALICE " name one entity (case, and
//     runs of white space, do not matter; the first spelling is kept and
//     outer spaces trimmed). Relation types fold likewise. The reference
//     compares names exactly. search_nodes folds the query and the text
//     (the reference lower-cases both), and also matches aliases.
//   - create_relations to a name that is no entity stores the relation, as
//     the reference does; underneath, the graph holds an entity with no
//     type, observations or aliases for its end. The tools treat such an
//     entity as the reference treats the name: read_graph, search_nodes
//     and open_nodes leave it out (its relations stay), add_observations
//     answers "Entity with name X not found", and create_entities creates
//     it with the details given and returns it. An entity created on
//     purpose with an empty entityType and no observations is treated the
//     same way, and so does not show.
//   - create_entities with a name that exists leaves the entity unchanged
//     and does not return it, as the reference does. The check and the
//     write are two transactions: an entity another client creates between
//     them gets this call's observations added.
//   - Duplicates within one call are stored once (observations of one
//     entity, entities, relations); the reference stores them twice.
//   - Answers list entities in order of their folded names (open_nodes: in
//     the order asked), relations grouped by entity; the reference keeps
//     insertion order.
//   - read_graph pages past 1000 entities and relations by default (see
//     above); search_nodes returns at most [MaxSearchResults] entities, and
//     search_nodes and open_nodes at most [MaxRelations] relations. The
//     reference returns everything.
//   - Names and relation types must be non-empty UTF-8 of at most 512
//     bytes without control characters; observations non-empty UTF-8 of at
//     most 2 KiB, 256 to an entity. The reference takes any string.
//   - A null argument counts as one left out, and so does a null member
//     of any object in the arguments (a tool call's arguments in
//     append_message's tool_calls): a required one is then reported
//     missing. A null element of an array is refused ("has type null").
//     The graph tools' schemas stay the reference's; clients whose strict schemas make
//     optional properties nullable (OpenAI, Gemini) send null for what the
//     model leaves out.
//   - The data lives in the store, not in a JSONL file (MEMORY_FILE_PATH is
//     not read), and the reference's memory://knowledge-graph resource and
//     its subscriptions are not served.
//
// # Caveats
//
//   - engram mcp holds its directory for as long as it runs: a second
//     process on the same directory fails with memory.ErrLocked. To share a
//     store, serve it with engram serve and connect clients to /mcp.
//   - The HTTP handler is stateless: it sends no notifications, makes no
//     requests of the client, and answers GET and DELETE with 405.
//   - Both transports take a JSON-RPC batch only from a client that
//     declared a protocol version with batches (2024-11-05, 2025-03-26):
//     over stdio in initialize, over HTTP in the MCP-Protocol-Version
//     header. Both refuse an id the SDK cannot echo exactly (it reads a
//     number as a float64, then an int64: 1e30 came back as
//     -9223372036854775808, 2^53+1 as 2^53): an id is a string, null, or
//     an integer of at most 2^53 in magnitude, else -32600.
//   - When stdin ends, engram mcp answers every request it has read (all
//     but those the client cancelled) before it exits, so a client may
//     write its requests and close its end at once; the answers stop
//     early only if stdout fails. Each call's writes are atomic: a call
//     is stored whole or not at all.
//   - With engram serve on PostgreSQL (many nodes), an /mcp request is
//     routed by its scope: a shared connection's to the owner of the
//     tenant's shared partition, a user's to the user's. remember with
//     shared: true on a user's request writes the shared partition from
//     the user's node, and fails (lease held) while another node holds
//     it: send shared writes on a shared connection there.
//   - The graph tools see relations that hold now; facts written through the
//     memory API with a validity that has ended (or not begun) are left out.
package mcpserver
