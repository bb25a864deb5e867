package wire_test

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/engramdb/engram/cmd/engram/internal/wire"
	"github.com/engramdb/engram/memory"
)

// An interface embeds Recall next to the fields only it has; encoding/json
// writes them side by side.
func ExampleNewRecall() {
	rec := &memory.Recollection{
		Items: []memory.Item{{ID: "m1", Source: memory.SourceMemories, Text: "Prefers email", Score: 0.0164}},
		Trace: memory.Trace{
			Lists: map[string]int{"memories.bm25": 1},
			Candidates: []memory.Candidate{{ID: "m1", Source: memory.SourceMemories, Text: "Prefers email",
				Ranks: map[string]int{"memories.bm25": 1}, Scores: map[string]float64{"memories.bm25": 1.2},
				Fused: 0.0164, Rank: 1, Kept: true, Tokens: 4}},
			Budget: 4000, PreambleTokens: 12, TokensUsed: 12, Took: 800 * time.Microsecond,
		},
	}
	out := struct {
		Messages []memory.Message `json:"messages"`
		wire.Recall
	}{rec.ChatMessages(), wire.NewRecall(rec)}
	b, _ := json.Marshal(out)
	fmt.Println(string(b))
	// Output:
	// {"messages":[],"items":[{"id":"m1","source":"memories","text":"Prefers email","score":0.0164}],"trace":{"entities":[],"lists":{"memories.bm25":1},"candidates":[{"id":"m1","source":"memories","text":"Prefers email","ranks":{"memories.bm25":1},"scores":{"memories.bm25":1.2},"fused":0.0164,"rank":1,"kept":true,"tokens":4}],"budget":4000,"window_tokens":0,"summary_tokens":0,"preamble_tokens":12,"tokens_used":12,"took_ms":0.8,"embed_ms":0}}
}
