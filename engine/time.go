package engine

import (
	"fmt"
	"math"
	"time"
)

// The times an int64 of Unix nanoseconds holds: every time the store
// encodes is one. Outside them UnixNano wraps silently (2300-01-01 read back
// as 1715-06-13, issue 12), so they are refused instead.
var (
	minTime = time.Unix(0, math.MinInt64+1)
	maxTime = time.Unix(0, math.MaxInt64)
)

// ValidateTime returns an error wrapping [ErrInvalidTime] for a time the
// store cannot keep exactly, one before 1677-09-21 or after 2262-04-11 (UTC).
// The zero time is valid: every API reads it as "unset".
func ValidateTime(t time.Time) error {
	if !t.IsZero() && (t.Before(minTime) || t.After(maxTime)) {
		return fmt.Errorf("%w: %s", ErrInvalidTime, t.UTC().Format(time.RFC3339Nano))
	}
	return nil
}
