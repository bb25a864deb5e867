// Package backupfile is the layout of the file engram backup writes and
// engram restore reads, written by the command and by the HTTP API's
// GET /v1/admin/backup alike, so a backup taken either way restores the
// same way.
//
// A backup file is [Magic], then the stream of memory.Store.Backup:
// Badger's, frames of an 8-byte little-endian length and a protobuf list
// of entries, sealed with AES-GCM under a key drawn from the store's when
// the store is encrypted. The magic line lets restore refuse any other
// file at once, and names the layout's version.
package backupfile

import (
	"context"
	"io"

	"github.com/engramdb/engram/memory"
)

// Magic is the first line of every backup file.
const Magic = "engram-backup 1\n"

// Write writes a backup of st to w: [Magic], then st's backup stream. It
// streams: nothing is held in memory beyond the storage layer's frames.
func Write(ctx context.Context, st *memory.Store, w io.Writer) error {
	if _, err := io.WriteString(w, Magic); err != nil {
		return err
	}
	return st.Backup(ctx, w)
}
