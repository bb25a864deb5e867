package memory

import (
	"errors"
	"fmt"

	"github.com/engramdb/engram/engine"
	"github.com/engramdb/engram/graph"
)

// Errors shared with package engine; errors.Is matches them at either layer.
var (
	// ErrInvalidScope is returned by every call given a scope whose ids are
	// missing where the call needs them, too long, not UTF-8, or hold
	// control characters (see [engine.ValidateID]).
	ErrInvalidScope = engine.ErrInvalidScope
	// ErrClosed is returned by every call on a closed [Store].
	ErrClosed = engine.ErrClosed
	// ErrNotFound is returned when a session or record does not exist.
	ErrNotFound = engine.ErrNotFound
	// ErrTooLarge is returned by [Session.Append] for a message over
	// Options.MaxMessageBytes, or a batch too large for one transaction.
	// Nothing is written.
	ErrTooLarge = engine.ErrTooLarge
	// ErrLocked is returned by [Open] when another process has the directory.
	ErrLocked = engine.ErrLocked
	// ErrEncryptionKey is returned by [Open] for a wrong or missing key.
	ErrEncryptionKey = engine.ErrEncryptionKey
	// ErrInvalidTime is returned, wrapped in the call's class of bad input
	// ([ErrInvalidMessage], [ErrInvalidMemory], [ErrInvalidOptions]), for a
	// time the store cannot keep exactly: before 1677-09-21 or after
	// 2262-04-11. Nothing is written.
	ErrInvalidTime = engine.ErrInvalidTime
	// ErrInvalidOptions is returned by [Open] and by calls given bad options
	// (a negative budget, a malformed cursor).
	ErrInvalidOptions = engine.ErrInvalidOptions
	// ErrCorrupt is returned when a stored record cannot be decoded, and
	// when a file of the store is damaged (a checksum fails, a file is
	// truncated): by [Open], or by the call whose read meets the damage.
	// The message names the file.
	ErrCorrupt = engine.ErrCorrupt
	// ErrDiskFull is returned by writes when the disk holding the store is
	// too full to write safely. Nothing is written; reads go on, and writes
	// work again once space is freed. [Open] returns it for a store on a
	// full disk.
	ErrDiskFull = engine.ErrDiskFull
	// ErrNotDurable is returned by a write that committed, and is
	// visible, but whose fsync failed: a crash of the machine may lose
	// it, so do not simply retry it. Every later write is refused until
	// the store is reopened.
	ErrNotDurable = engine.ErrNotDurable
	// ErrFenced is returned by a write, in a store in PostgreSQL, to a
	// (tenant, user) partition whose lease this process lost to another;
	// nothing of it was written. Send it to the partition's new owner.
	ErrFenced = engine.ErrFenced
	// ErrLeaseHeld is returned by a write, in a store in PostgreSQL, to a
	// partition another live process holds; the error is a
	// *[LeaseHeldError] naming it.
	ErrLeaseHeld = engine.ErrLeaseHeld
	// ErrUnavailable is returned when a store in PostgreSQL cannot reach
	// its database; retry later.
	ErrUnavailable = engine.ErrUnavailable
	// ErrEmbedderMismatch is returned by [Open] for an [Options.Embedder]
	// other than the one whose vectors the store holds (the store records
	// its embedder's provider, model and dimension with its first vector),
	// and by every call that needs a vector on a store opened without an
	// Embedder (the default) whose vectors come from another one.
	ErrEmbedderMismatch = engine.ErrVectorSourceMismatch
)

// Errors of [Session.Append]. Each specific error wraps [ErrInvalidMessage],
// so errors.Is(err, ErrInvalidMessage) matches all of them. The returned
// error also names the index of the offending message in the batch. Nothing
// of the batch is written.
var (
	// ErrInvalidMessage is returned for a message that breaks a rule of the
	// chat format: empty content without tool calls, tool calls on a
	// non-assistant message, a tool-call id on a non-tool message, text that
	// is not UTF-8, a bad name or metadata key.
	ErrInvalidMessage = errors.New("memory: invalid message")
	// ErrInvalidRole is returned for a role other than system, user,
	// assistant and tool.
	ErrInvalidRole = fmt.Errorf("%w: unknown role", ErrInvalidMessage)
	// ErrOrphanToolResult is returned for a tool result whose ToolCallID
	// matches no earlier tool call of the session (or of the batch).
	ErrOrphanToolResult = fmt.Errorf("%w: tool result answers no earlier tool call", ErrInvalidMessage)
	// ErrInvalidToolArguments is returned for tool-call arguments that are
	// not valid JSON.
	ErrInvalidToolArguments = fmt.Errorf("%w: tool-call arguments are not valid JSON", ErrInvalidMessage)
	// ErrDuplicateToolCall is returned for a tool-call id already used in
	// the session.
	ErrDuplicateToolCall = fmt.Errorf("%w: duplicate tool-call id", ErrInvalidMessage)
	// ErrDuplicateToolResult is returned for a tool result whose
	// ToolCallID an earlier result of the session (or of the batch)
	// already answered: a call has one result.
	ErrDuplicateToolResult = fmt.Errorf("%w: tool call already answered", ErrInvalidMessage)
)

// ErrBudgetTooSmall is returned by [Session.Window] when the session's system
// messages alone exceed the message or token budget: they are always kept, so
// no window fits.
var ErrBudgetTooSmall = errors.New("memory: system messages alone exceed the window budget")

// ErrInvalidMemory is returned by [Store.Remember] and [Store.UpdateMemory]
// for a memory that cannot be stored: an unknown kind, empty or over-long
// text, bad tags or metadata, an importance outside [0, 1], an expiry not
// in the future. Nothing is written.
var ErrInvalidMemory = errors.New("memory: invalid memory")

// ErrEmbedding is returned when the embedder fails or returns vectors that
// cannot be used. Nothing is written.
var ErrEmbedding = errors.New("memory: embedding failed")

// Errors of the knowledge graph, shared with package graph.
var (
	// ErrInvalidName is returned for an entity name, alias or predicate
	// that is empty, longer than graph.MaxNameLength bytes, not UTF-8 or
	// holds control characters.
	ErrInvalidName = graph.ErrInvalidName
	// ErrInvalidFact is returned by [Store.Relate] for a fact that cannot be
	// stored: a bad name (also [ErrInvalidName]), ValidTo not after
	// ValidFrom, a confidence outside [0, 1]. Nothing is written.
	ErrInvalidFact = graph.ErrInvalidFact
	// ErrInvalidEntity is returned for an entity whose type, aliases or
	// observations cannot be stored.
	ErrInvalidEntity = graph.ErrInvalidEntity
	// ErrEntityNotFound is returned by calls that need an entity to exist.
	ErrEntityNotFound = graph.ErrEntityNotFound
	// ErrFactNotFound is returned for an unknown fact id.
	ErrFactNotFound = graph.ErrFactNotFound
	// ErrAliasConflict is returned for an alias that names another entity.
	ErrAliasConflict = graph.ErrAliasConflict
	// ErrInvalidQuery is returned for a graph query with a bad limit, hop
	// count or direction.
	ErrInvalidQuery = graph.ErrInvalidQuery
	// ErrInvalidCursor is returned for a paging cursor the store did not
	// produce.
	ErrInvalidCursor = graph.ErrInvalidCursor
)

// ErrFlushPending is matched by the error [Store.Flush] returns when its
// context ends before the messages it waits for are extracted: a
// [*FlushError], which counts them.
var ErrFlushPending = errors.New("memory: extraction still pending")

// FlushError is returned by [Store.Flush] when its context ends first. It
// matches [ErrFlushPending] and the context's error (errors.Is with
// context.DeadlineExceeded still holds).
type FlushError struct {
	// Pending is how many of the messages Flush waited for were still
	// queued for extraction when it gave up.
	Pending int
	// Err is the context's error.
	Err error
}

// Error implements error.
func (e *FlushError) Error() string {
	return fmt.Sprintf("%v: %d messages still wait for extraction: %v", ErrFlushPending, e.Pending, e.Err)
}

// Unwrap returns ErrFlushPending and the context's error.
func (e *FlushError) Unwrap() []error { return []error{ErrFlushPending, e.Err} }

// FieldError says which part of a call's input an error is about, by its
// name in the input's JSON shape, so that a program that took the input as
// JSON (the HTTP API) can point at it: the operation of a [Batch] (Field
// "ops"), the message of an Append ("messages"), a message's field
// ("role", "content", "tool_calls", ...). FieldErrors nest, outermost
// first; [FieldPath] joins them into one path. Err is why, and still
// matches the error's class with errors.Is ([ErrInvalidMessage], ...).
// The text of a FieldError is what it was before they existed: "batch op
// 2: append message 0: memory: invalid message: unknown role".
type FieldError struct {
	// Field is the JSON name of the field, or of the list for an element.
	Field string
	// Index is the element of the list Field names, -1 for a field.
	Index int
	// Err is why.
	Err error
	// prefix, when set, starts the text: "batch op 2".
	prefix string
}

// Error returns Err's text, after the operation when the error names one.
func (e *FieldError) Error() string {
	if e.prefix == "" {
		return e.Err.Error()
	}
	return e.prefix + ": " + e.Err.Error()
}

// Unwrap returns Err.
func (e *FieldError) Unwrap() error { return e.Err }

// FieldPath returns the path of the input field err is about, such as
// "ops[0].messages[1].role", and the error that says why (err itself
// when err names no field; path is then "").
func FieldPath(err error) (path string, reason error) {
	reason = err
	var fe *FieldError
	for errors.As(reason, &fe) {
		if path != "" {
			path += "."
		}
		path += fe.Field
		if fe.Index >= 0 {
			path += fmt.Sprintf("[%d]", fe.Index)
		}
		reason = fe.Err
	}
	return path, reason
}

// fieldError returns err about the field name of the input.
func fieldError(name string, err error) error {
	return &FieldError{Field: name, Index: -1, Err: err}
}

// opError returns err about the batch's operation i.
func opError(i int, err error) error {
	return &FieldError{Field: "ops", Index: i, Err: err, prefix: fmt.Sprintf("batch op %d", i)}
}

// messageError returns err about the message i of an Append.
func messageError(i int, err error) error {
	return &FieldError{Field: "messages", Index: i, Err: err, prefix: fmt.Sprintf("append message %d", i)}
}
