package kv

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
)

// File modes.
//
// Badger creates its tables, logs, DISCARD and LOCK with mode 0666, less
// the process's umask: 0644 with the usual 022, readable by every local
// user when the directory lets them in (issue 26: a store opened in an
// existing 0755 directory). It takes no mode option, and the umask is
// the whole process's (changing it would race every other goroutine
// creating files), so kv sets the mode through the directory instead:
//
//   - On Linux it gives the store's directory a default POSIX ACL of
//     owner-only (user::rwx, group::---, other::---). A file created in a
//     directory with a default ACL gets the mode it asks for masked by
//     that ACL, and the umask is not applied: Badger's 0666 becomes 0600,
//     for every file it creates from then on, in this process or another.
//   - Where that is not possible (another system, a file system without
//     ACLs), a directory that grants others any access is made 0700, so
//     that what Badger creates there is out of their reach whatever its
//     mode.
//   - At every Open the files already there are checked: one that others
//     may read or write is made 0600, with a warning through the store's
//     logger naming it.
//
// A read-only open changes nothing and only warns.

// setDefaultACL is setOwnerOnlyACL (filemode_linux.go); a test seam.
var setDefaultACL = setOwnerOnlyACL

// storeFileMode is the mode of every file of a store.
const storeFileMode = 0o600

// secureDir applies the above to dir before Badger opens it; log may be
// nil. Failures to tighten are warnings, never errors: the store's data
// is no less safe than before.
func secureDir(dir string, log *slog.Logger, readOnly bool) {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	loose, modes := looseFiles(dir)
	if len(loose) > 0 {
		verb := "made 0600"
		if readOnly {
			verb = "left as they are (the store is open read-only)"
		}
		log.Warn("kv: store files were readable or writable by other users; "+verb,
			"dir", dir, "files", strings.Join(modes, ", "))
		if !readOnly {
			for _, name := range loose {
				if err := os.Chmod(filepath.Join(dir, name), storeFileMode); err != nil {
					log.Warn("kv: cannot make a store file 0600", "file", filepath.Join(dir, name), "err", err)
				}
			}
		}
	}
	if readOnly {
		return
	}
	err := setDefaultACL(dir)
	if err == nil {
		return
	}
	fi, serr := os.Stat(dir)
	if serr != nil || fi.Mode().Perm()&0o077 == 0 {
		return
	}
	if cerr := os.Chmod(dir, fi.Mode().Perm()&0o700); cerr != nil {
		log.Warn("kv: new store files may be readable by other users: the directory takes no default ACL and cannot be made 0700",
			"dir", dir, "acl", err, "err", cerr)
		return
	}
	log.Warn("kv: the store's directory was open to other users and takes no default ACL; made it 0700 so that new files are out of their reach",
		"dir", dir, "was", fi.Mode().Perm().String(), "acl", err)
}

// looseFiles returns the names of the regular files of dir that others
// may read or write, and the same with their modes.
func looseFiles(dir string) (loose, modes []string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, nil
	}
	for _, e := range entries {
		if !e.Type().IsRegular() {
			continue
		}
		fi, err := e.Info()
		if err != nil {
			continue
		}
		if fi.Mode().Perm()&0o077 != 0 {
			loose = append(loose, e.Name())
			modes = append(modes, fmt.Sprintf("%s (%s)", e.Name(), fi.Mode().Perm()))
		}
	}
	return loose, modes
}

// errNoACL says that default ACLs are not available here.
var errNoACL = errors.New("default ACLs are not supported here")
