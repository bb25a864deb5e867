//go:build !linux

package kv

// setOwnerOnlyACL is not available outside Linux: secureDir falls back
// to the directory's mode.
func setOwnerOnlyACL(string) error { return errNoACL }
