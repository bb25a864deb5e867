package memory

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// flipTables copies the closed store in src to a new directory, flips one
// byte in every table file there, at a third of its length plus shift,
// and returns the copy and the tables' names.
func flipTables(t *testing.T, src string, shift int) (dir string, names []string) {
	t.Helper()
	dir = t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(src)); err != nil {
		t.Fatal(err)
	}
	ssts, err := filepath.Glob(filepath.Join(dir, "*.sst"))
	if err != nil || len(ssts) == 0 {
		t.Fatalf("no tables in %s (%v)", dir, err)
	}
	for _, p := range ssts {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		b[(len(b)/3+shift)%len(b)] ^= 0x5a
		if err := os.WriteFile(p, b, 0o600); err != nil {
			t.Fatal(err)
		}
		names = append(names, filepath.Base(p))
	}
	return dir, names
}

// TestFaultCorruptTable damages the store's table files: Open must fail
// with ErrCorrupt naming the file, where it used to read the damaged data
// as good (altered or missing messages, negative counts).
//
// Tables are Snappy-compressed, and a flipped byte can decode to the very
// same block (a copy's offset moved to another place holding the same
// text: about one flip in seven here, the messages being alike). That is
// no damage, so a try may also end with every message intact; but one of
// a few tries at other offsets must be ErrCorrupt.
func TestFaultCorruptTable(t *testing.T) {
	kvtest.SkipOnPostgres(t, "damages Badger's table files")
	pristine := t.TempDir()
	st, err := Open(pristine, nil)
	if err != nil {
		t.Fatal(err)
	}
	sess := st.Session(testScope)
	text := func(i int) string { return fmt.Sprintf("message %d about the Lisbon offsite and account 3942", i) }
	const n = 300
	for i := range n {
		if err := sess.Append(bg, user(text(i))); err != nil {
			t.Fatal(err)
		}
	}
	if err := st.Close(); err != nil { // flushes the memtable to a table
		t.Fatal(err)
	}

	for try := range 8 {
		dir, names := flipTables(t, pristine, 101*try)
		st, err := Open(dir, nil)
		if err == nil {
			msgs, rerr := st.Session(testScope).Messages(bg, MessagesOptions{Limit: 1000})
			st.Close()
			intact := rerr == nil && len(msgs) == n
			for i := 0; intact && i < n; i++ {
				intact = msgs[i].Content == text(i)
			}
			if !intact {
				t.Fatalf("try %d: Open of a store with damaged tables %v succeeded and read %d messages (%v), not the %d written", try, names, len(msgs), rerr, n)
			}
			continue // the flip decoded to the same data
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
		return
	}
	t.Fatal("8 flips at different offsets all read back intact: the damage is never seen")
}
