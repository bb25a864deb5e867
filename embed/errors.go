package embed

import (
	"errors"
	"fmt"
)

var (
	// ErrInvalidOptions is returned by [NewHashing], [NewOllama], [NewOpenAI]
	// and [NewCache] for bad options; the message names every bad field.
	ErrInvalidOptions = errors.New("embed: invalid options")

	// ErrDimensionMismatch is returned by [Provider.Embed] when a server
	// returns a vector whose length differs from the configured dimension, or
	// from the dimension learned from its first response; and by [Cache.Embed]
	// when the inner [Embedder] returns vectors of a length other than its
	// [Embedder.Dimensions] or of differing lengths within one call.
	ErrDimensionMismatch = errors.New("embed: dimension mismatch")

	// ErrInvalidVector is returned by [Provider.Embed] when a server returns a
	// vector that cannot be used for cosine search: a component that is NaN or
	// infinite, a zero vector, or more than [MaxDimensions] components; and by
	// [Cache.Embed] when the inner [Embedder] returns an empty vector or a
	// number of vectors other than the number of texts it was given.
	ErrInvalidVector = errors.New("embed: invalid vector")

	// ErrCorrupt is returned by [DecodeVector] for bytes that are not a vector
	// written by [AppendVector]: bad magic or version, a length that does not
	// match the header, or a NaN or infinite component. [Cache.Embed] never
	// returns it: it treats a corrupt cache entry as a miss and overwrites it.
	ErrCorrupt = errors.New("embed: corrupt vector encoding")
)

// joinInvalid wraps every option error in errs with [ErrInvalidOptions], or
// returns nil for none.
func joinInvalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}
