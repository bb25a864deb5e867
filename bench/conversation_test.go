package bench

import (
	"slices"
	"testing"

	"github.com/engramdb/engram/memory"
)

// TestRankedKeys: memories and facts count through their Source message
// ids, each turn once at the rank of its first appearance, and candidates
// dropped as duplicates or by filters count not at all.
func TestRankedKeys(t *testing.T) {
	dia := map[string]string{"m1": "D1:1", "m2": "D1:2", "m3": "D2:1", "m4": "D2:2", "m5": "D3:1"}
	mem := &memory.Memory{ID: "mem1", Text: "likes tea", Source: []string{"m2", "m3"}}
	fact := &memory.Fact{ID: "f1", Subject: "Ann", Predicate: "likes", Object: "tea", Source: "m4"}
	rec := &memory.Recollection{
		Items: []memory.Item{
			{ID: "mem1", Source: memory.SourceMemories, Memory: mem},
			{ID: "m2", Source: memory.SourceEpisodes},
			{ID: "f1", Source: memory.SourceGraph, Fact: fact},
			{ID: "m1", Source: memory.SourceEpisodes},
		},
		Trace: memory.Trace{Candidates: []memory.Candidate{
			{ID: "mem1", Source: memory.SourceMemories, Kept: true},             // D1:2, D2:1
			{ID: "m2", Source: memory.SourceEpisodes, Kept: true},               // D1:2 again: no slot
			{ID: "m5", Source: memory.SourceEpisodes, Reason: "duplicate of x"}, // not counted
			{ID: "f1", Source: memory.SourceGraph, Kept: true},                  // D2:2
			{ID: "ext", Source: memory.SourceGraph, Reason: "in window"},        // not counted
			{ID: "m1", Source: memory.SourceEpisodes, Kept: true},               // D1:1
			{ID: "mem9", Source: memory.SourceMemories, Reason: "top k"},        // never read: no turn
			{ID: "m5", Source: memory.SourceEpisodes, Reason: "top k"},          // D3:1
			{ID: "zz", Source: memory.SourceEpisodes, Reason: "budget"},         // not a LoCoMo turn
		}},
	}
	got := rankedKeys(rec, dia)
	if want := []string{"D1:2", "D2:1", "D2:2", "D1:1", "D3:1"}; !slices.Equal(got, want) {
		t.Fatalf("ranked %v, want %v", got, want)
	}
}
