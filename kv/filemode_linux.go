package kv

import (
	"encoding/binary"
	"fmt"

	"syscall"
)

// setOwnerOnlyACL gives dir the default ACL user::rwx, group::---,
// other::---, in the kernel's xattr format (linux/posix_acl_xattr.h): a
// little-endian version 2 header, then entries of tag, permissions and
// id. Files created in dir then get the mode they ask for masked to the
// owner's bits, whatever the umask.
func setOwnerOnlyACL(dir string) error {
	const (
		aclVersion = 2
		tagUserObj = 0x01
		tagGroup   = 0x04
		tagOther   = 0x20
		noID       = 0xffffffff
	)
	buf := make([]byte, 4, 4+3*8)
	binary.LittleEndian.PutUint32(buf, aclVersion)
	for _, e := range [...]struct{ tag, perm uint16 }{{tagUserObj, 7}, {tagGroup, 0}, {tagOther, 0}} {
		buf = binary.LittleEndian.AppendUint16(buf, e.tag)
		buf = binary.LittleEndian.AppendUint16(buf, e.perm)
		buf = binary.LittleEndian.AppendUint32(buf, noID)
	}
	if err := syscall.Setxattr(dir, "system.posix_acl_default", buf, 0); err != nil {
		return fmt.Errorf("%w: %w", errNoACL, err)
	}
	return nil
}
