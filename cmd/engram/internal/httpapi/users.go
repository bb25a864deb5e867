package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/memory"
)

// Pages of GET /v1/users: each user listed costs a scan of all its data
// for the usage figures (memory.Store.Usage reads every value), so pages
// are small.
const (
	defaultUsersPage = 20
	maxUsersPage     = 50
)

// userUsage is one entry of GET /v1/users.
type userUsage struct {
	User  string       `json:"user"`
	Usage memory.Usage `json:"usage"`
}

// usersResponse is the body of GET /v1/users.
type usersResponse struct {
	Users []userUsage `json:"users"`
	Next  string      `json:"next,omitempty"`
}

// listUsers lists the token's tenant's users that hold data, in id order,
// each with its counts and size (memory.Store.Usage).
func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.ListOptions{After: q.str("after"), Limit: q.int("limit", maxUsersPage)}
	if q.err != nil {
		return q.err
	}
	if opts.Limit == 0 {
		opts.Limit = defaultUsersPage
	}
	tenant := memory.Scope{Tenant: Tenant(r.Context())}
	ids, err := h.store.Users(r.Context(), tenant, opts)
	if err != nil {
		return err
	}
	resp := usersResponse{Users: make([]userUsage, 0, len(ids))}
	for _, id := range ids {
		u, err := h.store.Usage(r.Context(), memory.Scope{Tenant: tenant.Tenant, User: id})
		if err != nil {
			return err
		}
		resp.Users = append(resp.Users, userUsage{User: id, Usage: u})
	}
	if len(ids) == opts.Limit {
		resp.Next = ids[len(ids)-1]
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
