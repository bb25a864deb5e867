// Package httpapi is Engram's HTTP JSON API over a [memory.Store]: the
// handler that `engram serve` runs. Its exported types are few: [Handler]
// (built by [New] from [Options]), [Tokens] (the bearer tokens, read with
// [LoadTokens]) and [MetricsAccess]; [Listener] wraps the server's listener
// so that net/http's own errors are JSON; [Tenant] reads the authenticated tenant
// from a request's context.
//
// # Basics
//
// Every route under /v1/ needs a bearer token; the tokens file maps each token
// to exactly one tenant, and the tenant of every call comes from the token,
// never from the request, so a token cannot reach another tenant's data.
// Without a valid token any path under /v1/ or /mcp is 401, routed or not.
// Users and sessions are path segments inside that tenant; an id that is
// "." or "..", holds "/" (escaped as %2F or not) or an invisible format
// character is 400 invalid_scope (see engine.ValidateScopeID):
//
//	POST   /v1/users/{user}/sessions/{session}/messages   append (and facts, atomically); answers ids
//	GET    /v1/users/{user}/sessions/{session}/messages   page: after, before, since, until, limit, reverse
//	GET    /v1/users/{user}/sessions/{session}/window     max_messages, max_tokens
//	GET    /v1/users/{user}/sessions                      after, limit
//	DELETE /v1/users/{user}/sessions/{session}            forget a session
//	DELETE /v1/users/{user}                               forget a user
//	POST   /v1/users/{user}/memories                      remember (deduplicated)
//	GET    /v1/users/{user}/memories                      kind, tag, after, limit
//	GET    /v1/users/{user}/memories/{id}                 also PUT (new version) and DELETE
//	GET    /v1/users/{user}/memories/{id}/history
//	POST   /v1/users/{user}/facts                         GET: subject, predicate, object, as_of, history
//	DELETE /v1/users/{user}/facts/{id}
//	POST   /v1/users/{user}/traverse
//	POST   /v1/users/{user}/entities                      also /relations, /observations; DELETE with a body
//	GET    /v1/users/{user}/graph                         read_graph, paged: cursor, limit
//	GET    /v1/users/{user}/graph/search?q=TEXT           search_nodes (q required), limit
//	POST   /v1/users/{user}/graph/open                    open_nodes
//	POST   /v1/recall                                     the context for the next model call, with its trace
//	       /v1/shared/memories, /facts, /traverse, ...    the tenant's shared memories and graph (below)
//	POST   /v1/admin/compact, /v1/admin/flush             any token: store-wide upkeep (see # Admin routes)
//	GET    /v1/admin/backup                               admin token: a backup of the whole store, streamed
//	GET    /v1/admin/export?format=jsonl|nquads&tenant=T  admin token: engram export's bytes, streamed; user
//	GET    /v1/admin/stats                                admin token: engram inspect's report; tenant, user
//	GET    /healthz, /openapi.json, /metrics              no token (/metrics: see MetricsAccess)
//
// The graph routes (entities, relations, observations, graph) answer what
// the MCP memory server's tools of the same names answer for the same call:
// both call package kgraph, and TestGraphParityMCPHTTP compares them. So
// open and search answer every relation with an end among the entities, a
// name that is only a relation's end is no entity, and creating an entity
// that exists leaves it as it is. Only the envelope differs: entities carry
// Engram's aliases and createdAt, the cursor is named next, deletes answer
// 204, and add_observations also answers the deprecated observations.
//
// # Shared memory
//
// A tenant's shared memories and shared graph (the memory package's
// scopes with no user: what every user and agent of the tenant may be
// given) are under /v1/shared/: every memory and graph route of
// /v1/users/{user}/ without the user segment, the same handler on the
// tenant's shared partition (memories with their history, facts,
// traverse, entities, relations, observations, graph, graph/search and
// graph/open). Sessions and messages belong to a user and have no shared
// copy. The tenant is the token's, as everywhere: a token of another
// tenant reads, changes and erases nothing of it. Shared data is in no
// user's listings and a user's in no shared listing; forgetting a user
// leaves it. A user's recall draws on the shared memories when asked:
// "shared": true in the /v1/recall body (the default sources and the
// shared memories), or shared among its sources. In a cluster the routes
// under /v1/shared/ go to the owner of the tenant's shared partition.
//
//	curl -sS -X POST http://127.0.0.1:7437/v1/shared/memories -H "Authorization: Bearer $ENGRAM_TOKEN" \
//	  --json '{"text":"The office wifi password is on the fridge.","agent":"concierge"}'
//	curl -sS -X POST http://127.0.0.1:7437/v1/recall -H "Authorization: Bearer $ENGRAM_TOKEN" \
//	  --json '{"user":"alice","text":"where is the wifi password?","shared":true}'
//
// openapi.json in this directory (served at /openapi.json) describes every
// route, parameter and body; a test keeps it equal to the route table.
//
// An example request, appending two messages and reading the window:
//
//	curl -sS -X POST http://127.0.0.1:7437/v1/users/alice/sessions/renewal/messages \
//	  -H "Authorization: Bearer $ENGRAM_TOKEN" -H 'Content-Type: application/json' \
//	  -d '{"messages":[{"role":"user","content":"My renewal owner is Dana."},
//	                   {"role":"assistant","content":"Noted: Dana owns your renewal."}]}'
//	{"ids":["01JQ…","01JQ…"],"facts":[]}
//
//	curl -sS -H "Authorization: Bearer $ENGRAM_TOKEN" \
//	  'http://127.0.0.1:7437/v1/users/alice/sessions/renewal/window?max_tokens=2000'
//
// # Admin routes
//
// A token marked "admin": true in the tokens file (see [Tokens]) may call
// the store-wide routes, which read every tenant's data; any other valid
// token gets 403 admin_required there:
//
//   - GET /v1/admin/backup streams the file engram backup writes (sealed
//     as it seals it when the store is encrypted), which engram restore
//     loads; engram backup --url writes it atomically.
//   - GET /v1/admin/export streams what engram export writes for a tenant
//     (format=jsonl, the default) or a user's graph (format=nquads, with
//     user): the same bytes for the same store. tenant is required.
//   - GET /v1/admin/stats answers engram inspect's report as JSON (the
//     store, ?tenant=T, or ?tenant=T&user=U); engram inspect --url prints
//     it.
//
// POST /v1/admin/compact and /v1/admin/flush stay open to every valid
// token: they change no data, tell nothing about other tenants, and run
// one at a time (compact) or wait within a bound (flush). An admin token
// still names a tenant, which the tenant routes serve it.
//
// The streamed answers send their status and headers with the first byte;
// an error after that cuts the connection (the transfer ends without its
// last chunk), so a client never takes a short stream for a whole one. A
// client that goes away stops the backup or export.
//
// # Errors
//
// Every error is JSON, {"error": {"code": "...", "message": "..."}}, with the
// status given by the memory package's sentinel (errors.Is): invalid input
// (ErrInvalidScope, ErrInvalidMessage, ErrInvalidMemory, ErrInvalidFact,
// ErrInvalidOptions, ...) is 400; ErrNotFound, ErrEntityNotFound and
// ErrFactNotFound are 404; ErrAliasConflict and a transaction conflict are
// 409; ErrTooLarge and a body over [Options].MaxBodyBytes are 413;
// ErrBudgetTooSmall is 422; a failing embedding provider is 502 (a failing
// summarizer is not an error: recall falls back on the stored summary); a closed store is 503. Anything else is 500 with a message that says
// nothing internal; the access log has the detail. A client error's message
// says why without the package prefixes the code already names ("empty
// text", not "memory: invalid memory: empty text"), and one about a field of
// the request body starts with the field's path in that body
// ("messages[1].content: empty user message", "facts[0]: empty subject";
// see memory.FieldError). Unknown JSON fields and
// query parameters a route does not take are 400, and so is a time given as
// 0001-01-01T00:00:00Z or outside 1677-2262 (the message names the field);
// a path with empty or dot segments under /v1/ or /mcp is 400 unclean_path,
// never a redirect. A message quotes at most about 100 bytes of the value
// it names. A missing or invalid token is 401 with WWW-Authenticate:
// Bearer; a tenant's token on an admin route is 403 admin_required. /mcp answers its HTTP errors in the same envelope. The
// errors net/http answers before any handler runs (431 for oversized
// headers, 400 for an unparsable request) are JSON too when the server
// listens through [Listener].
//
// # Many servers
//
// With [Options.Router] (a store in PostgreSQL shared by several engram
// serve nodes), a request that names a partition (the token's tenant and
// the {user} segment, the tenant's shared partition under /v1/shared/, the
// user of a recall's body, the scope of an /mcp request) is served by the partition's owner: here, or forwarded there
// (see package cluster). An owner that cannot be reached, or a partition
// that moved during the request, is 503 with Retry-After: 1 (codes
// owner_unavailable and partition_moved). /healthz then reports the
// database (503 when it does not answer a ping in 2 seconds), this node,
// the live nodes, the leases held and the lease and forward counters, and
// /metrics adds the engram_cluster_ series. The admin routes act on the
// node they reach; a flush there waits for the whole extraction queue,
// whichever node runs each job, up to [Options.FlushTimeout] (then 503
// extraction_pending, with Retry-After). A backup from any node is of the
// whole shared store (one snapshot of its table, as engram backup
// --postgres takes), and export and stats read every partition, whoever
// holds its lease.
//
// # Observability
//
// One slog record per request (method, route pattern, status, bytes,
// duration, tenant and the token's name; never the token or the path's ids).
// Prometheus metrics on a registry of the handler's own: request latency by
// method, route pattern and status class; recall latency; requests in flight;
// the store's on-disk sizes and transaction counters.
//
// # Caveats
//
//   - A tenant's shared memories are erased one by one (DELETE
//     /v1/shared/memories/{id}) and its shared graph by entity; there is
//     no route that erases the shared partition whole (the memory
//     package's Forget of a scope with no user erases the whole tenant).
//   - The handler does not own the store and starts no goroutines; shut the
//     http.Server down before closing the store.
//   - Tokens are read once; restart the server to change them.
package httpapi
