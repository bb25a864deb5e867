package index

import "errors"

var (
	// ErrDimensionMismatch is returned by every call given a vector whose
	// length differs from the index's dimension, or an empty vector, and by
	// [Dot] for vectors of unequal or zero length.
	ErrDimensionMismatch = errors.New("index: dimension mismatch")

	// ErrZeroVector is returned when a vector to be added has zero norm (or
	// a NaN or infinite component), so it has no direction to compare.
	ErrZeroVector = errors.New("index: zero or non-finite vector")

	// ErrInvalidOptions is returned by constructors given bad options; the
	// message names every bad field.
	ErrInvalidOptions = errors.New("index: invalid options")

	// ErrCorrupt is returned by decoders for input that is not a valid
	// encoding: wrong magic number, unknown version, truncated or
	// inconsistent data.
	ErrCorrupt = errors.New("index: corrupt encoding")
)
