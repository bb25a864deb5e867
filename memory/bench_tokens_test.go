package memory

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
)

// BenchmarkRecallEpisodes recalls from a store of earlier messages (400
// across 20 sessions) and 200 facts, the sources whose lines used to be
// counted at recall time. warm runs with the process's count caches as a second
// turn finds them; cold empties them before each Recall, as a server with
// many users finds them for most.
func BenchmarkRecallEpisodes(b *testing.B) {
	st := openMem(b, &Options{Durability: Async, SweepInterval: -1})
	scope := Scope{Tenant: "bench", User: "user-1"}
	r := rand.New(rand.NewPCG(3, 4))
	words := func(n int) string {
		w := make([]string, n)
		for i := range w {
			w[i] = recallBenchWords[r.IntN(len(recallBenchWords))]
		}
		return strings.Join(w, " ")
	}
	start := time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)
	for s := range 20 {
		sess := st.Session(Scope{Tenant: scope.Tenant, User: scope.User, Session: fmt.Sprint("s-", s)})
		msgs := make([]Message, 20)
		for i := range msgs {
			role := RoleUser
			if i%2 == 1 {
				role = RoleAssistant
			}
			msgs[i] = Message{Role: role, Content: "About the " + words(12+r.IntN(20)) + ".", Time: start.Add(time.Duration(s*20+i) * 7 * time.Minute)}
		}
		if err := sess.Append(bg, msgs...); err != nil {
			b.Fatal(err)
		}
	}
	var batch Batch // facts as an agent's writes store them (ImportGraph stores no counts)
	for i := range 200 {
		batch.Relate(scope, graph.Fact{Subject: fmt.Sprint("entity-", i%20), Predicate: recallBenchWords[r.IntN(len(recallBenchWords))], Object: fmt.Sprint("thing ", words(2), " ", i)})
	}
	if _, err := st.Write(bg, &batch); err != nil {
		b.Fatal(err)
	}
	queries := make([]string, 64)
	for i := range queries {
		queries[i] = fmt.Sprintf("What did we say about the %s for entity-%d?", words(2), r.IntN(20))
	}
	var eps, fs int
	for _, q := range queries { // check episodes and facts are recalled
		rec, err := st.Recall(bg, Query{Scope: scope, Text: q})
		if err != nil {
			b.Fatal(err)
		}
		for _, it := range rec.Items {
			switch it.Source {
			case SourceEpisodes:
				eps++
			case SourceGraph:
				fs++
			}
		}
	}
	b.Logf("%d queries recalled %d episodes, %d facts", len(queries), eps, fs)
	if eps < len(queries) || fs < len(queries) {
		b.Fatalf("%d queries recalled %d episodes, %d facts", len(queries), eps, fs)
	}
	// facts-cold recalls facts alone, caches cold; lines-cold empties the
	// line cache only, keeping the cache of line prefixes (dates, times,
	// kinds: a set a busy server holds whatever its users).
	for _, mode := range []string{"warm", "cold", "facts-cold", "lines-cold"} {
		b.Run(mode, func(b *testing.B) {
			b.ReportAllocs()
			var sources []Source
			if mode == "facts-cold" {
				sources = []Source{SourceGraph}
			}
			i := 0
			for b.Loop() {
				switch mode {
				case "lines-cold":
					textTokens.mu.Lock()
					clear(textTokens.m)
					textTokens.mu.Unlock()
				case "cold", "facts-cold":
					resetTokenCaches()
				}
				if _, err := st.Recall(bg, Query{Scope: scope, Text: queries[i%len(queries)], Sources: sources}); err != nil {
					b.Fatal(err)
				}
				i++
			}
		})
	}
}

// resetTokenCaches empties the process's count caches (lines and line
// prefixes), as a Recall for a user not seen lately finds them.
func resetTokenCaches() {
	textTokens.mu.Lock()
	clear(textTokens.m)
	textTokens.mu.Unlock()
	prefixTokens.mu.Lock()
	clear(prefixTokens.m)
	prefixTokens.mu.Unlock()
}

// BenchmarkCreateRelations writes 50 new relations per UpdateGraph, as the
// MCP graph tools' create_relations does in the side-by-side run
// (batches of 50): what storing each fact's token count costs a write.
func BenchmarkCreateRelations(b *testing.B) {
	st := openMem(b, &Options{Durability: Async, SweepInterval: -1})
	scope := Scope{Tenant: "bench", User: "user-1"}
	rels := make([]graph.Relation, 50)
	if _, err := st.encoder(); err != nil { // loaded by the store's first Append or Recall
		b.Fatal(err)
	}
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		for j := range rels {
			rels[j] = graph.Relation{From: fmt.Sprintf("entity %d", i*50+j), To: fmt.Sprintf("entity %d", (i*50+j)/2), RelationType: "knows_about"}
		}
		if err := st.UpdateGraph(bg, scope, func(g *graph.Tx) error { _, err := g.CreateRelations(rels); return err }); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(rels)), "ns/relation")
}
