package kv

import (
	"bufio"
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/kv/kvtest"
)

func openTest(t testing.TB, dir string, opts *Options) *DB {
	t.Helper()
	db, err := Open(dir, opts)
	if err != nil {
		t.Fatalf("Open: %v", err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// TestModel runs random writes, deletes and reads against a plain map and
// checks that Get and iteration in both directions agree after every step.
func TestModel(t *testing.T) {
	ctx := context.Background()
	for _, b := range testBackends(t) {
		t.Run(b.name, func(t *testing.T) {
			db := b.open(t, &Options{Durability: Async})
			model := map[string]string{}
			rng := rand.New(rand.NewPCG(1, 2))
			key := func() string {
				// Few prefixes, with 0xFF bytes, to exercise prefix bounds.
				p := []string{"a", "ab", "b\xff", "b\xff\xff", "c"}[rng.IntN(5)]
				return fmt.Sprintf("%s/%02d", p, rng.IntN(20))
			}
			for step := range 600 {
				switch op := rng.IntN(10); {
				case op < 5:
					k, v := key(), fmt.Sprint(step)
					if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte(k), []byte(v)) }); err != nil {
						t.Fatal(err)
					}
					model[k] = v
				case op < 7:
					k := key()
					if err := db.Update(ctx, func(tx *Txn) error { return tx.Delete([]byte(k)) }); err != nil {
						t.Fatal(err)
					}
					delete(model, k)
				case op < 8:
					// A failed transaction changes nothing.
					k := key()
					err := db.Update(ctx, func(tx *Txn) error {
						if err := tx.Set([]byte(k), []byte("rolled back")); err != nil {
							return err
						}
						return errors.New("boom")
					})
					if err == nil || err.Error() != "boom" {
						t.Fatalf("Update error = %v, want boom", err)
					}
				default:
					k := key()
					err := db.View(ctx, func(tx *Txn) error {
						v, err := tx.Get([]byte(k))
						want, ok := model[k]
						switch {
						case ok && (err != nil || string(v) != want):
							return fmt.Errorf("Get(%q) = %q, %v; want %q", k, v, err, want)
						case !ok && !errors.Is(err, ErrNotFound):
							return fmt.Errorf("Get(%q) = %q, %v; want ErrNotFound", k, v, err)
						}
						return nil
					})
					if err != nil {
						t.Fatal(err)
					}
				}
				if step%50 == 0 {
					checkScan(t, db, model)
				}
			}
			checkScan(t, db, model)
		})
	}
}

// countKeys returns how many keys start with prefix.
func countKeys(t testing.TB, db *DB, prefix []byte) int {
	t.Helper()
	n := 0
	if err := db.View(context.Background(), func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{Prefix: prefix, KeysOnly: true})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			n++
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return n
}

func checkScan(t *testing.T, db *DB, model map[string]string) {
	t.Helper()
	for _, prefix := range []string{"", "a", "ab", "b\xff", "b\xff\xff", "c", "d"} {
		var want []string
		for k, v := range model {
			if strings.HasPrefix(k, prefix) {
				want = append(want, k+"="+v)
			}
		}
		sort.Strings(want)
		for _, reverse := range []bool{false, true} {
			var got []string
			err := db.View(context.Background(), func(tx *Txn) error {
				it := tx.NewIterator(IterOptions{Prefix: []byte(prefix), Reverse: reverse})
				defer it.Close()
				for it.Seek(nil); it.Valid(); it.Next() {
					v, err := it.Value(nil)
					if err != nil {
						return err
					}
					got = append(got, string(it.Key())+"="+string(v))
				}
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			if reverse {
				for i, j := 0, len(got)-1; i < j; i, j = i+1, j-1 {
					got[i], got[j] = got[j], got[i]
				}
			}
			if fmt.Sprint(got) != fmt.Sprint(want) {
				t.Fatalf("scan prefix %q reverse=%v:\n got %q\nwant %q", prefix, reverse, got, want)
			}
		}
	}
}

func TestUpdatePanicRollsBack(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()
		func() {
			defer func() {
				if r := recover(); r != "user panic" {
					t.Fatalf("recovered %v, want the user's panic re-raised", r)
				}
			}()
			_ = db.Update(ctx, func(tx *Txn) error {
				if err := tx.Set([]byte("k"), []byte("v")); err != nil {
					return err
				}
				_ = tx.NewIterator(IterOptions{}) // left open on purpose
				panic("user panic")
			})
		}()
		err := db.View(ctx, func(tx *Txn) error {
			_, err := tx.Get([]byte("k"))
			return err
		})
		if !errors.Is(err, ErrNotFound) {
			t.Fatalf("after panic Get = %v, want ErrNotFound", err)
		}
	})
}

func TestCancelledContextWritesNothing(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx, cancel := context.WithCancel(context.Background())
		err := db.Update(ctx, func(tx *Txn) error {
			cancel()
			return tx.Set([]byte("k"), []byte("v"))
		})
		if !errors.Is(err, context.Canceled) {
			t.Fatalf("Update = %v, want context.Canceled", err)
		}
		if err := db.View(context.Background(), func(tx *Txn) error {
			_, err := tx.Get([]byte("k"))
			return err
		}); !errors.Is(err, ErrNotFound) {
			t.Fatalf("Get = %v, want ErrNotFound", err)
		}
	})
}

func TestReadOnlyAndBadKeys(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()
		err := db.View(ctx, func(tx *Txn) error { return tx.Set([]byte("k"), nil) })
		if !errors.Is(err, ErrReadOnly) {
			t.Fatalf("Set in View = %v, want ErrReadOnly", err)
		}
		err = db.Update(ctx, func(tx *Txn) error { return tx.Set(nil, []byte("v")) })
		if !errors.Is(err, ErrEmptyKey) {
			t.Fatalf("Set(nil) = %v, want ErrEmptyKey", err)
		}
		err = db.Update(ctx, func(tx *Txn) error { return tx.Set(bytes.Repeat([]byte("k"), 70000), nil) })
		if !errors.Is(err, ErrTooLarge) {
			t.Fatalf("Set(huge key) = %v, want ErrTooLarge", err)
		}
	})
}

func TestTransactionTooLarge(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's batch limit follows MemTableSize; PostgreSQL's is fixed (TestPostgresTransactionTooLarge)")
	db := openTest(t, "", &Options{MemTableSize: 1 << 20})
	ctx := context.Background()
	val := bytes.Repeat([]byte("x"), 1024)
	err := db.Update(ctx, func(tx *Txn) error {
		for i := range 10000 {
			if err := tx.Set(fmt.Appendf(nil, "k%05d", i), val); err != nil {
				return err
			}
		}
		return nil
	})
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("huge transaction = %v, want ErrTooLarge", err)
	}
	if err := db.View(ctx, func(tx *Txn) error {
		_, err := tx.Get([]byte("k00000"))
		return err
	}); !errors.Is(err, ErrNotFound) {
		t.Fatalf("after failed commit Get = %v, want ErrNotFound", err)
	}
}

func TestDeletePrefix(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()
		for batch := range 3 {
			if err := db.Update(ctx, func(tx *Txn) error {
				for i := range 500 {
					if err := tx.Set(fmt.Appendf(nil, "p/%d/%d", batch, i), []byte("v")); err != nil {
						return err
					}
				}
				return tx.Set([]byte("q/keep"), []byte("v"))
			}); err != nil {
				t.Fatal(err)
			}
		}
		var visited int
		n, err := db.DeletePrefix(ctx, []byte("p/"), func(k, v []byte) error {
			visited++
			return nil
		})
		if err != nil || n != 1500 || visited != 1500 {
			t.Fatalf("DeletePrefix = %d, %v (visited %d); want 1500", n, err, visited)
		}
		if err := db.View(ctx, func(tx *Txn) error {
			it := tx.NewIterator(IterOptions{KeysOnly: true})
			defer it.Close()
			var keys []string
			for it.Seek(nil); it.Valid(); it.Next() {
				keys = append(keys, string(it.Key()))
			}
			if fmt.Sprint(keys) != "[q/keep]" {
				return fmt.Errorf("keys left: %q", keys)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("waits two seconds for a TTL to pass")
	}
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()

		// A TTL lasts at least its duration even when the write lands just
		// before a second boundary (Badger's own WithTTL truncates to the
		// second and would expire this entry about 20 ms after the write).
		time.Sleep(time.Until(time.Now().Truncate(time.Second).Add(980 * time.Millisecond)))
		if err := db.Update(ctx, func(tx *Txn) error {
			return tx.SetTTL([]byte("boundary"), []byte("v"), time.Second)
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(40 * time.Millisecond)
		if err := db.View(ctx, func(tx *Txn) error {
			_, err := tx.Get([]byte("boundary"))
			return err
		}); err != nil {
			t.Fatalf("1 s TTL written %v before a second boundary, read just after it: %v", 20*time.Millisecond, err)
		}

		if err := db.Update(ctx, func(tx *Txn) error {
			if err := tx.SetTTL([]byte("short"), []byte("v"), time.Second); err != nil {
				return err
			}
			return tx.Set([]byte("long"), []byte("v"))
		}); err != nil {
			t.Fatal(err)
		}
		time.Sleep(2100 * time.Millisecond)
		if err := db.View(ctx, func(tx *Txn) error {
			if _, err := tx.Get([]byte("short")); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("expired key: %v, want ErrNotFound", err)
			}
			_, err := tx.Get([]byte("long"))
			return err
		}); err != nil {
			t.Fatal(err)
		}
	})
}

func TestCloseIdempotent(t *testing.T) {
	db, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatalf("second Close = %v", err)
	}
	if err := db.View(context.Background(), func(*Txn) error { return nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("View after Close = %v, want ErrClosed", err)
	}
}

func TestInvalidOptions(t *testing.T) {
	_, err := Open("", &Options{Durability: 7, EncryptionKey: []byte("short"), MemTableSize: 10})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open = %v, want ErrInvalidOptions", err)
	}
	for _, field := range []string{"Durability", "EncryptionKey", "MemTableSize"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("error %q does not name %s", err, field)
		}
	}
}

// TestNegativeBlockCache: Badger needs a block cache for its compressed
// tables, so a negative BlockCacheSize, which once meant "off", is refused
// at Open as an option, not reported as damaged files.
func TestNegativeBlockCache(t *testing.T) {
	db, err := Open(t.TempDir(), &Options{BlockCacheSize: -1})
	if err == nil {
		db.Close()
	}
	if !errors.Is(err, ErrInvalidOptions) || !strings.Contains(fmt.Sprint(err), "BlockCacheSize") {
		t.Fatalf("Open with BlockCacheSize -1 = %v, want ErrInvalidOptions naming BlockCacheSize", err)
	}
}

func TestEncryption(t *testing.T) {
	dir := t.TempDir()
	key := bytes.Repeat([]byte{7}, 32)
	secret := "the-renewal-owner-is-dana-0xC0FFEE"
	db, err := Open(dir, &Options{EncryptionKey: key})
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Update(context.Background(), func(tx *Txn) error {
		for i := range 200 {
			k := fmt.Sprintf("%s/key/%d", secret, i)
			if err := tx.Set([]byte(k), []byte(secret)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	assertNoPlaintext(t, dir, secret)

	for _, tc := range []struct {
		name string
		key  []byte
	}{
		{"wrong key", bytes.Repeat([]byte{8}, 32)},
		{"no key", nil},
	} {
		_, err := Open(dir, &Options{EncryptionKey: tc.key})
		if !errors.Is(err, ErrEncryptionKey) {
			t.Errorf("%s: Open = %v, want ErrEncryptionKey", tc.name, err)
		}
	}
	// The right key still reads everything.
	db = openTest(t, dir, &Options{EncryptionKey: key})
	if err := db.View(context.Background(), func(tx *Txn) error {
		v, err := tx.Get([]byte(secret + "/key/199"))
		if err == nil && string(v) != secret {
			err = fmt.Errorf("value %q", v)
		}
		return err
	}); err != nil {
		t.Fatal(err)
	}

	// A plain store opened with a key is refused too.
	plain := t.TempDir()
	pdb, err := Open(plain, nil)
	if err != nil {
		t.Fatal(err)
	}
	pdb.Close()
	if _, err := Open(plain, &Options{EncryptionKey: key}); !errors.Is(err, ErrEncryptionKey) {
		t.Errorf("plain store with key: Open = %v, want ErrEncryptionKey", err)
	}
}

// assertNoPlaintext fails if any file under dir contains needle.
func assertNoPlaintext(t *testing.T, dir, needle string) {
	t.Helper()
	var files int
	err := filepath.WalkDir(dir, func(path string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(path)
		if errors.Is(err, fs.ErrNotExist) {
			return nil // replaced while the walk ran: ENGRAM-WAL.tmp, a compacted table
		}
		if err != nil {
			return err
		}
		files++
		if bytes.Contains(b, []byte(needle)) {
			t.Errorf("%s holds plaintext %q", path, needle)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if files == 0 {
		t.Fatal("no files scanned")
	}
}

func TestLockSameProcess(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's directory lock")
	dir := t.TempDir()
	openTest(t, dir, nil)
	if _, err := Open(dir, nil); !errors.Is(err, ErrLocked) {
		t.Fatalf("second Open = %v, want ErrLocked", err)
	}
}

const helperEnv = "ENGRAM_KV_HELPER_DIR"

// runHelperProcess is the child side of TestLockOtherProcess: it opens the
// store, says so, and holds it until its stdin closes.
func runHelperProcess() bool {
	dir := os.Getenv(helperEnv)
	if dir == "" {
		return false
	}
	db, err := Open(dir, nil)
	if err != nil {
		fmt.Println("error:", err)
		os.Exit(1)
	}
	fmt.Println("open")
	_, _ = os.Stdin.Read(make([]byte, 1))
	db.Close()
	return true
}

func TestLockOtherProcess(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's directory lock")
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), helperEnv+"="+dir)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(stdout).ReadString('\n')
	if err != nil || line != "open\n" {
		t.Fatalf("child said %q, %v", line, err)
	}
	_, err = Open(dir, nil)
	if !errors.Is(err, ErrLocked) {
		t.Errorf("Open while another process holds it = %v, want ErrLocked", err)
	} else if !strings.Contains(err.Error(), fmt.Sprint(cmd.Process.Pid)) {
		t.Errorf("lock error %q does not name the holder's pid %d", err, cmd.Process.Pid)
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("child: %v", err)
	}
	// Once the holder exits, the directory opens.
	openTest(t, dir, nil)
}

func TestBackupRestore(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		ctx := context.Background()
		src := b.open(t, &Options{EncryptionKey: bytes.Repeat([]byte{1}, 16)})
		if err := src.Update(ctx, func(tx *Txn) error {
			for i := range 1000 {
				if err := tx.Set(fmt.Appendf(nil, "k%04d", i), fmt.Appendf(nil, "v%d", i)); err != nil {
					return err
				}
			}
			return tx.SetTTL([]byte("ttl"), []byte("v"), time.Hour)
		}); err != nil {
			t.Fatal(err)
		}
		var buf bytes.Buffer
		if err := src.Backup(ctx, &buf); err != nil {
			t.Fatal(err)
		}
		dst := b.open(t, &Options{EncryptionKey: bytes.Repeat([]byte{1}, 16)})
		if err := dst.Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
			t.Fatal(err)
		}
		if err := dst.View(ctx, func(tx *Txn) error {
			var n int
			it := tx.NewIterator(IterOptions{Prefix: []byte("k")})
			defer it.Close()
			for it.Seek(nil); it.Valid(); it.Next() {
				n++
			}
			if n != 1000 {
				return fmt.Errorf("restored %d keys, want 1000", n)
			}
			it2 := tx.NewIterator(IterOptions{Prefix: []byte("ttl")})
			defer it2.Close()
			it2.Seek(nil)
			if !it2.Valid() || it2.ExpiresAt().IsZero() {
				return errors.New("TTL not kept")
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
		if err := dst.Restore(ctx, bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrNotEmpty) {
			t.Fatalf("Restore into non-empty store = %v, want ErrNotEmpty", err)
		}
	})
}

// TestRestoreRejectsBadStreams: what is not a backup, or a damaged one,
// ends in an error, never a crash or a huge allocation.
func TestRestoreRejectsBadStreams(t *testing.T) {
	ctx := context.Background()
	src := openTest(t, t.TempDir(), nil)
	if err := src.Update(ctx, func(tx *Txn) error {
		for i := range 200 {
			if err := tx.Set(fmt.Appendf(nil, "k%04d", i), bytes.Repeat([]byte{byte(i)}, 100)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	var good bytes.Buffer
	if err := src.Backup(ctx, &good); err != nil {
		t.Fatal(err)
	}
	huge := binary.LittleEndian.AppendUint64(nil, 1<<62)
	flipped := bytes.Clone(good.Bytes())
	for i := 8; i < len(flipped); i += 7 {
		flipped[i] ^= 0xA5
	}
	for name, in := range map[string][]byte{
		"text":        []byte("hello, this is not a backup stream at all"),
		"huge frame":  append(huge, 1, 2, 3),
		"max frame":   binary.LittleEndian.AppendUint64(nil, ^uint64(0)),
		"cut short":   good.Bytes()[:good.Len()/2],
		"flipped":     flipped,
		"short frame": append(binary.LittleEndian.AppendUint64(nil, 5), 0xff, 0xff, 0xff, 0xff, 0xff),
	} {
		dst := openTest(t, t.TempDir(), nil)
		err := dst.Restore(ctx, bytes.NewReader(in))
		if err == nil {
			t.Errorf("%s: restored without an error", name)
		}
		if dst.Postgres() {
			// ENGRAM_TEST_BACKEND=postgres: the restore was one
			// transaction, rolled back; the store is empty and usable.
			if n := countKeys(t, dst, nil); n != 0 {
				t.Errorf("%s: %d keys left by the failed restore", name, n)
			}
		} else {
			// The store is left for Close alone: a transaction fails at once
			// instead of waiting on the loader's watermark forever.
			done := make(chan error, 1)
			go func() { done <- dst.View(ctx, func(*Txn) error { return nil }) }()
			select {
			case err := <-done:
				if !errors.Is(err, ErrBadBackup) {
					t.Errorf("%s: a transaction after the failed restore: %v, want ErrBadBackup", name, err)
				}
			case <-time.After(10 * time.Second):
				t.Fatalf("%s: a transaction after the failed restore hangs", name)
			}
		}
		if strings.Contains(name, "frame") && name != "short frame" && !errors.Is(err, ErrBadBackup) {
			t.Errorf("%s: %v, want ErrBadBackup", name, err)
		}
	}
}

// TestSize: the figures come from the files, at once: the value log as
// large values arrive, the tables once the memtable is flushed.
func TestSize(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's table and value-log file sizes")
	ctx := context.Background()
	dir := t.TempDir()
	db := openTest(t, dir, nil)
	// The value log is preallocated (128 MiB, mostly holes): only what it
	// holds counts.
	if _, vlog := db.Size(); vlog > 1<<20 {
		t.Fatalf("empty store: value log of %d bytes", vlog)
	}
	big := bytes.Repeat([]byte{7}, 2<<20) // above the value threshold
	for i := range 4 {
		if err := db.Update(ctx, func(tx *Txn) error {
			return tx.Set(fmt.Appendf(nil, "big%02d", i), big)
		}); err != nil {
			t.Fatal(err)
		}
	}
	if _, vlog := db.Size(); vlog < 8<<20 {
		t.Fatalf("value log of %d bytes after writing 8 MiB of large values", vlog)
	}
	db.Close()
	db = openTest(t, dir, nil)
	if lsm, _ := db.Size(); lsm == 0 {
		t.Fatal("no table bytes after a close flushed the memtable")
	}
	if lsm, vlog := openTest(t, "", nil).Size(); lsm != 0 || vlog != 0 {
		t.Fatalf("in-memory store: %d, %d", lsm, vlog)
	}
}

// TestFailedRestoreLeavesOnlyClose: a restore that fails part way through
// a large stream (Badger's loader has started committing) leaves a store
// whose transactions fail at once, not hang, and which closes.
func TestFailedRestoreLeavesOnlyClose(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's loader leaves its watermark behind; a failed PostgreSQL restore rolls back (TestPostgresRestoreDamagedLeavesEmpty)")
	if testing.Short() {
		t.Skip("writes a 24 MiB backup")
	}
	ctx := context.Background()
	src := openTest(t, t.TempDir(), nil)
	fillBatches(t, src, 32)
	var full bytes.Buffer
	if err := src.Backup(ctx, &full); err != nil {
		t.Fatal(err)
	}
	dst, err := Open(t.TempDir(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := dst.Restore(ctx, bytes.NewReader(full.Bytes()[:full.Len()-100])); err == nil {
		t.Fatal("a truncated backup restored without an error")
	}
	done := make(chan error, 1)
	go func() { done <- dst.View(ctx, func(*Txn) error { return nil }) }()
	select {
	case err := <-done:
		if !errors.Is(err, ErrBadBackup) {
			t.Errorf("a transaction after the failed restore: %v, want ErrBadBackup", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("a transaction after the failed restore hangs")
	}
	closed := make(chan error, 1)
	go func() { closed <- dst.Close() }()
	select {
	case <-closed:
	case <-time.After(30 * time.Second):
		t.Fatal("Close after a failed restore hangs")
	}
}

type captureHandler struct {
	slog.Handler
	lines *[]string
}

func (h captureHandler) Handle(_ context.Context, r slog.Record) error {
	*h.lines = append(*h.lines, r.Message)
	return nil
}

func TestLoggerRouted(t *testing.T) {
	kvtest.SkipOnPostgres(t, "Badger's log lines")
	var lines []string
	h := captureHandler{slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelDebug}), &lines}
	db, err := Open(t.TempDir(), &Options{Logger: slog.New(h)})
	if err != nil {
		t.Fatal(err)
	}
	db.Close()
	if len(lines) == 0 {
		t.Fatal("Badger logged nothing through the slog.Logger")
	}
	for _, l := range lines {
		if strings.HasSuffix(l, "\n") {
			t.Errorf("line keeps its newline: %q", l)
		}
	}
}

// TestDeletePrefixConcurrentWriter: DeletePrefix finishes while another
// goroutine keeps writing keys under the prefix, instead of failing with
// ErrConflict (a store's extraction worker writes while Forget erases).
func TestDeletePrefixConcurrentWriter(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()
		prefix := []byte("p/")
		for i := range 2000 {
			if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte(fmt.Sprintf("p/%05d", i)), []byte("v")) }); err != nil {
				t.Fatal(err)
			}
		}
		stop := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			for i := 0; ; i++ {
				select {
				case <-stop:
					return
				default:
				}
				_ = db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte(fmt.Sprintf("p/%05d", i%2000)), []byte("w")) })
			}
		}()
		_, err := db.DeletePrefix(ctx, prefix, nil)
		close(stop)
		<-done
		if err != nil {
			t.Fatalf("DeletePrefix with a concurrent writer: %v", err)
		}
	})
}

// fillBatches writes batches commits of 96 keys of 8 KiB each
// ("kNN-NNNN"), so that a backup of the store takes several frames.
func fillBatches(t *testing.T, db *DB, batches int) {
	t.Helper()
	val := bytes.Repeat([]byte{0x5A}, 8<<10)
	for b := range batches {
		if err := db.Update(context.Background(), func(tx *Txn) error {
			for i := range 96 {
				if err := tx.Set(fmt.Appendf(nil, "k%02d-%04d", b, i), val); err != nil {
					return err
				}
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
}
