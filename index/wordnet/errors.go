package wordnet

import "errors"

// ErrCorrupt is returned by [Decode] (and so by [Load]) for input that is
// not a valid table: wrong magic number, unknown version, truncated or
// inconsistent data.
var ErrCorrupt = errors.New("wordnet: corrupt table")
