package kv

import (
	"errors"
	"strings"
	"testing"
)

// nilDeref returns what recover yields after a nil pointer dereference.
func nilDeref() (p any) {
	defer func() { p = recover() }()
	var m *struct{ n int }
	_ = m.n
	return nil
}

// TestRecoveredIsClean: a panic met while reading damaged files becomes
// the sentinel naming the file, without the Go runtime's text ("invalid
// memory address or nil pointer dereference"), which says nothing about
// the file (issue 26 item 14).
func TestRecoveredIsClean(t *testing.T) {
	for _, tc := range []struct {
		p    any
		want string
	}{
		{nilDeref(), "damaged"},
		{"Assert failed", "Assert failed"},
		{"Table ID: 4\nBlock ID: 2\n== Recovered ==\n", "Table ID: 4)"},
	} {
		for _, sentinel := range []error{ErrCorrupt, ErrBadBackup} {
			err := recovered(sentinel, "/s/000001.sst", tc.p)
			msg := err.Error()
			if !errors.Is(err, sentinel) || !strings.Contains(msg, "/s/000001.sst") || !strings.Contains(msg, tc.want) {
				t.Errorf("recovered(%v) = %q; want %v naming the file, saying %q", tc.p, msg, sentinel, tc.want)
			}
			if strings.Contains(msg, "runtime error") || strings.Contains(msg, "nil pointer") {
				t.Errorf("recovered(%v) = %q: the runtime's text", tc.p, msg)
			}
		}
	}
}
