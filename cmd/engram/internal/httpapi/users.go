package httpapi

import (
	"net/http"

	"github.com/engramdb/engram/memory"
)

// Pages of GET /v1/users: a page reads the keys of its users and the
// lengths of their values (memory.Store.UserUsages), so it costs a scan
// of their keys; pages stay small.
const (
	defaultUsersPage = 20
	maxUsersPage     = 50
)

// usersResponse is the body of GET /v1/users.
type usersResponse struct {
	Users []memory.UserUsage `json:"users"`
	Next  string             `json:"next,omitempty"`
}

// listUsers lists the token's tenant's users that hold data, in id order,
// each with its counts and size, a page in one scan
// (memory.Store.UserUsages).
func (h *Handler) listUsers(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.ListOptions{After: q.str("after"), Limit: q.int("limit", maxUsersPage)}
	if q.err != nil {
		return q.err
	}
	if opts.Limit == 0 {
		opts.Limit = defaultUsersPage
	}
	users, err := h.store.UserUsages(r.Context(), memory.Scope{Tenant: Tenant(r.Context())}, opts)
	if err != nil {
		return err
	}
	resp := usersResponse{Users: users}
	if resp.Users == nil {
		resp.Users = []memory.UserUsage{}
	}
	if len(users) == opts.Limit {
		resp.Next = users[len(users)-1].User
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}
