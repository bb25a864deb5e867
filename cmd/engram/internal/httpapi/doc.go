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
// Bearer. /mcp answers its HTTP errors in the same envelope. The
// errors net/http answers before any handler runs (431 for oversized
// headers, 400 for an unparsable request) are JSON too when the server
// listens through [Listener].
//
// # Many servers
//
// With [Options.Router] (a store in PostgreSQL shared by several engram
// serve nodes), a request that names a partition (the token's tenant and
// the {user} segment, the user of a recall's body, the scope of an /mcp
// request) is served by the partition's owner: here, or forwarded there
// (see package cluster). An owner that cannot be reached, or a partition
// that moved during the request, is 503 with Retry-After: 1 (codes
// owner_unavailable and partition_moved). /healthz then reports the
// database (503 when it does not answer a ping in 2 seconds), this node,
// the live nodes, the leases held and the lease and forward counters, and
// /metrics adds the engram_cluster_ series. The admin routes act on the
// node they reach; a flush there waits for the whole extraction queue,
// whichever node runs each job, up to [Options.FlushTimeout] (then 503
// extraction_pending, with Retry-After).
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
//   - The tenant's shared memory and graph (scopes with no user) are not
//     reachable over HTTP; every call names a user.
//   - The handler does not own the store and starts no goroutines; shut the
//     http.Server down before closing the store.
//   - Tokens are read once; restart the server to change them.
package httpapi
