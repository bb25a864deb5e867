package kv

import (
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestFaultDiskFull fills a real 64 MiB tmpfs with a store in a child
// process (see runDiskFullChild): Badger's memtables, tables and value log
// are memory maps, and a write into a map on a full disk is SIGBUS, which
// used to kill the process, and again on every restart while the disk was
// full. The child must end with "ok", not with a signal. Mounting needs
// root (CAP_SYS_ADMIN); elsewhere the test skips, and TestFaultDiskFullGuard
// covers the logic through the free-space seam.
func TestFaultDiskFull(t *testing.T) {
	kvtest.SkipOnPostgres(t, "fills the disk under Badger's memory maps")
	mnt := t.TempDir()
	if err := syscall.Mount("tmpfs", mnt, "tmpfs", 0, "size=64m,mode=0700"); err != nil {
		t.Skipf("cannot mount a tmpfs to fill (%v): needs root with CAP_SYS_ADMIN; TestFaultDiskFullGuard covers the logic", err)
	}
	t.Cleanup(func() {
		if err := syscall.Unmount(mnt, 0); err != nil {
			t.Errorf("unmount %s: %v", mnt, err)
		}
	})
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), diskFullEnv+"="+mnt)
	out, err := cmd.CombinedOutput()
	t.Logf("child:\n%s", out)
	if ws, ok := cmd.ProcessState.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		t.Fatalf("the child was killed by %v", ws.Signal())
	}
	if err != nil || !strings.HasSuffix(string(out), "ok\n") {
		t.Fatalf("child: %v", err)
	}
}
