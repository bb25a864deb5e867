package kv

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/dgraph-io/badger/v4/pb"
	"github.com/jackc/pgx/v5"
	"google.golang.org/protobuf/proto"
)

// PostgreSQL-only behaviour: TTL sweeping, conflicts, sealed values, the
// backup format shared with Badger, all-or-nothing loads, and a model test
// that runs the same random operations on Badger and PostgreSQL. They skip
// without ENGRAM_TEST_POSTGRES.

// rawRows returns the key-value table's rows as PostgreSQL holds them.
func rawRows(t testing.TB, o *PostgresOptions) map[string][]byte {
	t.Helper()
	ctx := context.Background()
	c, err := pgx.Connect(ctx, o.DSN)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close(ctx)
	rows, err := c.Query(ctx, "SELECT k, v FROM "+o.Schema+".kv")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	out := map[string][]byte{}
	for rows.Next() {
		var k, v []byte
		if err := rows.Scan(&k, &v); err != nil {
			t.Fatal(err)
		}
		out[string(k)] = v
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresTTL: an expired key is invisible to every read from its
// second on, though its row is still in the table, and the sweep deletes
// the row.
func TestPostgresTTL(t *testing.T) {
	if testing.Short() {
		t.Skip("waits two seconds for a TTL to pass")
	}
	db, o := openTestPostgres(t, nil)
	ctx := context.Background()
	if err := db.Update(ctx, func(tx *Txn) error {
		for i := range 50 {
			if err := tx.SetTTL(fmt.Appendf(nil, "t/%02d", i), []byte("short"), time.Second); err != nil {
				return err
			}
		}
		return tx.Set([]byte("t/keep"), []byte("long"))
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.View(ctx, func(tx *Txn) error {
		e, err := tx.Expiry([]byte("t/00"))
		if err != nil || e.IsZero() || time.Until(e) > 2*time.Second {
			return fmt.Errorf("Expiry = %v, %v; want within two seconds", e, err)
		}
		if e, err := tx.Expiry([]byte("t/keep")); err != nil || !e.IsZero() {
			return fmt.Errorf("Expiry of a key without TTL = %v, %v", e, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(2100 * time.Millisecond)
	for _, reverse := range []bool{false, true} {
		if err := db.View(ctx, func(tx *Txn) error {
			if _, err := tx.Get([]byte("t/07")); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("Get of an expired key: %v", err)
			}
			if ok, err := tx.Has([]byte("t/07")); ok || err != nil {
				return fmt.Errorf("Has of an expired key: %v, %v", ok, err)
			}
			if _, err := tx.Expiry([]byte("t/07")); !errors.Is(err, ErrNotFound) {
				return fmt.Errorf("Expiry of an expired key: %v", err)
			}
			var keys []string
			it := tx.NewIterator(IterOptions{Prefix: []byte("t/"), Reverse: reverse, KeysOnly: reverse})
			defer it.Close()
			for it.Seek(nil); it.Valid(); it.Next() {
				keys = append(keys, string(it.Key()))
			}
			if fmt.Sprint(keys) != "[t/keep]" {
				return fmt.Errorf("iteration (reverse %v) sees %q", reverse, keys)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rawRows(t, o)); n != 51 {
		t.Fatalf("%d rows before the sweep, want 51", n)
	}
	n, err := db.pg.sweep(ctx)
	if err != nil || n != 50 {
		t.Fatalf("sweep = %d, %v; want 50", n, err)
	}
	if rows := rawRows(t, o); len(rows) != 1 || rows["t/keep"] == nil {
		t.Fatalf("rows after the sweep: %d", len(rows))
	}
}

// TestBlindWritesDoNotConflict: transactions that only write never fail
// with ErrConflict on either backend, however many write one key at once
// (PostgreSQL fails such updates with 40001; blind ones are sent again).
func TestBlindWritesDoNotConflict(t *testing.T) {
	forEachBackend(t, func(t *testing.T, b testBackend) {
		db := b.open(t, nil)
		ctx := context.Background()
		var wg sync.WaitGroup
		errs := make(chan error, 8*20)
		for w := range 8 {
			wg.Go(func() {
				for i := range 20 {
					errs <- db.Update(ctx, func(tx *Txn) error {
						if err := tx.Set([]byte("hot"), fmt.Appendf(nil, "%d-%d", w, i)); err != nil {
							return err
						}
						return tx.Delete(fmt.Appendf(nil, "cold/%d", i))
					})
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			if err != nil {
				t.Fatalf("a blind write: %v", err)
			}
		}
	})
}

// TestPostgresConflict: two SERIALIZABLE transactions that read a key and
// then write it: one of them commits, the other gets ErrConflict.
func TestPostgresConflict(t *testing.T) {
	db, _ := openTestPostgres(t, nil)
	ctx := context.Background()
	if err := db.Update(ctx, func(tx *Txn) error { return tx.Set([]byte("n"), []byte{0}) }); err != nil {
		t.Fatal(err)
	}
	var read sync.WaitGroup
	read.Add(2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for i := range 2 {
		wg.Go(func() {
			once := false
			errs[i] = db.Update(ctx, func(tx *Txn) error {
				v, err := tx.Get([]byte("n"))
				if !once { // both have read before either writes
					once = true
					read.Done()
					read.Wait()
				}
				if err != nil {
					return err
				}
				return tx.Set([]byte("n"), []byte{v[0] + 1})
			})
		})
	}
	wg.Wait()
	conflicts := 0
	for _, err := range errs {
		switch {
		case errors.Is(err, ErrConflict):
			conflicts++
		case err != nil:
			t.Fatalf("Update: %v", err)
		}
	}
	if conflicts == 0 {
		t.Fatal("two read-modify-write transactions of one key both committed")
	}
	_ = db.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("n"))
		if err != nil || int(v[0]) != 2-conflicts {
			t.Errorf("n = %v, %v after %d conflicts", v, err, conflicts)
		}
		return nil
	})
}

// TestPostgresEncryption: values are sealed in the table; a wrong key, no
// key for a sealed store and a key for a plain store are ErrEncryptionKey.
func TestPostgresEncryption(t *testing.T) {
	ctx := context.Background()
	key := bytes.Repeat([]byte{7}, 32)
	secret := "the-renewal-owner-is-dana-0xC0FFEE"
	db, o := openTestPostgres(t, &PostgresOptions{EncryptionKey: key})
	if err := db.Update(ctx, func(tx *Txn) error {
		for i := range 20 {
			if err := tx.Set(fmt.Appendf(nil, "k/%d", i), []byte(secret)); err != nil {
				return err
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if !db.Encrypted() {
		t.Fatal("Encrypted() = false with a key")
	}
	rows := rawRows(t, o)
	if len(rows) != 20 {
		t.Fatalf("%d rows, want 20", len(rows))
	}
	for k, v := range rows {
		if bytes.Contains(v, []byte(secret)) {
			t.Fatalf("the value of %q is readable in the table", k)
		}
	}
	db.Close()
	for name, k := range map[string][]byte{"wrong key": bytes.Repeat([]byte{8}, 32), "no key": nil, "short key": bytes.Repeat([]byte{7}, 16)} {
		oo := *o
		oo.EncryptionKey = k
		if db, err := OpenPostgres(ctx, &oo); !errors.Is(err, ErrEncryptionKey) {
			if err == nil {
				db.Close()
			}
			t.Errorf("%s: Open = %v, want ErrEncryptionKey", name, err)
		}
	}
	db, err := OpenPostgres(ctx, o)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if err := db.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("k/3"))
		if err != nil || string(v) != secret {
			return fmt.Errorf("Get with the right key = %q, %v", v, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	_, po := openTestPostgres(t, nil)
	po.EncryptionKey = key
	if db, err := OpenPostgres(ctx, po); !errors.Is(err, ErrEncryptionKey) {
		if err == nil {
			db.Close()
		}
		t.Errorf("a key for a plain store: %v, want ErrEncryptionKey", err)
	}
}

// dumpStore returns every key with its value and whether it expires.
func dumpStore(t testing.TB, db *DB) []string {
	t.Helper()
	var out []string
	if err := db.View(context.Background(), func(tx *Txn) error {
		it := tx.NewIterator(IterOptions{})
		defer it.Close()
		for it.Seek(nil); it.Valid(); it.Next() {
			v, err := it.Value(nil)
			if err != nil {
				return err
			}
			out = append(out, fmt.Sprintf("%q=%q ttl=%v", it.Key(), v, !it.ExpiresAt().IsZero()))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestPostgresBackupAcrossBackends: a Badger backup restores into
// PostgreSQL, and PostgreSQL's back into Badger, plain and sealed, with
// values, TTLs and deletions as they were.
func TestPostgresBackupAcrossBackends(t *testing.T) {
	testPostgresDSN(t)
	ctx := context.Background()
	for _, key := range [][]byte{nil, bytes.Repeat([]byte{3}, 16)} {
		t.Run(fmt.Sprintf("key=%v", key != nil), func(t *testing.T) {
			opts := &Options{EncryptionKey: key}
			src := openTest(t, t.TempDir(), opts)
			if err := src.Update(ctx, func(tx *Txn) error {
				for i := range 3000 {
					if err := tx.Set(fmt.Appendf(nil, "k/%05d", i), bytes.Repeat([]byte{byte(i)}, i%300)); err != nil {
						return err
					}
				}
				if err := tx.Set([]byte("\x00\xff"), []byte("edge")); err != nil {
					return err
				}
				return tx.SetTTL([]byte("ttl"), []byte("v"), time.Hour)
			}); err != nil {
				t.Fatal(err)
			}
			// Rewritten and deleted keys leave older versions in
			// Badger's stream.
			if err := src.Update(ctx, func(tx *Txn) error {
				for i := 0; i < 3000; i += 7 {
					if err := tx.Delete(fmt.Appendf(nil, "k/%05d", i)); err != nil {
						return err
					}
				}
				return tx.Set([]byte("k/00001"), []byte("rewritten"))
			}); err != nil {
				t.Fatal(err)
			}
			want := dumpStore(t, src)
			var buf bytes.Buffer
			if err := src.Backup(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			pg, _ := openTestPostgres(t, &PostgresOptions{EncryptionKey: key})
			if err := pg.Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			if got := dumpStore(t, pg); !slices.Equal(got, want) {
				t.Fatalf("Badger → PostgreSQL: %d entries, want %d", len(got), len(want))
			}
			buf.Reset()
			if err := pg.Backup(ctx, &buf); err != nil {
				t.Fatal(err)
			}
			back := openTest(t, t.TempDir(), opts)
			if err := back.Restore(ctx, bytes.NewReader(buf.Bytes())); err != nil {
				t.Fatal(err)
			}
			if got := dumpStore(t, back); !slices.Equal(got, want) {
				t.Fatalf("PostgreSQL → Badger: %d entries, want %d", len(got), len(want))
			}
			if err := pg.Restore(ctx, bytes.NewReader(buf.Bytes())); !errors.Is(err, ErrNotEmpty) {
				t.Fatalf("Restore into a store with keys = %v, want ErrNotEmpty", err)
			}
		})
	}
}

// TestPostgresRestoreDamagedLeavesEmpty: a restore that fails part way
// through a stream of several frames (rows of the first already copied)
// leaves the store empty and usable, and a sound restore then works.
func TestPostgresRestoreDamagedLeavesEmpty(t *testing.T) {
	ctx := context.Background()
	src, _ := openTestPostgres(t, nil)
	fillBatches(t, src, 8)
	var full bytes.Buffer
	if err := src.Backup(ctx, &full); err != nil {
		t.Fatal(err)
	}
	if first := binary.LittleEndian.Uint64(full.Bytes()); first+8 >= uint64(full.Len()) {
		t.Fatalf("the stream is one frame of %d bytes: the test needs several", first)
	}
	// The second frame's length, then its body, damaged (a plain stream
	// has no checksums: a changed value byte is just another value).
	second := 8 + int(binary.LittleEndian.Uint64(full.Bytes()))
	badLength := bytes.Clone(full.Bytes())
	binary.LittleEndian.PutUint64(badLength[second:], 1<<40)
	badBody := bytes.Clone(full.Bytes())
	for i := second + 8; i < len(badBody); i++ {
		badBody[i] = 0xFF
	}
	for name, in := range map[string][]byte{
		"cut short":  full.Bytes()[:full.Len()-100],
		"bad length": badLength,
		"bad body":   badBody,
		"garbage":    append(bytes.Clone(full.Bytes()), 1, 2, 3, 4, 5, 6, 7, 8, 9),
	} {
		dst, _ := openTestPostgres(t, nil)
		if err := dst.Restore(ctx, bytes.NewReader(in)); !errors.Is(err, ErrBadBackup) {
			t.Fatalf("%s: Restore = %v, want ErrBadBackup", name, err)
		}
		if n := countKeys(t, dst, nil); n != 0 {
			t.Fatalf("%s: %d keys after a failed restore, want none", name, n)
		}
		if err := dst.Restore(ctx, bytes.NewReader(full.Bytes())); err != nil {
			t.Fatalf("%s: a sound restore after the failed one: %v", name, err)
		}
		if n := countKeys(t, dst, nil); n != 8*96 {
			t.Fatalf("%s: %d keys restored, want %d", name, n, 8*96)
		}
	}
}

// TestPostgresBulkLoad: BulkLoad refuses unsorted and empty keys and a
// store with keys, leaving nothing behind, and loads sorted pairs.
func TestPostgresBulkLoad(t *testing.T) {
	ctx := context.Background()
	pairs := func(n int, bad int, badKey []byte) func(func([]byte, []byte) bool) {
		return func(yield func([]byte, []byte) bool) {
			for i := range n {
				k := fmt.Appendf(nil, "b/%06d", i)
				if i == bad {
					k = badKey
				}
				if !yield(k, fmt.Appendf(nil, "v%d", i)) {
					return
				}
			}
		}
	}
	db, _ := openTestPostgres(t, nil)
	if err := db.BulkLoad(ctx, pairs(5000, 4000, []byte("b/000003"))); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("unsorted: %v, want ErrUnsorted", err)
	}
	if err := db.BulkLoad(ctx, pairs(5000, 10, []byte("b/000009"))); !errors.Is(err, ErrUnsorted) {
		t.Fatalf("a repeated key: %v, want ErrUnsorted", err)
	}
	if err := db.BulkLoad(ctx, pairs(5000, 4000, nil)); !errors.Is(err, ErrEmptyKey) {
		t.Fatalf("an empty key: %v, want ErrEmptyKey", err)
	}
	if n := countKeys(t, db, nil); n != 0 {
		t.Fatalf("%d keys left by failed loads", n)
	}
	if err := db.BulkLoad(ctx, pairs(5000, -1, nil)); err != nil {
		t.Fatal(err)
	}
	if n := countKeys(t, db, []byte("b/")); n != 5000 {
		t.Fatalf("%d keys loaded, want 5000", n)
	}
	if err := db.View(ctx, func(tx *Txn) error {
		v, err := tx.Get([]byte("b/004321"))
		if err != nil || string(v) != "v4321" {
			return fmt.Errorf("Get = %q, %v", v, err)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := db.BulkLoad(ctx, pairs(10, -1, nil)); !errors.Is(err, ErrNotEmpty) {
		t.Fatalf("a store with keys: %v, want ErrNotEmpty", err)
	}
}

// TestPostgresTransactionTooLarge: a transaction past the store's limits
// (TxnLimits) fails with ErrTooLarge and writes nothing; so does a key
// the primary-key index cannot hold.
func TestPostgresTransactionTooLarge(t *testing.T) {
	ctx := context.Background()
	db, _ := openTestPostgres(t, nil)
	db.pg.txnEntries, db.pg.txnBytes = 100, 100*(10+pgEntryOverhead)+500
	if e, b := db.TxnLimits(); e != 100 || b != db.pg.txnBytes {
		t.Fatalf("TxnLimits = %d, %d", e, b)
	}
	write := func(n, size int) error {
		return db.Update(ctx, func(tx *Txn) error {
			for i := range n {
				if err := tx.Set(fmt.Appendf(nil, "k%09d", i), make([]byte, size)); err != nil {
					return err
				}
			}
			return nil
		})
	}
	if err := write(101, 0); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("101 entries: %v, want ErrTooLarge", err)
	}
	if err := write(30, 100); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("too many bytes: %v, want ErrTooLarge", err)
	}
	if n := countKeys(t, db, nil); n != 0 {
		t.Fatalf("%d keys written by failed transactions", n)
	}
	if err := write(100, 0); err != nil {
		t.Fatalf("100 entries: %v", err)
	}
	// Incompressible, above what one index entry holds (about 2.7 KB).
	big := make([]byte, 4000)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range big {
		big[i] = byte(rng.Uint32())
	}
	big[0] = 'z'
	err := db.Update(ctx, func(tx *Txn) error { return tx.Set(big, []byte("v")) })
	if !errors.Is(err, ErrTooLarge) {
		t.Fatalf("a 4000-byte random key: %v, want ErrTooLarge", err)
	}
}

// TestPostgresModelAgainstBadger runs the same random transactions on a
// Badger store and a PostgreSQL store and checks every read of both
// against a brute-force model: Get, and iteration forward and backward
// from random seek keys under random prefixes (0x00 and 0xFF bytes
// included), with values and keys only, with small prefetch sizes so the
// pages PostgreSQL reads in end at many places, inside read-write
// transactions with unsent writes too.
func TestPostgresModelAgainstBadger(t *testing.T) {
	testPostgresDSN(t)
	ctx := context.Background()
	bdb := openTest(t, "", nil)
	pdb, _ := openTestPostgres(t, nil)
	model := map[string]string{}
	rng := rand.New(rand.NewPCG(17, 71))
	alphabet := []byte{0x00, 'a', 'b', 0xFE, 0xFF}
	randKey := func(maxLen int) []byte {
		k := make([]byte, 1+rng.IntN(maxLen))
		for i := range k {
			k[i] = alphabet[rng.IntN(len(alphabet))]
		}
		return k
	}
	// query reads one prefix, direction and seek key through tx.
	type query struct {
		prefix, seek []byte
		reverse      bool
		keysOnly     bool
		prefetch     int
	}
	randQuery := func() query {
		q := query{reverse: rng.IntN(2) == 0, keysOnly: rng.IntN(3) == 0, prefetch: 1 + rng.IntN(5)}
		if rng.IntN(4) > 0 {
			q.prefix = randKey(2)
		}
		if rng.IntN(3) > 0 {
			q.seek = append(bytes.Clone(q.prefix), randKey(3)...)
			if rng.IntN(4) == 0 {
				q.seek = randKey(4) // outside the prefix
			}
		}
		return q
	}
	scan := func(tx *Txn, q query) ([]string, error) {
		it := tx.NewIterator(IterOptions{Prefix: q.prefix, Reverse: q.reverse, KeysOnly: q.keysOnly, Prefetch: q.prefetch})
		defer it.Close()
		var out []string
		for it.Seek(q.seek); it.Valid(); it.Next() {
			v, err := it.Value(nil)
			if err != nil {
				return nil, err
			}
			out = append(out, fmt.Sprintf("%x=%s", it.Key(), v))
		}
		return out, nil
	}
	want := func(m map[string]string, q query) []string {
		var all []string
		for k := range m {
			all = append(all, k)
		}
		sort.Strings(all)
		if q.reverse {
			slices.Reverse(all)
		}
		// Seek lands on the nearest key at or past the seek key in the
		// direction of travel, with the prefix or not (nil: the
		// prefix's first key, or its last in reverse); the iterator is
		// valid while the key has the prefix.
		start := 0
		for start < len(all) {
			k := all[start]
			if q.seek == nil && strings.HasPrefix(k, string(q.prefix)) ||
				q.seek != nil && (!q.reverse && k >= string(q.seek) || q.reverse && k <= string(q.seek)) {
				break
			}
			start++
		}
		var keys []string
		for _, k := range all[start:] {
			if !strings.HasPrefix(k, string(q.prefix)) {
				break
			}
			keys = append(keys, k)
		}
		out := make([]string, len(keys))
		for i, k := range keys {
			out[i] = fmt.Sprintf("%x=%s", k, m[k])
		}
		return out
	}
	check := func(step int, label string, m map[string]string, q query, got map[string][]string) {
		t.Helper()
		w := want(m, q)
		for name, g := range got {
			if !slices.Equal(g, w) {
				t.Fatalf("step %d %s on %s: prefix %x seek %x reverse %v keysOnly %v prefetch %d:\n got %q\nwant %q",
					step, label, name, q.prefix, q.seek, q.reverse, q.keysOnly, q.prefetch, g, w)
			}
		}
	}
	dbs := map[string]*DB{"badger": bdb, "postgres": pdb}
	for step := range 300 {
		// One transaction of random writes, applied to both.
		type op struct {
			k, v []byte
			del  bool
		}
		var ops []op
		for range 1 + rng.IntN(12) {
			o := op{k: randKey(5), v: fmt.Appendf(nil, "v%d", rng.IntN(1000))}
			o.del = rng.IntN(4) == 0
			ops = append(ops, o)
		}
		rollback := rng.IntN(6) == 0
		errRollback := errors.New("rollback")
		q := randQuery()
		for name, db := range dbs {
			err := db.Update(ctx, func(tx *Txn) error {
				inTxn := copyModel(model)
				for _, o := range ops {
					var err error
					if o.del {
						err, _ = tx.Delete(o.k), delete2(inTxn, o.k)
					} else {
						err, _ = tx.Set(o.k, o.v), set2(inTxn, o.k, o.v)
					}
					if err != nil {
						return err
					}
				}
				// Reads inside the transaction see its own writes.
				got, err := scan(tx, q)
				if err != nil {
					return err
				}
				check(step, "in a transaction", inTxn, q, map[string][]string{name: got})
				if rollback {
					return errRollback
				}
				return nil
			})
			if err != nil && !(rollback && errors.Is(err, errRollback)) {
				t.Fatalf("step %d on %s: %v", step, name, err)
			}
		}
		if !rollback {
			for _, o := range ops {
				if o.del {
					delete(model, string(o.k))
				} else {
					model[string(o.k)] = string(o.v)
				}
			}
		}
		// Reads after the commit.
		for range 3 {
			q := randQuery()
			got := map[string][]string{}
			for name, db := range dbs {
				if err := db.View(ctx, func(tx *Txn) error {
					var err error
					got[name], err = scan(tx, q)
					return err
				}); err != nil {
					t.Fatal(err)
				}
			}
			check(step, "after commit", model, q, got)
		}
		k := randKey(5)
		for name, db := range dbs {
			_ = db.View(ctx, func(tx *Txn) error {
				v, err := tx.Get(k)
				w, ok := model[string(k)]
				if ok && (err != nil || string(v) != w) || !ok && !errors.Is(err, ErrNotFound) {
					t.Fatalf("step %d on %s: Get(%x) = %q, %v; want %q (present %v)", step, name, k, v, err, w, ok)
				}
				return nil
			})
		}
	}
	if len(model) < 100 {
		t.Fatalf("the model holds only %d keys: the test proves little", len(model))
	}
}

func copyModel(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func delete2(m map[string]string, k []byte) bool { delete(m, string(k)); return true }
func set2(m map[string]string, k, v []byte) bool { m[string(k)] = string(v); return true }

// FuzzBackupRows: the decoder PostgreSQL's Restore reads a backup stream
// with never panics, returns ErrBadBackup for what is not a stream, and
// reads back a stream built from the input's keys (newest version of each
// key, no deleted or expired ones).
func FuzzBackupRows(f *testing.F) {
	f.Add([]byte("hello, not a backup"), false)
	f.Add(binary.LittleEndian.AppendUint64(nil, 1<<40), false)
	f.Add([]byte("a\x00bb\x00ccc\x00a"), true)
	f.Add([]byte{}, true)
	f.Fuzz(func(t *testing.T, in []byte, build bool) {
		const now = 1_000_000
		if !build {
			for _, err := range backupRows(bytes.NewReader(in), now) {
				if err != nil && !errors.Is(err, ErrBadBackup) {
					t.Fatalf("untyped error %v", err)
				}
			}
			return
		}
		// Keys separated by 0x00, sorted and distinct as in a real
		// stream, each a frame of its newest version then an older one;
		// every third newest version is a deletion, every third an
		// expired entry.
		keys := bytes.Split(in, []byte{0})
		slices.SortFunc(keys, bytes.Compare)
		keys = slices.CompactFunc(keys, bytes.Equal)
		var stream []byte
		var want []string
		for i, k := range keys {
			if len(k) == 0 {
				continue
			}
			list := &pb.KVList{Kv: []*pb.KV{
				{Key: k, Value: []byte("new"), Version: 2, Meta: []byte{0}},
				{Key: k, Value: []byte("old"), Version: 1, Meta: []byte{0}},
			}}
			switch i % 3 {
			case 1:
				list.Kv[0].Meta = []byte{1} // Badger's bitDelete
			case 2:
				list.Kv[0].ExpiresAt = now - 1
			default:
				want = append(want, string(k))
			}
			buf, err := proto.Marshal(list)
			if err != nil {
				t.Fatal(err)
			}
			stream = binary.LittleEndian.AppendUint64(stream, uint64(len(buf)))
			stream = append(stream, buf...)
		}
		var got []string
		for r, err := range backupRows(bytes.NewReader(stream), now) {
			if err != nil {
				t.Fatalf("a sound stream: %v", err)
			}
			if string(r.v) != "new" {
				t.Fatalf("key %q: value %q, want the newest version", r.k, r.v)
			}
			got = append(got, string(r.k))
		}
		if !slices.Equal(got, want) {
			t.Fatalf("rows %q, want %q", got, want)
		}
	})
}
