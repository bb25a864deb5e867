package engine

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/index"
)

// TestOpenRejectsBadOptions: Open refuses every bad field with
// ErrInvalidOptions and names it. Before, a bad HNSW was swallowed when a
// partition outgrew the exact threshold (index.NewHNSW failed in
// promoteLocked and the partition stayed on the exact index for good), and
// negative counts and durations silently meant the default.
func TestOpenRejectsBadOptions(t *testing.T) {
	for _, tc := range []struct {
		name  string
		opts  Options
		field string
	}{
		{"durability", Options{Durability: Durability(7)}, "Durability"},
		{"key length", Options{EncryptionKey: make([]byte, 5)}, "EncryptionKey"},
		{"negative exact threshold", Options{ExactThreshold: -1}, "ExactThreshold"},
		{"hnsw M", Options{HNSW: &index.HNSWOptions{M: 1}}, "HNSW"},
		{"hnsw negative ef", Options{HNSW: &index.HNSWOptions{EfConstruction: -5}}, "HNSW"},
		{"negative snapshot interval", Options{SnapshotInterval: -time.Second}, "SnapshotInterval"},
		{"negative snapshot after", Options{SnapshotAfter: -1}, "SnapshotAfter"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			db, err := Open("", &tc.opts)
			if err == nil {
				db.Close()
				t.Fatalf("Open(%+v) succeeded", tc.opts)
			}
			if !errors.Is(err, ErrInvalidOptions) {
				t.Fatalf("Open = %v, want ErrInvalidOptions", err)
			}
			if !strings.Contains(err.Error(), tc.field) {
				t.Fatalf("Open = %v, want it to name %s", err, tc.field)
			}
		})
	}
}

// TestOpenReportsEveryBadField: one error names all the bad fields.
func TestOpenReportsEveryBadField(t *testing.T) {
	_, err := Open("", &Options{
		ExactThreshold: -1,
		HNSW:           &index.HNSWOptions{M: 1000},
		SnapshotAfter:  -1,
	})
	if !errors.Is(err, ErrInvalidOptions) {
		t.Fatalf("Open = %v, want ErrInvalidOptions", err)
	}
	for _, field := range []string{"ExactThreshold", "HNSW", "SnapshotAfter"} {
		if !strings.Contains(err.Error(), field) {
			t.Errorf("Open = %v: %s not named", err, field)
		}
	}
}

// TestOpenAcceptsZeroAndDocumentedNegatives: zero fields mean defaults, a
// good HNSW is taken, and a negative CompactDelay (background compaction
// off) is allowed.
func TestOpenAcceptsZeroAndDocumentedNegatives(t *testing.T) {
	for _, opts := range []*Options{
		nil,
		{},
		{HNSW: &index.HNSWOptions{M: 8, EfConstruction: 100, EfSearch: 32, Seed: 1}},
		{CompactDelay: -1},
		{EncryptionKey: make([]byte, 32)},
	} {
		db, err := Open("", opts)
		if err != nil {
			t.Fatalf("Open(%+v) = %v", opts, err)
		}
		if err := db.Close(); err != nil {
			t.Fatal(err)
		}
	}
}
