package httpapi

import (
	"context"
	"net/http"
	"strings"

	"github.com/engramdb/engram/memory"
)

// The tenant's shared partition (memory's scopes with no user: shared
// memories and the shared graph) is served under /v1/shared/ by the same
// handlers as a user's memories and graph under /v1/users/{user}/: the
// route says whose partition it is, and ownerScope reads it.

// userPrefix and sharedPrefix are the two owners' path prefixes.
const (
	userPrefix   = "/v1/users/{user}/"
	sharedPrefix = "/v1/shared/"
)

// sharedRoutes returns, for every route of rs under /v1/users/{user}/
// that works on memories or the graph, its copy under /v1/shared/: the
// same method, parameters and handler, on the tenant's shared partition.
// Sessions and messages belong to a user and have no copy.
func sharedRoutes(rs []route) []route {
	var out []route
	for _, rt := range rs {
		rest, ok := strings.CutPrefix(rt.path, userPrefix)
		if !ok || rest == "sessions" || strings.HasPrefix(rest, "sessions/") {
			continue
		}
		rt.path = sharedPrefix + rest
		rt.shared = true
		out = append(out, rt)
	}
	return out
}

// ownerKey marks, in a request's context, whose partition its route
// works on.
type ownerKey struct{}

// withOwner returns r with its owner in the context: the tenant's shared
// partition on a route under /v1/shared/, else the {user} of the path. A
// route with a {user} segment that is empty is refused, so that it can
// never fall through to the shared partition (the mux matches no empty
// segment; this is the second lock).
func withOwner(rt route, r *http.Request) (*http.Request, error) {
	if rt.shared {
		return r.WithContext(context.WithValue(r.Context(), ownerKey{}, true)), nil
	}
	if strings.Contains(rt.path, "{user}") && r.PathValue("user") == "" {
		return r, badRequest("invalid_scope", "the user segment of the path is empty")
	}
	return r, nil
}

// ownerScope returns the scope whose partition a memory or graph route
// works on: the tenant's shared partition (a scope with no user) on a
// route under /v1/shared/, else the {user} of the path, in the token's
// tenant either way.
func ownerScope(r *http.Request) memory.Scope {
	sc := memory.Scope{Tenant: Tenant(r.Context())}
	if shared, _ := r.Context().Value(ownerKey{}).(bool); !shared {
		sc.User = r.PathValue("user")
	}
	return sc
}

// sharedPartition is the partition of the token's tenant's shared
// memories and graph, for the routes under /v1/shared/.
func sharedPartition(r *http.Request) ([]byte, bool) {
	sc := memory.Scope{Tenant: Tenant(r.Context())}
	if sc.Validate(sc.Level()) != nil {
		return nil, false
	}
	return memory.Partition(sc), true
}
