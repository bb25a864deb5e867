package cluster

import (
	"errors"
	"fmt"
)

// ErrUnavailable is returned by [Router.Route] when a request's partition
// cannot be served now: its owner is unreachable, another node holds it
// while the request was already forwarded, or the database cannot be
// asked. The error is an [*UnavailableError]; a client should retry after
// a second.
var ErrUnavailable = errors.New("cluster: the partition's owner is unavailable")

// UnavailableError says why a partition cannot be served now, and which
// node owns it when that is known.
type UnavailableError struct {
	// Owner is the node that holds or was picked for the partition; empty
	// when unknown.
	Owner string
	// Reason is what went wrong, for the message.
	Reason string
	// Err is the underlying error (a refused connection, the database's
	// error), if any; it is not part of the message.
	Err error
}

// Error implements error. The message names the owner and the reason,
// never the underlying error's detail (addresses, the database's text).
func (e *UnavailableError) Error() string {
	if e.Owner == "" {
		return fmt.Sprintf("%v: %s; retry", ErrUnavailable, e.Reason)
	}
	return fmt.Sprintf("%v: node %s owns the partition: %s; retry", ErrUnavailable, e.Owner, e.Reason)
}

// Unwrap returns ErrUnavailable and the underlying error.
func (e *UnavailableError) Unwrap() []error {
	if e.Err == nil {
		return []error{ErrUnavailable}
	}
	return []error{ErrUnavailable, e.Err}
}
