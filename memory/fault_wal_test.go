package memory

import (
	"bufio"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestFaultWALDeleted is issue 26's case at the level of messages: a
// writer appending synced messages is killed with SIGKILL, and its
// write-ahead log (.mem), which holds the messages appended since the
// last flush, is deleted. Open replayed what was left and opened without
// them (709 of 800 messages); it must fail with ErrCorrupt naming the log.
func TestFaultWALDeleted(t *testing.T) {
	kvtest.SkipOnPostgres(t, "kills a child and deletes Badger's files")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), crashEnv+"="+dir)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	killed := false
	sc := bufio.NewScanner(out)
	for sc.Scan() {
		n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ack "))
		if err != nil {
			_ = cmd.Process.Kill()
			t.Fatalf("child: %s", sc.Text())
		}
		if !killed && n >= 40 {
			_ = cmd.Process.Signal(syscall.SIGKILL)
			killed = true
		}
	}
	_ = cmd.Wait()
	if !killed {
		t.Fatal("the child stopped by itself")
	}
	mems, _ := filepath.Glob(filepath.Join(dir, "*.mem"))
	if len(mems) == 0 {
		t.Fatal("the killed store has no write-ahead log")
	}
	for _, m := range mems {
		if err := os.Remove(m); err != nil {
			t.Fatal(err)
		}
	}
	st, err := Open(dir, nil)
	if err == nil {
		n := 0
		if infos, ierr := st.Sessions(bg, testScope, SessionsOptions{}); ierr == nil && len(infos) == 1 {
			n = infos[0].Messages
		}
		st.Close()
		t.Fatalf("Open succeeded without the write-ahead log (%d messages left)", n)
	}
	newest := filepath.Base(mems[len(mems)-1])
	if !errors.Is(err, ErrCorrupt) || !strings.Contains(err.Error(), newest) {
		t.Fatalf("Open = %v; want ErrCorrupt naming %s", err, newest)
	}
	t.Logf("Open = %v", err)
}
