package kv

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"sync/atomic"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// TestFaultDiskFullGuard stands in a full disk through the free-space seam:
// below the reserve, writes fail with ErrDiskFull before anything is
// written while reads go on; once space returns, writes work again without
// a reopen; and a store on a full disk is not opened (ErrDiskFull, where
// Badger would write through its maps and die of SIGBUS).
func TestFaultDiskFullGuard(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's free-space reserve (the free seam)")
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir, &Options{MemTableSize: 1 << 20})
	var free atomic.Int64
	free.Store(1 << 40)
	db.free = func(string) (int64, bool) { return free.Load(), true }
	set := func(k string) (ran bool, err error) {
		err = db.Update(ctx, func(tx *Txn) error {
			ran = true
			return tx.Set([]byte(k), []byte("v-"+k))
		})
		return ran, err
	}
	if _, err := set("a"); err != nil {
		t.Fatal(err)
	}
	free.Store(db.reserve - 1)
	if ran, err := set("b"); !errors.Is(err, ErrDiskFull) || ran {
		t.Fatalf("write below the reserve = %v (function ran: %v), want ErrDiskFull before it runs", err, ran)
	}
	if err := db.Compact(ctx); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Compact below the reserve = %v, want ErrDiskFull", err)
	}
	if err := db.View(ctx, func(tx *Txn) error {
		if v, err := tx.Get([]byte("a")); err != nil || string(v) != "v-a" {
			return fmt.Errorf("Get(a) = %q, %v", v, err)
		}
		if ok, err := tx.Has([]byte("b")); ok || err != nil {
			return fmt.Errorf("Has(b) = %v, %v: the refused write is visible", ok, err)
		}
		return nil
	}); err != nil {
		t.Fatalf("read on a full disk: %v", err)
	}
	free.Store(db.reserve)
	if _, err := set("b"); err != nil {
		t.Fatalf("write once space is back: %v", err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}

	old := freeSpace
	freeSpace = func(string) (int64, bool) { return 1 << 20, true }
	_, err := Open(dir, &Options{MemTableSize: 1 << 20})
	freeSpace = old
	if !errors.Is(err, ErrDiskFull) {
		t.Fatalf("Open on a full disk = %v, want ErrDiskFull", err)
	}
	db = openTest(t, dir, &Options{MemTableSize: 1 << 20})
	if err := db.View(ctx, func(tx *Txn) error {
		_, err := tx.Get([]byte("b"))
		return err
	}); err != nil {
		t.Fatalf("after reopen: %v", err)
	}
}

const diskFullEnv = "ENGRAM_KV_DISKFULL_DIR"

// diskFullValue is the value of the i-th key of the disk-full child:
// incompressible, so that tables take real space, and every tenth above
// the value threshold, so that the value log (mapped too) takes some.
func diskFullValue(i int) []byte {
	n := 32 << 10
	if i%10 == 9 {
		n = 150 << 10
	}
	rng := rand.New(rand.NewPCG(uint64(i), 7))
	v := make([]byte, n)
	for j := 0; j+8 <= n; j += 8 {
		binary.LittleEndian.PutUint64(v[j:], rng.Uint64())
	}
	return v
}

// fillDisk writes a file of up to n bytes (less if the disk fills first).
func fillDisk(path string, n int64) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	chunk := make([]byte, 1<<20)
	for n > 0 {
		m := min(n, int64(len(chunk)))
		if _, err := f.Write(chunk[:m]); err != nil {
			break // ENOSPC: as full as it gets
		}
		n -= m
	}
	return f.Close()
}

// runDiskFullChild is the child of TestFaultDiskFull. On the small
// filesystem at $ENGRAM_KV_DISKFULL_DIR it writes until the store refuses
// with ErrDiskFull, reads everything back, frees space and writes again
// without reopening, then fills the disk again, reopens (ErrDiskFull), frees
// space and reopens. It prints what happens and "ok" at the end; a SIGBUS
// kills it instead.
func runDiskFullChild() bool {
	mnt := os.Getenv(diskFullEnv)
	if mnt == "" {
		return false
	}
	fail := func(format string, args ...any) {
		fmt.Printf("error: "+format+"\n", args...)
		os.Exit(1)
	}
	ctx := context.Background()
	dir, filler := filepath.Join(mnt, "store"), filepath.Join(mnt, "filler")
	opts := &Options{MemTableSize: 1 << 20}
	db, err := Open(dir, opts)
	if err != nil {
		fail("open: %v", err)
	}
	set := func(i int) error {
		return db.Update(ctx, func(tx *Txn) error {
			return tx.Set([]byte(fmt.Sprintf("key/%06d", i)), diskFullValue(i))
		})
	}
	readAll := func(n int) {
		if err := db.View(ctx, func(tx *Txn) error {
			for i := range n {
				v, err := tx.Get([]byte(fmt.Sprintf("key/%06d", i)))
				if err != nil || string(v) != string(diskFullValue(i)) {
					return fmt.Errorf("key %d: %d bytes, %v", i, len(v), err)
				}
			}
			return nil
		}); err != nil {
			fail("read: %v", err)
		}
	}
	freeNow := func() int64 { n, _ := diskFree(mnt); return n }

	// Leave the store about 24 MiB above its reserve, and let it fill that.
	if err := fillDisk(filler, freeNow()-db.reserve-24<<20); err != nil {
		fail("filler: %v", err)
	}
	fmt.Printf("reserve %s; free %s after the filler\n", mib(db.reserve), mib(freeNow()))
	n := 0
	for ; ; n++ {
		err := set(n)
		if errors.Is(err, ErrDiskFull) {
			fmt.Printf("write %d: %v\n", n, err)
			break
		}
		if err != nil {
			fail("write %d: %v", n, err)
		}
		if n > 10000 {
			fail("the disk never filled")
		}
	}
	readAll(n)
	fmt.Printf("read back all %d acknowledged writes on the full disk\n", n)

	if err := os.Remove(filler); err != nil {
		fail("remove filler: %v", err)
	}
	if err := set(n); err != nil {
		fail("write after freeing space, same DB: %v", err)
	}
	n++
	fmt.Printf("space freed (%s free): writes work again without a reopen\n", mib(freeNow()))

	if err := fillDisk(filler, freeNow()-db.reserve/2); err != nil {
		fail("filler: %v", err)
	}
	if err := set(n); !errors.Is(err, ErrDiskFull) {
		fail("write on the refilled disk = %v, want ErrDiskFull", err)
	}
	if err := db.Close(); err != nil {
		fail("close on a full disk: %v", err)
	}
	if db, err := Open(dir, opts); !errors.Is(err, ErrDiskFull) {
		if err == nil {
			db.Close()
		}
		fail("open on a full disk = %v, want ErrDiskFull", err)
	} else {
		fmt.Printf("open on a full disk (%s free): %v\n", mib(freeNow()), err)
	}
	if err := os.Remove(filler); err != nil {
		fail("remove filler: %v", err)
	}
	if db, err = Open(dir, opts); err != nil {
		fail("open after freeing space: %v", err)
	}
	readAll(n)
	if err := set(n); err != nil {
		fail("write after reopen: %v", err)
	}
	if err := db.Close(); err != nil {
		fail("close: %v", err)
	}
	fmt.Printf("reopened with space: all %d writes read back, writes work\nok\n", n)
	return true
}

// TestDiskFullRefusesDeletes: below the reserve a deletion is a write
// like any other (tombstones go through the logs and the maps): Delete
// and DeletePrefix fail with ErrDiskFull and delete nothing, as the README
// says; at the reserve they work.
func TestDiskFullRefusesDeletes(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's free-space reserve (the free seam)")
	ctx := context.Background()
	db := openTest(t, t.TempDir(), &Options{MemTableSize: 1 << 20})
	if err := db.Update(ctx, func(tx *Txn) error {
		for _, k := range []string{"u/a", "u/b", "v/a"} {
			if err := tx.Set([]byte(k), []byte("x")); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var free atomic.Int64
	db.free = func(string) (int64, bool) { return free.Load(), true }
	free.Store(db.reserve - 1)
	if n, err := db.DeletePrefix(ctx, []byte("u/"), nil); !errors.Is(err, ErrDiskFull) || n != 0 {
		t.Errorf("DeletePrefix below the reserve = %d, %v; want 0, ErrDiskFull", n, err)
	}
	if err := db.Update(ctx, func(tx *Txn) error { return tx.Delete([]byte("v/a")) }); !errors.Is(err, ErrDiskFull) {
		t.Errorf("Delete below the reserve = %v; want ErrDiskFull", err)
	}
	free.Store(db.reserve)
	if n, err := db.DeletePrefix(ctx, []byte("u/"), nil); err != nil || n != 2 {
		t.Errorf("DeletePrefix at the reserve = %d, %v; want 2, nil", n, err)
	}
}
