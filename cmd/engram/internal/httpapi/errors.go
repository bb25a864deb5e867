package httpapi

import "errors"

// Errors of [LoadTokens] and [ParseTokens].
var (
	// ErrInvalidTokens is returned for a tokens file that is not valid JSON
	// of the documented shape, or holds an empty, short, malformed or
	// duplicate token, or a tenant that is not a valid id. The error names
	// every bad entry by index, never by its token.
	ErrInvalidTokens = errors.New("httpapi: invalid tokens file")
	// ErrTokensFileMode is returned by [LoadTokens] for a tokens file that
	// its group or other users may read or write: anyone who can read it can
	// act as every tenant in it.
	ErrTokensFileMode = errors.New("httpapi: tokens file is accessible by group or others")
)

// ErrInvalidOptions is returned by [New] for bad options; the error names
// every bad field.
var ErrInvalidOptions = errors.New("httpapi: invalid options")
