package bench

import "errors"

var (
	// ErrTruncated is returned by [ReadFvecs] and [ReadIvecs] (and so by
	// [LoadDir]) when the input ends inside a vector: in the middle of its
	// dimension word or before all of its values.
	ErrTruncated = errors.New("bench: truncated vector file")

	// ErrCorrupt is returned by [ReadFvecs] and [ReadIvecs] (and so by
	// [LoadDir]) for input that is not a TEXMEX vector file: a dimension
	// outside [1, MaxDim], or vectors of different dimensions in one file.
	ErrCorrupt = errors.New("bench: corrupt vector file")

	// ErrDimensionMismatch is returned by [WriteFvecs] and [WriteIvecs] for
	// rows of different or zero length, and by [LoadDir] when the base and
	// query vectors differ in dimension.
	ErrDimensionMismatch = errors.New("bench: dimension mismatch")

	// ErrNoDataset is returned by [LoadDir] when the directory does not hold
	// exactly one *_base.fvecs file with its *_query.fvecs beside it.
	ErrNoDataset = errors.New("bench: no dataset in directory")

	// ErrInvalidDataset is returned by [LoadDir], [Synthetic] and [Run] for
	// data that cannot be benchmarked under cosine similarity: no base or
	// query vectors, a zero or non-finite vector, or a ground-truth file whose
	// rows or ids do not match the vectors.
	ErrInvalidDataset = errors.New("bench: invalid dataset")

	// ErrInvalidSpec is returned by [Synthetic] for a generator spec it cannot
	// parse: an unknown key, a repeated key, a value that is not a number, or
	// a number out of range. The message names every problem.
	ErrInvalidSpec = errors.New("bench: invalid synthetic spec")

	// ErrInvalidOptions is returned by [Run] given bad [Options], and by
	// [RunLoad] and [Verify] given bad [LoadOptions] or a base URL that is
	// not http(s)://HOST:PORT; the message names every bad field.
	ErrInvalidOptions = errors.New("bench: invalid options")

	// ErrUnknownSystem is returned by [Run] for a system name not in
	// [SystemNames].
	ErrUnknownSystem = errors.New("bench: unknown system")

	// ErrNotLoopback is returned by [RunLoad] and [Verify] for a server
	// that is not on a loopback address: a load benchmark must not hit
	// someone else's server. A connection whose address resolves off the
	// loopback fails the same way.
	ErrNotLoopback = errors.New("bench: not a loopback address")

	// ErrLoadFailed is wrapped by [LoadResult.Err] and [Verification.Err]
	// when a load run had failed requests, or acknowledged appends that
	// could not be read back.
	ErrLoadFailed = errors.New("bench: load run failed")

	// ErrInvalidLongMemEval is returned by [LoadLongMemEval] for input that
	// is not a LongMemEval file (not a JSON array of questions, a date it
	// cannot read, haystack lists of different lengths, a role other than
	// user or assistant), and by [RunLongMemEval] when no question can be
	// scored.
	ErrInvalidLongMemEval = errors.New("bench: invalid LongMemEval data")

	// ErrUnavailable is returned when a peer cannot run on this machine: the
	// hnswlib peer without a python3 that imports hnswlib and numpy. [Run]
	// does not fail on it; it records the system in [Report.Skipped].
	ErrUnavailable = errors.New("bench: system unavailable")
)
