package httpapi

import (
	"fmt"
	"net/http"

	"github.com/engramdb/engram/memory"
)

// userScope is the scope of the path's user in the token's tenant. The
// tenant never comes from the request.
func userScope(r *http.Request) memory.Scope {
	return memory.Scope{Tenant: Tenant(r.Context()), User: r.PathValue("user")}
}

func sessionScope(r *http.Request) memory.Scope {
	s := userScope(r)
	s.Session = r.PathValue("session")
	return s
}

// pageLimit is the limit a listing used: the request's, or the default.
func pageLimit(limit int) int {
	if limit == 0 {
		return memory.DefaultPageSize
	}
	return limit
}

// appendMessages appends a batch of messages, and the facts drawn from them,
// in one transaction, and answers their ids.
func (h *Handler) appendMessages(w http.ResponseWriter, r *http.Request) error {
	var req appendRequest
	if err := decode(r, &req); err != nil {
		return err
	}
	if len(req.Messages) == 0 {
		return badRequest("invalid_message", "messages is empty; append at least one message")
	}
	scope := sessionScope(r)
	msgs := make([]memory.Message, len(req.Messages))
	c := timeCheck{code: "invalid_message"}
	for i, m := range req.Messages {
		msgs[i] = m.message(&c, i)
	}
	if c.err != nil {
		return c.err
	}
	var b memory.Batch
	b.Append(scope, msgs...)
	c.code = "invalid_fact"
	for i, f := range req.Facts {
		b.Relate(scope, f.fact(&c, indexed("facts", i, "")))
	}
	if c.err != nil {
		return c.err
	}
	res, err := h.store.Write(r.Context(), &b)
	if err != nil {
		// Operation 0 holds the messages, 1 and on the facts.
		return &bodyPathError{err: err, ops: func(op int) string {
			if op == 0 {
				return ""
			}
			return fmt.Sprintf("facts[%d]", op-1)
		}}
	}
	writeJSON(w, http.StatusCreated, appendResponse{IDs: nonNil(res.MessageIDs), Facts: nonNil(res.Facts)})
	return nil
}

func (h *Handler) listMessages(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.MessagesOptions{
		After:   q.str("after"),
		Before:  q.str("before"),
		Since:   q.time("since"),
		Until:   q.time("until"),
		Limit:   q.int("limit", MaxPageSize),
		Reverse: q.bool("reverse"),
	}
	if q.err != nil {
		return q.err
	}
	msgs, err := h.store.Session(sessionScope(r)).Messages(r.Context(), opts)
	if err != nil {
		return err
	}
	resp := messagesResponse{Messages: nonNil(msgs)}
	if len(msgs) == pageLimit(opts.Limit) {
		resp.Next = msgs[len(msgs)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) window(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.WindowOptions{
		MaxMessages: q.int("max_messages", 1<<20),
		MaxTokens:   q.int("max_tokens", 1<<30),
	}
	if q.err != nil {
		return q.err
	}
	sess := h.store.Session(sessionScope(r))
	msgs, err := sess.Window(r.Context(), opts)
	if err != nil {
		return err
	}
	summary, err := sess.Summary(r.Context())
	if err != nil {
		return err
	}
	resp := windowResponse{Messages: nonNil(msgs), Summary: summary}
	for _, m := range msgs {
		resp.Tokens += m.Tokens
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

func (h *Handler) listSessions(w http.ResponseWriter, r *http.Request) error {
	q := newQuery(r)
	opts := memory.SessionsOptions{After: q.str("after"), Limit: q.int("limit", MaxPageSize)}
	if q.err != nil {
		return q.err
	}
	infos, err := h.store.Sessions(r.Context(), userScope(r), opts)
	if err != nil {
		return err
	}
	resp := sessionsResponse{Sessions: make([]sessionInfo, 0, len(infos))}
	for _, s := range infos {
		resp.Sessions = append(resp.Sessions, sessionInfo{ID: s.ID, Created: s.Created, Updated: s.Updated, Messages: s.Messages})
	}
	if len(infos) == pageLimit(opts.Limit) {
		resp.Next = infos[len(infos)-1].ID
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// forgetSession erases a session: its messages, episodes and summary. The
// user's memories and facts stay.
func (h *Handler) forgetSession(w http.ResponseWriter, r *http.Request) error {
	// An empty id would widen the erasure to the whole user (or tenant);
	// the mux never matches one, and this makes sure.
	if r.PathValue("user") == "" || r.PathValue("session") == "" {
		return badRequest("invalid_scope", "user and session are required")
	}
	if err := h.store.Forget(r.Context(), sessionScope(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// forgetUser erases a user with every session, memory and fact.
func (h *Handler) forgetUser(w http.ResponseWriter, r *http.Request) error {
	if r.PathValue("user") == "" {
		return badRequest("invalid_scope", "user is required")
	}
	if err := h.store.Forget(r.Context(), userScope(r)); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}
