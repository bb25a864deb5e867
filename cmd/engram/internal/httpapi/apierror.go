package httpapi

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// apiError is an error with its HTTP status and the code of the JSON error
// body, {"error": {"code": ..., "message": ...}}.
type apiError struct {
	status  int
	code    string
	message string
}

func (e *apiError) Error() string { return e.message }

// errorBody is the JSON of every error response.
type errorBody struct {
	Error errorDetail `json:"error"`
}

type errorDetail struct {
	Code    string `json:"code"`
	Message string `json:"message"`
}

// errorClass maps a sentinel of package memory (or engine) to a status and
// code. Client errors (4xx) answer with the error's own message, which names
// the bad field or id; server errors answer with the class's fixed message,
// so nothing internal (paths, provider replies) leaks, and the detail goes to
// the access log.
type errorClass struct {
	err     error
	status  int
	code    string
	message string // for 5xx; 4xx use the error's text
	// ownMessage answers a 5xx with the error's own text (it names a
	// node, nothing internal).
	ownMessage bool
}

// errorClasses are tried in order with errors.Is: specific errors before
// the general ones they wrap.
var errorClasses = []errorClass{
	// A store shared by several servers: the partition is served by
	// another node, or moved during the request. Answered 503 with
	// Retry-After (retryCodes): the next try finds the new owner.
	{err: cluster.ErrUnavailable, status: http.StatusServiceUnavailable, code: "owner_unavailable", ownMessage: true},
	{err: kv.ErrLeaseHeld, status: http.StatusServiceUnavailable, code: "partition_moved", ownMessage: true},
	{err: kv.ErrFenced, status: http.StatusServiceUnavailable, code: "partition_moved",
		message: "the partition moved to another node during the request; retry"},
	{err: kv.ErrUnavailable, status: http.StatusServiceUnavailable, code: "database_unavailable",
		message: "the database is unreachable; retry"},
	{err: memory.ErrInvalidScope, status: http.StatusBadRequest, code: "invalid_scope"},
	{err: memory.ErrInvalidMessage, status: http.StatusBadRequest, code: "invalid_message"},
	{err: memory.ErrInvalidMemory, status: http.StatusBadRequest, code: "invalid_memory"},
	{err: memory.ErrInvalidFact, status: http.StatusBadRequest, code: "invalid_fact"},
	{err: memory.ErrInvalidEntity, status: http.StatusBadRequest, code: "invalid_entity"},
	{err: memory.ErrInvalidName, status: http.StatusBadRequest, code: "invalid_name"},
	{err: memory.ErrInvalidQuery, status: http.StatusBadRequest, code: "invalid_query"},
	{err: memory.ErrInvalidCursor, status: http.StatusBadRequest, code: "invalid_cursor"},
	{err: memory.ErrInvalidOptions, status: http.StatusBadRequest, code: "invalid_options"},
	{err: engine.ErrInvalidRecord, status: http.StatusBadRequest, code: "invalid_record"},
	{err: memory.ErrEntityNotFound, status: http.StatusNotFound, code: "entity_not_found"},
	{err: memory.ErrFactNotFound, status: http.StatusNotFound, code: "fact_not_found"},
	{err: memory.ErrNotFound, status: http.StatusNotFound, code: "not_found"},
	{err: memory.ErrTooLarge, status: http.StatusRequestEntityTooLarge, code: "too_large"},
	{err: memory.ErrAliasConflict, status: http.StatusConflict, code: "alias_conflict"},
	{err: engine.ErrConflict, status: http.StatusConflict, code: "conflict"},
	{err: memory.ErrBudgetTooSmall, status: http.StatusUnprocessableEntity, code: "budget_too_small"},
	{err: memory.ErrEmbedding, status: http.StatusBadGateway, code: "embedding_failed",
		message: "the embedding provider failed; see the server log"},
	{err: memory.ErrSummarization, status: http.StatusBadGateway, code: "summarization_failed",
		message: "the summarization provider failed; see the server log"},
	{err: memory.ErrDiskFull, status: http.StatusInsufficientStorage, code: "disk_full",
		message: "the server's disk is full; nothing was written"},
	{err: memory.ErrNotDurable, status: http.StatusInternalServerError, code: "not_durable",
		message: "the write was stored but the server's disk did not confirm it; the server refuses writes until it is restarted"},
	{err: memory.ErrClosed, status: http.StatusServiceUnavailable, code: "unavailable",
		message: "the store is closed; the server is shutting down"},
	{err: context.DeadlineExceeded, status: http.StatusGatewayTimeout, code: "timeout",
		message: "the call did not finish in time"},
	// The client went away; nobody reads the answer, but the log shows
	// 499 (nginx's "client closed request") rather than a server error.
	{err: context.Canceled, status: 499, code: "canceled", message: "the request was canceled"},
}

// classify returns the status, code and message for err.
func classify(err error) (status int, code, message string) {
	var ae *apiError
	if errors.As(err, &ae) {
		return ae.status, ae.code, ae.message
	}
	for _, c := range errorClasses {
		if errors.Is(err, c.err) {
			if c.ownMessage {
				return c.status, c.code, ownMessage(err)
			}
			if c.status >= 500 || c.status == 499 {
				return c.status, c.code, c.message
			}
			return c.status, c.code, clientMessage(err)
		}
	}
	return http.StatusInternalServerError, "internal", "internal error; see the server log"
}

// clientMessage is the message of a client error (4xx): when the error
// names the field at fault (a [memory.FieldError]), its path in the
// request body and why, "messages[0].role: unknown role \"bogus\"",
// without the calls it went through ("batch op 0: append message 0:")
// nor the classes the code already says ("memory: invalid message");
// otherwise the error's own text.
func clientMessage(err error) string {
	path, reason := memory.FieldPath(err)
	if path == "" {
		return withoutClasses(err, err.Error())
	}
	var bp *bodyPathError
	if errors.As(err, &bp) {
		path = bp.bodyPath(path)
	}
	why := withoutClasses(reason, reason.Error())
	if path == "" {
		return why
	}
	return path + ": " + why
}

// withoutClasses drops from msg, the text of err, the texts of the client
// error classes err matches where they start msg or a wrapped part of it:
// the code says the class, and "graph: invalid fact: graph: invalid name:
// empty subject" reads "empty subject". A class's text left alone (no
// detail after it) stays.
func withoutClasses(err error, msg string) string {
	for _, c := range errorClasses {
		if c.status >= 500 || c.status == 499 || !errors.Is(err, c.err) {
			continue
		}
		p := c.err.Error() + ": "
		for strings.HasPrefix(msg, p) {
			msg = msg[len(p):]
		}
		msg = strings.ReplaceAll(msg, ": "+p, ": ")
	}
	return msg
}

// bodyPathError is an error of a [memory.Batch] the handler built from a
// request body: ops names the body's field each operation came from ("" for
// the body itself), so that the error's path is the body's.
type bodyPathError struct {
	err error
	ops func(op int) string
}

func (e *bodyPathError) Error() string { return e.err.Error() }
func (e *bodyPathError) Unwrap() error { return e.err }

// bodyPath turns a path that starts with a batch operation, "ops[2].x",
// into the body's, "facts[1].x".
func (e *bodyPathError) bodyPath(path string) string {
	var op int
	rest, ok := strings.CutPrefix(path, "ops[")
	if !ok {
		return path
	}
	end := strings.IndexByte(rest, ']')
	if end < 0 {
		return path
	}
	if _, err := fmt.Sscanf(rest[:end], "%d", &op); err != nil {
		return path
	}
	rest = strings.TrimPrefix(rest[end+1:], ".")
	switch head := e.ops(op); {
	case head == "":
		return rest
	case rest == "":
		return head
	default:
		return head + "." + rest
	}
}

// retryCodes are the error codes answered with "Retry-After: 1": the
// request may succeed at once on another try.
var retryCodes = map[string]bool{"owner_unavailable": true, "partition_moved": true, "database_unavailable": true, "extraction_pending": true}

// ownMessage is the message of an error answered with its own text: a
// *cluster.UnavailableError's (the owner and the reason), or a
// *kv.LeaseHeldError's holder; never a wrapped cause's detail.
func ownMessage(err error) string {
	var ue *cluster.UnavailableError
	if errors.As(err, &ue) {
		return ue.Error()
	}
	var lh *kv.LeaseHeldError
	if errors.As(err, &lh) {
		return fmt.Sprintf("the partition is owned by node %s; retry", lh.Lease.Node)
	}
	return "the partition's owner is unavailable; retry"
}

// writeError answers err as a JSON error. Server errors are recorded for the
// access log with their detail.
func (h *Handler) writeError(w http.ResponseWriter, r *http.Request, err error) {
	status, code, message := classify(err)
	if retryCodes[code] {
		w.Header().Set("Retry-After", "1")
	}
	if status >= 500 {
		if info := infoFrom(r.Context()); info != nil {
			info.err = err
		}
	}
	writeJSON(w, status, errorBody{Error: errorDetail{Code: code, Message: boundMessage(message)}})
}

// writeJSON answers v as JSON with status.
func writeJSON(w http.ResponseWriter, status int, v any) {
	b, err := json.Marshal(v)
	if err != nil {
		// Every response type marshals; this is a programming error.
		status = http.StatusInternalServerError
		b = []byte(`{"error":{"code":"internal","message":"internal error; see the server log"}}`)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(status)
	w.Write(append(b, '\n'))
}

func errBodyTooLarge(limit int64) error {
	return &apiError{status: http.StatusRequestEntityTooLarge, code: "too_large",
		message: fmt.Sprintf("the request body is larger than %d bytes", limit)}
}

func badRequest(code, format string, args ...any) error {
	return &apiError{status: http.StatusBadRequest, code: code, message: fmt.Sprintf(format, args...)}
}
