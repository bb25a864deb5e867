package kv

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
)

// prepareOpen does what must happen before Badger opens dir: undo an
// unfinished bulk load (bulk.go), or, for a read-only open, which may
// write nothing, refuse a store that needs writing first.
//
// Badger's read-only mode opens no write-ahead log it would have to cut:
// every .mem file left by a session that was not closed is preallocated
// past its records, so Badger refuses it (ErrTruncateNeeded) after its
// goroutines started, and a failed badger.Open leaks some of them. So the
// .mem files are looked for here: after a clean Close there are none.
func prepareOpen(dir string, readOnly bool) error {
	if !readOnly {
		return recoverBulk(dir)
	}
	if _, err := os.Stat(dir); err != nil {
		return fmt.Errorf("kv: open read-only: %w", err)
	}
	if _, err := os.Lstat(filepath.Join(dir, bulkMarker)); err == nil {
		return fmt.Errorf("%w: %s: a bulk load did not finish, and a read-write open removes what it wrote", ErrNeedsRecovery, dir)
	} else if !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("kv: open read-only: %w", err)
	}
	nums, _, err := memLogs(dir)
	if err != nil {
		return err
	}
	if len(nums) > 0 {
		names := make([]string, len(nums))
		for i, n := range nums {
			names[i] = memName(n)
		}
		return fmt.Errorf("%w: %s was not closed: its write-ahead logs (%s) need replaying, which writes", ErrNeedsRecovery, dir, strings.Join(names, ", "))
	}
	return nil
}
