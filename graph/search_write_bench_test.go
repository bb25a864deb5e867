package graph

import (
	"testing"

	"github.com/engramdb/engram/kv"
)

// BenchmarkEntityWrites measures what the search index adds to writes:
// 2,000 entities of the search probe created in transactions of 50 (as
// the MCP probe's create_entities batches), on disk; one op is one batch.
func BenchmarkEntityWrites(b *testing.B) {
	d := searchProbe(2000)
	db, err := kv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	i := 0
	for b.Loop() {
		batch := d.Entities[i%40*50 : i%40*50+50]
		for j := range batch {
			batch[j].Name = batch[j].Name[:len("entity-")] + string(rune('a'+i/40%26)) + batch[j].Name[len("entity-"):]
		}
		err := s.Update(b.Context(), db, testRoot, func(tx *Tx) error {
			_, err := tx.CreateEntities(batch)
			return err
		})
		if err != nil {
			b.Fatal(err)
		}
		i++
	}
}
