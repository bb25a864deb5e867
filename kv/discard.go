package kv

import (
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math"
	"os"
	"path/filepath"
)

// discardFile is Badger's value-log GC hint file (badger v4.9.6,
// discard.go): an array of 16-byte slots, each a big-endian file id and
// the bytes of that value-log file known to be garbage. The slots in use
// come first; the first slot with file id 0 ends them.
const discardFile = "DISCARD"

// checkDiscard reports what is wrong with the DISCARD file in dir, or ""
// when Badger can use it (or it is missing, or empty: Badger then starts a
// new one). Badger reads it blindly, and some damage hangs the store: the
// value-log GC (RunValueLogGC → valueLog.pickLog) takes the slot with the
// most garbage, and when its file is gone clears the slot by looking its
// id up, as a uint32, among the slots, and picks again. A slot whose id
// does not fit in 32 bits, or a second slot with the same id, is never
// cleared, so pickLog loops for ever holding the GC (issue 26). A size
// that is not whole slots, or no free slot, makes Badger write outside
// its map or read garbage as hints; a count of 2^63 bytes or more is
// negative to pickLog and blocks every later GC.
func checkDiscard(dir string) (problem string, err error) {
	path := filepath.Join(dir, discardFile)
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return "", nil
	}
	if err != nil {
		return "", fmt.Errorf("kv: stat %s: %w", discardFile, err)
	}
	if !fi.Mode().IsRegular() {
		return "not a regular file", nil
	}
	b, err := os.ReadFile(path)
	if err != nil {
		return "", fmt.Errorf("kv: read %s: %w", discardFile, err)
	}
	return discardProblem(b), nil
}

// discardProblem checks the slots of a DISCARD file's contents b.
func discardProblem(b []byte) string {
	const slot = 16
	switch {
	case len(b) == 0:
		return ""
	case len(b)%slot != 0:
		return fmt.Sprintf("%d bytes, not a whole number of %d-byte slots", len(b), slot)
	}
	seen := map[uint64]bool{}
	for off := 0; off < len(b); off += slot {
		fid := binary.BigEndian.Uint64(b[off:])
		discard := binary.BigEndian.Uint64(b[off+8:])
		switch {
		case fid == 0:
			return "" // the end of the slots in use
		case fid > math.MaxUint32:
			return fmt.Sprintf("slot %d names value-log file %d, above Badger's 32-bit file ids", off/slot, fid)
		case seen[fid]:
			return fmt.Sprintf("slot %d names value-log file %d a second time", off/slot, fid)
		case discard > math.MaxInt64:
			return fmt.Sprintf("slot %d counts %d bytes of garbage, more than a file holds", off/slot, discard)
		}
		seen[fid] = true
	}
	return "no free slot (Badger keeps one after the slots in use)"
}

// repairDiscard removes a damaged DISCARD file before Badger opens the
// store; Badger then starts an empty one, as it does for a new store.
//
// Nothing is lost but hints. DISCARD is read only by the value-log GC, to
// choose which value-log file to rewrite (valueLog.pickLog), and the
// rewrite checks every entry of that file against the LSM tree itself
// (valueLog.rewrite, discardEntry): it keeps every live value, whatever
// the hint said. Without the hints the GC only picks no file until
// compactions count new garbage, so an erased value in an old value-log
// file may stay on disk longer. Refusing to open instead would leave a
// store whose data is whole unusable, for a remedy (deleting the file)
// that is this one.
//
// A DISCARD that is not a regular file is refused with [ErrCorrupt]:
// removing a directory or following a link is not for Open to do.
func repairDiscard(dir string, log *slog.Logger) error {
	if dir == "" {
		return nil
	}
	problem, err := checkDiscard(dir)
	if err != nil || problem == "" {
		return err
	}
	path := filepath.Join(dir, discardFile)
	if problem == "not a regular file" {
		return corrupt(path, "%s", problem)
	}
	if err := os.Remove(path); err != nil {
		return fmt.Errorf("kv: remove damaged %s: %w", path, err)
	}
	if log != nil {
		log.Warn("kv: removed a damaged value-log GC hint file; Badger starts a new one (no data is lost)",
			"file", path, "problem", problem)
	}
	return nil
}
