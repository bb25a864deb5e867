package wire

import (
	"encoding/json"
	"flag"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/jsonschema-go/jsonschema"

	"github.com/engramdb/engram/memory"
)

var update = flag.Bool("update", false, "rewrite the golden files in testdata")

var at = time.Date(2025, 3, 14, 9, 30, 0, 0, time.UTC)

// recollection is a Recall's result with every kind of item and candidate:
// a memory and a fact kept, an episode dropped before it was read (no text,
// no time, nil maps), and nil trace lists.
func recollection() *memory.Recollection {
	mem := &memory.Memory{ID: "m1", Kind: memory.KindFact, Text: "Alice's account number is 3942", CreatedAt: at}
	fact := &memory.Fact{ID: "f1", Subject: "Alice", Predicate: "renewal owner", Object: "Dana", ValidFrom: at, CreatedAt: at, Confidence: 1}
	return &memory.Recollection{
		Items: []memory.Item{
			{ID: "m1", Source: memory.SourceMemories, Text: mem.Text, Time: at, Score: 0.0328, Memory: mem},
			{ID: "f1", Source: memory.SourceGraph, Text: "Alice —renewal owner→ Dana", Time: at, Score: 0.0161, Fact: fact},
		},
		Trace: memory.Trace{
			Entities: []string{"Alice"},
			Lists:    map[string]int{"memories.bm25": 1, "graph": 1, "episodes.bm25": 1},
			Candidates: []memory.Candidate{
				{ID: "m1", Source: memory.SourceMemories, Text: mem.Text, Time: at, Ranks: map[string]int{"memories.bm25": 1},
					Scores: map[string]float64{"memories.bm25": 2.5}, Fused: 0.0328, Rank: 1, Kept: true, Tokens: 9},
				{ID: "f1", Source: memory.SourceGraph, Text: "Alice —renewal owner→ Dana", Time: at, Ranks: map[string]int{"graph": 1},
					Scores: map[string]float64{"graph": 0.5}, Fused: 0.0161, Rank: 2, Kept: true, Tokens: 8},
				{ID: "e1", Source: memory.SourceEpisodes, Fused: 0.0159, Rank: 3, Reason: "top k"},
			},
			Budget: 1000, WindowTokens: 12, SummaryTokens: 7, PreambleTokens: 30, TokensUsed: 42,
			Took: 1250 * time.Microsecond, Embed: 250 * time.Microsecond,
		},
	}
}

// TestNewRecallGolden: the JSON of a recollection, field by field, against
// testdata/recall.golden.json. Run with -update to rewrite it after a
// deliberate change (and update openapi.json with it).
func TestNewRecallGolden(t *testing.T) {
	got, err := json.MarshalIndent(NewRecall(recollection()), "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, '\n')
	path := filepath.Join("testdata", "recall.golden.json")
	if *update {
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (-update writes it)", err)
	}
	if string(got) != string(want) {
		t.Errorf("NewRecall JSON differs from %s (-update rewrites it):\n%s", path, got)
	}
}

// TestNewRecallEmpty: an empty recollection writes empty lists and maps,
// never null, as openapi.json and the MCP output schema require; one of a
// Recall that did not ask for the trace (nil Candidates) writes none.
func TestNewRecallEmpty(t *testing.T) {
	for _, c := range []struct {
		rec  memory.Recollection
		want string
	}{
		{memory.Recollection{}, `{"items":[]}`},
		{memory.Recollection{Trace: memory.Trace{Candidates: []memory.Candidate{}}},
			`{"items":[],"trace":{"entities":[],"lists":{},"candidates":[],"budget":0,"window_tokens":0,` +
				`"summary_tokens":0,"preamble_tokens":0,"tokens_used":0,"took_ms":0,"embed_ms":0}}`},
	} {
		got, err := json.Marshal(NewRecall(&c.rec))
		if err != nil {
			t.Fatal(err)
		}
		if string(got) != c.want {
			t.Errorf("empty recollection:\n got %s\nwant %s", got, c.want)
		}
	}
}

// TestSchemaValidates: the schema the MCP SDK infers for Recall accepts
// what NewRecall writes, as the SDK checks on every recall tool call.
func TestSchemaValidates(t *testing.T) {
	s, err := jsonschema.For[Recall](nil)
	if err != nil {
		t.Fatal(err)
	}
	resolved, err := s.Resolve(nil)
	if err != nil {
		t.Fatal(err)
	}
	for name, rec := range map[string]*memory.Recollection{"full": recollection(), "empty": {}} {
		t.Run(name, func(t *testing.T) {
			b, err := json.Marshal(NewRecall(rec))
			if err != nil {
				t.Fatal(err)
			}
			var v any
			if err := json.Unmarshal(b, &v); err != nil {
				t.Fatal(err)
			}
			if err := resolved.Validate(v); err != nil {
				t.Errorf("%s\nfails the inferred schema: %v", b, err)
			}
		})
	}
	for _, field := range []string{"items", "trace"} {
		if s.Properties[field] == nil || s.Properties[field].Description == "" {
			t.Errorf("schema property %s is missing or undescribed", field)
		}
	}
}
