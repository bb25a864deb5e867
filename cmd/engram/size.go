package main

import (
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/dustin/go-humanize"
)

// errBadSize is the error of a size flag given something that is not a
// size of zero or more bytes.
var errBadSize = errors.New("not a size in bytes (such as 256MiB, 1GiB or 0)")

// byteSize is a flag holding a size in bytes: a number with an optional
// unit, binary (KiB, MiB, GiB) or decimal (kB, MB, GB), as go-humanize
// parses it; 0 means the default of whatever the flag sets.
type byteSize int64

// String formats the size for help texts: binary units, "0" for zero.
func (s *byteSize) String() string {
	if *s == 0 {
		return "0"
	}
	return strings.ReplaceAll(humanize.IBytes(uint64(*s)), " ", "")
}

// Set parses a size; a negative one, one past int64 and words are
// errBadSize.
func (s *byteSize) Set(v string) error {
	// ParseBytes refuses a sign: "-1" is an error, not a huge size.
	n, err := humanize.ParseBytes(strings.TrimSpace(v))
	if err != nil || n > math.MaxInt64 {
		return fmt.Errorf("%q: %w", v, errBadSize)
	}
	*s = byteSize(n)
	return nil
}

// Type names the flag's value in help texts.
func (s *byteSize) Type() string { return "size" }
