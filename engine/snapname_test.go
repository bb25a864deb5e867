package engine

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/engramdb/engram/kv/kvtest"
)

// unsaltedNames returns the file names the snapshot of scope's partition
// had before names were keyed: SHA-256 of the tenant, base and partition
// prefixes, 12 bytes of each in hex. Anyone who guesses an id can compute
// them.
func unsaltedNames(scope Scope) []string {
	h := func(b []byte) string { s := sha256.Sum256(b); return hex.EncodeToString(s[:12]) }
	t, u := scope.Prefix(LevelTenant), scope.Prefix(LevelUser)
	return []string{h(t), h(u), h(t) + "-" + h(u) + "-" + h(u) + ".snap"}
}

func listSnapNames(t *testing.T, dir string) []string {
	t.Helper()
	var names []string
	for _, f := range snapFiles(t, dir) {
		names = append(names, filepath.Base(f))
	}
	slices.Sort(names)
	return names
}

// TestSnapshotNamesKeyed: a snapshot's file name is a keyed hash of the
// ids, with a salt of the store's own, so a guessed tenant or user id
// cannot be confirmed from a directory listing; the same ids give other
// names in another store, and the snapshots still load after a reopen.
func TestSnapshotNamesKeyed(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	scope := Scope{Tenant: "acme", User: "guessable-user"}
	var stores [2][]string
	dirs := [2]string{t.TempDir(), t.TempDir()}
	vecs := randVecs(9, 300, 8)
	for i, dir := range dirs {
		db := openDisk(t, dir, &Options{ExactThreshold: 100})
		put(t, db, scope, vecs)
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
		stores[i] = listSnapNames(t, dir)
		if len(stores[i]) != 1 {
			t.Fatalf("store %d: snapshot files %v, want one", i, stores[i])
		}
		for _, guess := range unsaltedNames(scope) {
			if strings.Contains(stores[i][0], guess) {
				t.Errorf("store %d: %s holds the unsalted hash %s of the ids", i, stores[i][0], guess)
			}
		}
	}
	if slices.Equal(stores[0], stores[1]) {
		t.Errorf("two stores name the same partition's snapshot alike: %v", stores[0])
	}

	// Reopened, the snapshot loads: no rebuild.
	logs := &logRecorder{}
	db := openDisk(t, dirs[0], &Options{ExactThreshold: 100, Logger: slog.New(logs)})
	if hits, err := db.Search(ctxb, scope, vecs[0], 1, nil); err != nil || len(hits) != 1 {
		t.Fatalf("search after reopen: %v, %v", hits, err)
	}
	p, _ := db.getPartition(ctxb, scope.Prefix(LevelUser))
	p.mu.RLock()
	dirty, hnsw := p.mu.dirty, p.mu.hnsw != nil
	p.mu.RUnlock()
	if !hnsw || dirty != 0 || logs.count("engram: vector snapshot unusable; rebuilding from records") != 0 {
		t.Errorf("after reopen: hnsw %v, dirty %d (a rebuild marks every record), logs %v", hnsw, dirty, logs.lines())
	}
	// The salt is in the store, so a backup carries it: the restored
	// store names the partition's snapshot as the original does.
	var backup bytes.Buffer
	if err := db.Backup(ctxb, &backup); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	restored := t.TempDir()
	db = openDisk(t, restored, &Options{ExactThreshold: 100})
	if err := db.Restore(ctxb, &backup); err != nil {
		t.Fatal(err)
	}
	if _, err := db.Search(ctxb, scope, vecs[0], 1, nil); err != nil {
		t.Fatal(err)
	}
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	if got := listSnapNames(t, restored); !slices.Equal(got, stores[0]) {
		t.Errorf("restored store's snapshot %v, want the original's %v", got, stores[0])
	}
}

// TestSnapshotNamesMigrated: a snapshot named by the unsalted layout is
// renamed at open to its keyed name, and loads without a rebuild.
func TestSnapshotNamesMigrated(t *testing.T) {
	kvtest.SkipOnPostgres(t, "index snapshots are files under Dir(), which a PostgreSQL store has not (they move into the store)")
	scope := Scope{Tenant: "acme", User: "old-layout"}
	dir := t.TempDir()
	vecs := randVecs(10, 300, 8)
	db := openDisk(t, dir, &Options{ExactThreshold: 100})
	put(t, db, scope, vecs)
	if err := db.Close(); err != nil {
		t.Fatal(err)
	}
	files := snapFiles(t, dir)
	if len(files) != 1 {
		t.Fatalf("snapshot files %v", files)
	}
	keyed := filepath.Base(files[0])
	old := filepath.Join(dir, snapDir, unsaltedNames(scope)[2])
	if err := os.Rename(files[0], old); err != nil {
		t.Fatal(err)
	}
	logs := &logRecorder{}
	db = openDisk(t, dir, &Options{ExactThreshold: 100, Logger: slog.New(logs)})
	defer db.Close()
	if got := listSnapNames(t, dir); !slices.Equal(got, []string{keyed}) {
		t.Fatalf("after open: %v, want [%s]", got, keyed)
	}
	if _, err := db.Search(ctxb, scope, vecs[0], 1, nil); err != nil {
		t.Fatal(err)
	}
	p, _ := db.getPartition(ctxb, scope.Prefix(LevelUser))
	p.mu.RLock()
	dirty := p.mu.dirty
	p.mu.RUnlock()
	if dirty != 0 || logs.count("engram: vector snapshot unusable; rebuilding from records") != 0 {
		t.Errorf("the migrated snapshot was rebuilt: dirty %d, logs %v", dirty, logs.lines())
	}
}
