package graph

import (
	"fmt"
	"testing"

	"github.com/engramdb/engram/kv"
)

// BenchmarkEntityWrites measures what the search index adds to writes:
// entities of the search probe created in transactions of 50 (as the MCP
// probe's create_entities batches), on disk; one op is one batch. In
// "searched" a search has run first, so an index exists and every write
// records its texts for it.
func BenchmarkEntityWrites(b *testing.B) {
	for _, searched := range []bool{false, true} {
		b.Run(map[bool]string{false: "fresh", true: "searched"}[searched], func(b *testing.B) {
			d := searchProbe(2000)
			// Async: an fsync per batch would hide the CPU the index adds.
			db, err := kv.Open(b.TempDir(), &kv.Options{Durability: kv.Async})
			if err != nil {
				b.Fatal(err)
			}
			defer db.Close()
			s, err := New(nil)
			if err != nil {
				b.Fatal(err)
			}
			write := func(batch []Entity) {
				err := s.Update(b.Context(), db, testRoot, func(tx *Tx) error {
					_, err := tx.CreateEntities(batch)
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			write(d.Entities[:50])
			if searched {
				err := s.View(b.Context(), db, testRoot, func(tx *Tx) error {
					_, err := tx.SearchNodes("batch", SearchOptions{})
					return err
				})
				if err != nil {
					b.Fatal(err)
				}
			}
			i := 0
			for b.Loop() {
				batch := make([]Entity, 50)
				copy(batch, d.Entities[i%40*50:i%40*50+50])
				for j := range batch {
					batch[j].Name = fmt.Sprintf("w%d-%s", i, batch[j].Name)
				}
				write(batch)
				i++
			}
		})
	}
}
