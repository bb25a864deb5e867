package bpe

import "errors"

// ErrUnknownEncoding is returned by [Load] for a name it has no rank file
// or pre-tokenizer for.
var ErrUnknownEncoding = errors.New("bpe: unknown encoding")
