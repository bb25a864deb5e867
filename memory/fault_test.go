package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// flipTables flips one byte in the middle of every table file of a closed
// store and returns their names.
func flipTables(t *testing.T, dir string) []string {
	t.Helper()
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no tables in %s (%v)", dir, err)
	}
	var names []string
	for _, p := range ssts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[len(b)/3] ^= 0x5a
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(p))
	}
	return names
}

// TestFaultCorruptTable damages the store's table files: Open must fail
// with ErrCorrupt naming the file, where it used to read the damaged data
// as good (altered or missing messages, negative counts).
func TestFaultCorruptTable(t *testing.T) {
	dir := t.TempDir()
	st, err := Open(dir, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess := st.Session(testScope)
	for i := range 300 {
		if err := sess.Append(bg, user(fmt.Sprintf("message %d about the Lisbon offsite and account 3942", i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil { // flushes the memtable to a table
		t.Fatal(err)
	}
	names := flipTables(t, dir)

	st, err = Open(dir, nil)
	if err == nil {
		defer st.Close()
		msgs, rerr := st.Session(testScope).Messages(bg, MessagesOptions{Limit: 1000})
		t.Fatalf("Open of a store with damaged tables %v succeeded; Messages = %d messages, %v", names, len(msgs), rerr)
	}
	if !errors.Is(err, ErrCorrupt) {
		t.Fatalf("Open = %v, want ErrCorrupt", err)
	}
	named := false
	for _, n := range names {
		named = named || strings.Contains(err.Error(), n)
	}
	if !named {
		t.Errorf("Open = %v; names none of the damaged files %v", err, names)
	}
}
