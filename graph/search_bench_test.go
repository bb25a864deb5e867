package graph

import (
	"fmt"
	"testing"
	"time"

	"github.com/engramdb/engram/kv"
)

// searchProbe is the shape of issue 29's probe of the MCP graph tools:
// entities "entity-N" with two sentences of observations each, related in
// a chain. Five entities share each batch number, so the query
// "batch 000123" matches a handful at every size.
func searchProbe(n int) *Dump {
	d := &Dump{}
	for i := range n {
		d.Entities = append(d.Entities, Entity{
			Name: fmt.Sprintf("entity-%d", i),
			Type: fmt.Sprintf("type-%d", i%10),
			Observations: []string{
				fmt.Sprintf("entity-%d was seen in batch %06d near the river", i, i/5),
				fmt.Sprintf("It prefers topic %d of the catalogue and says hello", i%100),
			},
		})
		if i > 0 && i%50 != 0 {
			d.Facts = append(d.Facts, Fact{Subject: fmt.Sprintf("entity-%d", i-1), Predicate: "knows", Object: fmt.Sprintf("entity-%d", i)})
		}
	}
	return d
}

// BenchmarkSearchNodes measures SearchNodes through the in-memory index
// and the scan, in the same run, at 2,000, 20,000 and 200,000 entities
// (the last skipped with -short), for a rare query (5 matches at every
// size) and a common one ("hello": every entity, the default limit of
// 100). index-after-write writes one entity before each search, so the
// index's delta and compaction are in the time. It reports the index's
// bytes per entity.
func BenchmarkSearchNodes(b *testing.B) {
	for _, n := range []int{2000, 20000, 200000} {
		if n > 20000 && testing.Short() {
			continue
		}
		b.Run(fmt.Sprint(n), func(b *testing.B) { benchSearchNodes(b, n) })
	}
}

func benchSearchNodes(b *testing.B, n int) {
	db, err := kv.Open(b.TempDir(), nil)
	if err != nil {
		b.Fatal(err)
	}
	defer db.Close()
	s, err := New(nil)
	if err != nil {
		b.Fatal(err)
	}
	if _, err := s.Load(b.Context(), db, testRoot, searchProbe(n), nil); err != nil {
		b.Fatal(err)
	}
	// A write gives the bulk-loaded graph this Store's generation key.
	if err := s.Update(b.Context(), db, testRoot, func(tx *Tx) error {
		_, err := tx.CreateEntities([]Entity{{Name: "probe writer"}})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	// The first search builds the index; its time is reported apart.
	start := time.Now()
	if err := s.View(b.Context(), db, testRoot, func(tx *Tx) error {
		_, err := tx.SearchNodes("batch", SearchOptions{})
		return err
	}); err != nil {
		b.Fatal(err)
	}
	build := time.Since(start)
	run := func(b *testing.B, query string, want int, search func(tx *Tx) (Graph, error)) {
		for b.Loop() {
			err := s.View(b.Context(), db, testRoot, func(tx *Tx) error {
				g, err := search(tx)
				if err == nil && len(g.Entities) != want {
					err = fmt.Errorf("%d entities found, want %d", len(g.Entities), want)
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
	}
	for _, c := range []struct {
		query string
		want  int
	}{{"Batch 000123", 5}, {"hello", DefaultPageSize}} {
		b.Run("index/"+c.query, func(b *testing.B) {
			run(b, c.query, c.want, func(tx *Tx) (Graph, error) { return tx.SearchNodes(c.query, SearchOptions{}) })
			if hits, scans := s.search.hits.Load(), s.search.scans.Load(); hits == 0 || scans > 0 {
				b.Fatalf("%d searches through the index, %d scans", hits, scans)
			}
			b.ReportMetric(float64(s.SearchIndexBytes(nil))/float64(n), "index-B/entity")
			b.ReportMetric(float64(build.Milliseconds()), "build-ms")
		})
		b.Run("scan/"+c.query, func(b *testing.B) {
			run(b, c.query, c.want, func(tx *Tx) (Graph, error) { return scanSearch(tx, c.query, 0) })
		})
	}
	b.Run("index-after-write/Batch 000123", func(b *testing.B) {
		i := 0
		for b.Loop() {
			i++
			err := s.Update(b.Context(), db, testRoot, func(tx *Tx) error {
				_, err := tx.CreateEntities([]Entity{{Name: fmt.Sprintf("written %d", i), Observations: []string{"a new observation"}}})
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
			err = s.View(b.Context(), db, testRoot, func(tx *Tx) error {
				g, err := tx.SearchNodes("Batch 000123", SearchOptions{})
				if err == nil && len(g.Entities) != 5 {
					err = fmt.Errorf("%d entities found, want 5", len(g.Entities))
				}
				return err
			})
			if err != nil {
				b.Fatal(err)
			}
		}
		if scans := s.search.scans.Load(); scans > 0 {
			b.Fatalf("%d scans", scans)
		}
	})
}
