package kgraph

import "github.com/engramdb/engram/memory"

// EntityNotFoundError is [AddObservations]' error for a name that is no
// entity, worded as the reference words it. It wraps
// [memory.ErrEntityNotFound].
type EntityNotFoundError struct {
	// Name is the entity name as the caller gave it.
	Name string
}

// Error returns the reference's message.
func (e EntityNotFoundError) Error() string { return "Entity with name " + e.Name + " not found" }

// Unwrap returns [memory.ErrEntityNotFound].
func (e EntityNotFoundError) Unwrap() error { return memory.ErrEntityNotFound }
