package graph

import "errors"

// Errors returned by this package. Errors of the storage layer (package kv)
// pass through unchanged.
var (
	// ErrInvalidName is returned for an entity name, alias, predicate or
	// query name that is empty (after trimming white space), longer than
	// [MaxNameLength] bytes, not UTF-8 or holding control characters.
	ErrInvalidName = errors.New("graph: invalid name")

	// ErrInvalidFact is returned by Relate and Invalidate for a fact that
	// cannot be stored: a bad subject, predicate or object (the error also
	// wraps [ErrInvalidName]), ValidTo not after ValidFrom, a time outside
	// the years 1678-2261, a confidence outside [0, 1], or a Source that is
	// too long or not UTF-8.
	ErrInvalidFact = errors.New("graph: invalid fact")

	// ErrInvalidEntity is returned for an entity whose type, aliases or
	// observations cannot be stored.
	ErrInvalidEntity = errors.New("graph: invalid entity")

	// ErrEntityNotFound is returned by calls that need an entity to exist
	// (AddObservations, AddAliases, MergeEntities, Entity).
	ErrEntityNotFound = errors.New("graph: entity not found")

	// ErrFactNotFound is returned by Invalidate and Delete for an unknown
	// fact id.
	ErrFactNotFound = errors.New("graph: fact not found")

	// ErrAliasConflict is returned when an alias is already the name or an
	// alias of another entity.
	ErrAliasConflict = errors.New("graph: alias names another entity")

	// ErrInvalidNQuads is returned by [ParseNQuads] and [Store.Import] for
	// input that is not N-Quads, or whose quads do not follow the mapping
	// documented on [Tx.Export]. Nothing is written.
	ErrInvalidNQuads = errors.New("graph: invalid N-Quads")

	// ErrInvalidCursor is returned for a paging cursor this package did not
	// produce.
	ErrInvalidCursor = errors.New("graph: invalid cursor")

	// ErrInvalidQuery is returned for a query with a bad limit, hop count or
	// direction.
	ErrInvalidQuery = errors.New("graph: invalid query")

	// ErrCorrupt is returned when a stored graph record cannot be decoded.
	ErrCorrupt = errors.New("graph: corrupt record")
)
