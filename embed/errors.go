package embed

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
)

var (
	// ErrInvalidOptions is returned by [NewHashing], [NewStatic],
	// [NewOllama], [NewOpenAI] and [NewCache] for bad options; the message
	// names every bad field.
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

	// ErrInvalidModel is returned, inside a [*ModelError], by [NewStatic]
	// for a model folder whose files are missing or malformed: a
	// model.safetensors whose header is not JSON, names an unknown dtype,
	// or whose shapes, sizes and offsets disagree; an embedding table with
	// a NaN or infinite value; a tokenizer.json whose vocabulary has
	// duplicate or out-of-range ids or lacks its unknown token; a
	// config.json that is not a JSON object; files whose sizes disagree.
	ErrInvalidModel = errors.New("embed: invalid model")

	// ErrUnsupportedModel is returned, inside a [*ModelError], by
	// [NewStatic] for a well-formed model this package cannot run: a
	// tokenizer component it does not implement (see
	// [ErrUnknownComponent]), an added token with an option it does not
	// implement (single_word, lstrip or rstrip on a non-special one), or a
	// tensor dtype other than those [Static] documents.
	ErrUnsupportedModel = errors.New("embed: unsupported model")

	// ErrUnknownModel is returned by [Pull], [ModelDir] and [OpenModel]
	// for a name that is neither a model this package knows (see [Pull])
	// nor a Hugging Face repository "org/name", optionally with
	// "@revision"; and by the [Provider] of [NewOllama] when the server
	// has no model of the configured name (it answers 404).
	ErrUnknownModel = errors.New("embed: unknown model")

	// ErrModelNotPulled is returned by [ModelDir] and [OpenModel] when the
	// model of that name has not been pulled into the models folder, or
	// its pull did not complete: run [Pull] (engram model pull NAME).
	ErrModelNotPulled = errors.New("embed: model not pulled")

	// ErrChecksum is returned by [Pull] when a downloaded file's size,
	// SHA-256 or git blob id differs from the one expected for it (pinned
	// by this package, recorded in the model's lock file, or reported by
	// the Hub). Nothing of that file is left in place.
	ErrChecksum = errors.New("embed: checksum mismatch")

	// ErrLockMismatch is returned by [Pull] when the Hub reports, for a
	// revision, files whose sizes or checksums differ from those pinned by
	// this package or recorded in the lock file of an earlier pull of the
	// same revision. Nothing is downloaded and the pulled model is left
	// as it was.
	ErrLockMismatch = errors.New("embed: model lock mismatch")

	// ErrHub is returned by [Pull] when the Hub answers a request with an
	// error status (a missing repository, revision or file; a gated model
	// without a token) or with a response it cannot use.
	ErrHub = errors.New("embed: hub request failed")

	// ErrUnknownComponent is returned, inside a [*ComponentError] inside a
	// [*ModelError], by [NewStatic] for a tokenizer.json whose model,
	// normalizer or pre-tokenizer is of a type this package does not
	// implement (for example a "BPE" model or a "Split" pre-tokenizer),
	// or that uses an option of it this package does not implement. Such
	// errors also wrap [ErrUnsupportedModel].
	ErrUnknownComponent = errors.New("embed: unknown tokenizer component")
)

// ComponentError names the part of a tokenizer.json that [NewStatic]
// cannot run. It wraps [ErrUnknownComponent] and [ErrUnsupportedModel].
type ComponentError struct {
	// Component is "model", "normalizer", "pre_tokenizer" or
	// "added_tokens".
	Component string
	// Type is the component's "type" ("BPE", "Split", ...), also
	// for an unsupported option of a known type ("Replace"), or an added
	// token's content.
	Type string
	// Detail says what is unsupported when the type itself is known;
	// empty otherwise.
	Detail string
}

// Error returns "embed: unknown tokenizer component: <Component> <Type>",
// then ": <Detail>" if there is one.
func (e *ComponentError) Error() string {
	s := ErrUnknownComponent.Error() + ": " + e.Component + " " + strconv.Quote(e.Type)
	if e.Detail != "" {
		s += ": " + e.Detail
	}
	return s
}

// Unwrap returns [ErrUnknownComponent] and [ErrUnsupportedModel].
func (e *ComponentError) Unwrap() []error { return []error{ErrUnknownComponent, ErrUnsupportedModel} }

// ModelError reports which file of a model folder [NewStatic] could not
// use, and why. Err wraps [ErrInvalidModel] or [ErrUnsupportedModel], and
// also the underlying error when there is one (fs.ErrNotExist for a
// missing file), so errors.Is works with each.
type ModelError struct {
	// File is the path of the offending file.
	File string
	// Err describes the problem.
	Err error
}

// Error returns "embed: model file <File>: <Err>", with the "embed: " of
// the sentinels inside Err left out, so that the chain names the package
// once: "embed: model file m/config.json: not a JSON object: invalid model".
func (e *ModelError) Error() string {
	return "embed: model file " + e.File + ": " + withoutPrefix(e.Err.Error(), "embed: ")
}

// chainError is err under what, like fmt.Errorf("%s: %w", what, err),
// with the "embed: " of the sentinels inside err left out: "embed ollama:
// text 0: unknown model: ...", the package named once.
type chainError struct {
	what string
	err  error
}

func (e *chainError) Error() string { return e.what + ": " + withoutPrefix(e.err.Error(), "embed: ") }
func (e *chainError) Unwrap() error { return e.err }

// withoutPrefix drops prefix where it starts s or a wrapped part of it
// (after ": ").
func withoutPrefix(s, prefix string) string {
	s = strings.TrimPrefix(s, prefix)
	return strings.ReplaceAll(s, ": "+prefix, ": ")
}

// Unwrap returns Err.
func (e *ModelError) Unwrap() error { return e.Err }

// joinInvalid wraps every option error in errs with [ErrInvalidOptions], or
// returns nil for none.
func joinInvalid(errs []error) error {
	if len(errs) == 0 {
		return nil
	}
	return fmt.Errorf("%w: %w", ErrInvalidOptions, errors.Join(errs...))
}
