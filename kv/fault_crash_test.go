package kv

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

const crashEnv = "ENGRAM_KV_CRASH_DIR"

// crashHoldEnv, set for the crash child, makes it hold its flushes back
// (Options.holdFlushes), so that several memtables stay in their logs;
// crashAsyncEnv makes it commit with Async durability.
const (
	crashHoldEnv  = "ENGRAM_KV_CRASH_HOLD"
	crashAsyncEnv = "ENGRAM_KV_CRASH_ASYNC"
)

// crashTxnKeys is how many keys each transaction of the crash child writes.
const crashTxnKeys = 8

// crashValue is the value of key j of transaction i: 2 KiB, so that the
// 1 MiB memtables flush and compact often, and every 25th transaction's
// first key 120 KiB, above the value threshold, so that the value log
// takes writes too.
func crashValue(i, j int) []byte {
	n := 2 << 10
	if i%25 == 0 && j == 0 {
		n = 120 << 10
	}
	head := fmt.Sprintf("txn %d key %d|", i, j)
	return append([]byte(head), bytes.Repeat([]byte{byte('a' + (i+j)%26)}, n-len(head))...)
}

func crashKey(i, j int) []byte { return []byte(fmt.Sprintf("t/%08d/%d", i, j)) }

// runCrashChild is the child of TestFaultCrashDuringWrite: it commits
// transactions of crashTxnKeys keys, numbered on from what the store
// holds, and prints "ack N" after each commit returns, until it is killed.
func runCrashChild() bool {
	dir := os.Getenv(crashEnv)
	if dir == "" {
		return false
	}
	ctx := context.Background()
	opts := &Options{MemTableSize: 1 << 20, holdFlushes: os.Getenv(crashHoldEnv) != ""}
	if os.Getenv(crashAsyncEnv) != "" {
		opts.Durability = Async
	}
	db, err := Open(dir, opts)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	start := 0
	_ = db.View(ctx, func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{Prefix: []byte("t/"), KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			start++
		}
		return nil
	})
	for i := start / crashTxnKeys; ; i++ {
		if err := db.Update(ctx, func(tx *Txn) error {
			for j := range crashTxnKeys {
				if err := tx.Set(crashKey(i, j), crashValue(i, j)); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			fmt.Println("error:", err)
			os.Exit(1)
		}
		fmt.Printf("ack %d\n", i)
	}
}

// TestFaultCrashDuringWrite kills a writer with SIGKILL in the middle of a
// stream of synced multi-key transactions, over rounds that continue the
// same store, while its memtables flush and compact: each reopen must
// succeed (a crash is not corruption: the open-time checks accept what a
// crash leaves), every acknowledged transaction must be there whole, no
// transaction may be visible in part, and nothing but the one transaction
// in flight may follow the last acknowledged one. (memory's
// TestDurabilityKill9 checks the same for messages one at a time; this
// one checks atomicity across keys, the value log, and the open-time
// verification after crashes.)
func TestFaultCrashDuringWrite(t *testing.T) {
	kvtest.SkipOnPostgres(t, "kills a child writing and reopens Badger's files")
	dir := t.TempDir()
	rounds := 4
	if testing.Short() || raceEnabled {
		rounds = 2 // .ci/run's fault step runs all four without -race
	}
	for round := range rounds {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), crashEnv+"="+dir)
		out, err := cmd.StdoutPipe()
		if err != nil {
			t.Fatal(err)
		}
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		acked, first := -1, -1
		killAt := 150 + 70*round // transactions into the round
		killed := false
		sc := bufio.NewScanner(out)
		for sc.Scan() {
			n, err := strconv.Atoi(strings.TrimPrefix(sc.Text(), "ack "))
			if err != nil {
				t.Fatalf("child: %s", sc.Text())
			}
			if first < 0 {
				first = n
			}
			acked = n
			if !killed && n-first >= killAt {
				_ = cmd.Process.Signal(syscall.SIGKILL)
				killed = true
			}
		}
		_ = cmd.Wait()
		if !killed {
			t.Fatalf("round %d: the child stopped by itself after ack %d", round, acked)
		}

		db, err := Open(dir, &Options{MemTableSize: 1 << 20})
		if err != nil {
			t.Fatalf("round %d: reopen after kill -9: %v", round, err)
		}
		keys := map[int]int{} // transaction: keys present
		err = db.View(context.Background(), func(tx *Txn) error {
			it := tx.NewIterator(IterOptions{Prefix: []byte("t/")})
			defer it.Close()
			for it.Seek(nil); it.Valid(); it.Next() {
				var i, j int
				if _, err := fmt.Sscanf(string(it.Key()), "t/%d/%d", &i, &j); err != nil {
					return fmt.Errorf("key %q: %v", it.Key(), err)
				}
				v, err := it.Value(nil)
				if err != nil {
					return err
				}
				if !bytes.Equal(v, crashValue(i, j)) {
					return fmt.Errorf("key %q: a value of %d bytes that was never written", it.Key(), len(v))
				}
				keys[i]++
			}
			return nil
		})
		if cerr := db.Close(); err == nil {
			err = cerr
		}
		if err != nil {
			t.Fatalf("round %d: read after kill -9: %v", round, err)
		}
		for i, n := range keys {
			if n != crashTxnKeys {
				t.Errorf("round %d: transaction %d has %d of its %d keys", round, i, n, crashTxnKeys)
			}
			if i > acked+1 {
				t.Errorf("round %d: transaction %d is there, but the last acknowledged was %d", round, i, acked)
			}
		}
		for i := 0; i <= acked; i++ {
			if keys[i] == 0 {
				t.Fatalf("round %d: acknowledged transaction %d is missing", round, i)
			}
		}
		t.Logf("round %d: killed after ack %d; %d transactions on disk, all whole", round, acked, len(keys))
	}
}
