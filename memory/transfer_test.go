package memory

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
)

func TestImportMessagesKeepsIDs(t *testing.T) {
	src, dst := openMem(t, nil), openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, src.Session(scope), sys("be brief"), user("My renewal owner is Dana."), call("c1"), result("c1"),
		Message{Role: RoleAssistant, Content: "Noted.", Name: "agent", Metadata: map[string]string{"k": "v"}, Time: time.Date(2026, 1, 2, 3, 4, 5, 6, time.UTC)})
	msgs, err := src.Session(scope).Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// Two calls, as an importer in batches would make them.
	st1, err := dst.ImportMessages(bg, scope, msgs[:3])
	if err != nil {
		t.Fatal(err)
	}
	st2, err := dst.ImportMessages(bg, scope, msgs[3:])
	if err != nil {
		t.Fatal(err)
	}
	if st1.Written+st2.Written != len(msgs) {
		t.Fatalf("written %d+%d, want %d", st1.Written, st2.Written, len(msgs))
	}
	got, err := dst.Session(scope).Messages(bg, MessagesOptions{})
	if err != nil || !reflect.DeepEqual(got, msgs) {
		t.Fatalf("imported messages differ:\n got %+v, %v\nwant %+v", got, err, msgs)
	}
	// Again: nothing changes.
	st, err := dst.ImportMessages(bg, scope, msgs)
	if err != nil || st.Written != 0 || st.Existing != len(msgs) {
		t.Fatalf("re-import: %+v, %v", st, err)
	}
	if got, _ := dst.Session(scope).Messages(bg, MessagesOptions{}); len(got) != len(msgs) {
		t.Fatalf("re-import stored %d messages, want %d", len(got), len(msgs))
	}
	// Appends after an import come after it; the session lists once, and
	// began with its earliest message (the one dated in January).
	mustAppend(t, dst.Session(scope), user("later"))
	got, _ = dst.Session(scope).Messages(bg, MessagesOptions{})
	if got[len(got)-1].Content != "later" || got[len(got)-1].ID <= msgs[len(msgs)-1].ID {
		t.Errorf("append after import: last %+v", got[len(got)-1])
	}
	infos, err := dst.Sessions(bg, scope, SessionsOptions{})
	if err != nil || len(infos) != 1 || infos[0].Messages != len(msgs)+1 || !infos[0].Created.Equal(msgs[4].Time) {
		t.Errorf("Sessions = %+v, %v", infos, err)
	}
	// The imported messages are episodes for Recall.
	rec, err := dst.Recall(bg, Query{Trace: true, Scope: Scope{Tenant: "acme", User: "alice", Session: "other"}, Text: "Who is my renewal owner?", Sources: []Source{SourceEpisodes}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) == 0 || rec.Items[0].ID != msgs[1].ID {
		t.Errorf("Recall after import: %+v", rec.Items)
	}
}

func TestImportMessagesWithoutIDs(t *testing.T) {
	s := openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	st, err := s.ImportMessages(bg, scope, []Message{user("one"), call("c1"), result("c1")})
	if err != nil || st.Written != 3 {
		t.Fatalf("ImportMessages: %+v, %v", st, err)
	}
	got, _ := s.Session(scope).Messages(bg, MessagesOptions{})
	if label(got) != "U:one C:c1 T:c1" || got[0].ID >= got[1].ID || got[0].Time.IsZero() {
		t.Fatalf("imported: %s %+v", label(got), got)
	}
}

func TestImportMessagesRefused(t *testing.T) {
	// A small message limit: tokenizing a message of the default limit
	// takes seconds.
	s := openMem(t, &Options{MaxMessageBytes: 1024})
	scope := Scope{Tenant: "acme", User: "alice", Session: "s1"}
	mustAppend(t, s.Session(scope), call("c1"), result("c1"))
	const id = "01JH0000000000000000000001"
	tests := []struct {
		name  string
		msgs  []Message
		index int
		want  error
	}{
		{"orphan tool result", []Message{user("ok"), result("nope")}, 1, ErrOrphanToolResult},
		{"call already made", []Message{user("ok"), call("c1")}, 1, ErrDuplicateToolCall},
		{"repeated call", []Message{call("x"), call("x")}, 1, ErrDuplicateToolCall},
		{"bad role", []Message{{Role: "robot", Content: "beep"}}, 0, ErrInvalidRole},
		{"bad id", []Message{user("ok"), {ID: "not-a-ulid", Role: RoleUser, Content: "x"}}, 1, ErrInvalidMessage},
		{"repeated id", []Message{{ID: id, Role: RoleUser, Content: "a"}, {ID: id, Role: RoleUser, Content: "b"}}, 1, ErrInvalidMessage},
		{"too large", []Message{user("ok"), user(strings.Repeat("word ", 300))}, 1, ErrTooLarge},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.ImportMessages(bg, scope, tt.msgs)
			var ie *ImportError
			if !errors.As(err, &ie) || ie.Index != tt.index || !errors.Is(err, tt.want) {
				t.Fatalf("err = %v, want an ImportError at %d wrapping %v", err, tt.index, tt.want)
			}
			if got, _ := s.Session(scope).Messages(bg, MessagesOptions{}); len(got) != 2 {
				t.Fatalf("a refused import wrote: %s", label(got))
			}
		})
	}
	if _, err := s.ImportMessages(bg, Scope{Tenant: "acme", User: "alice"}, []Message{user("x")}); !errors.Is(err, ErrInvalidScope) {
		t.Errorf("no session: %v, want ErrInvalidScope", err)
	}
}

// exportMemories lists the scope's memories as an exporter would: each
// current memory after its earlier versions, oldest first.
func exportMemories(t *testing.T, s *Store, scope Scope) []Memory {
	t.Helper()
	cur, err := s.Memories(bg, scope, MemoriesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var out []Memory
	for _, m := range cur {
		h, err := s.MemoryHistory(bg, scope, m.ID)
		if err != nil {
			t.Fatal(err)
		}
		for i := len(h) - 1; i >= 0; i-- {
			out = append(out, h[i])
		}
	}
	return out
}

func TestImportMemoriesKeepsVersions(t *testing.T) {
	src, dst := openMem(t, nil), openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice", Agent: "crm"}
	id := mustRemember(t, src, scope, Memory{Kind: KindFact, Text: "Account 3942", Tags: []string{"acct"}, Source: []string{"m1"}, Importance: 0.5})
	if _, err := src.UpdateMemory(bg, scope, id, Memory{Text: "Account 3943", ExpiresAt: time.Now().Add(time.Hour)}); err != nil {
		t.Fatal(err)
	}
	mustRemember(t, src, scope, Memory{Kind: KindPreference, Text: "Prefers email", Metadata: map[string]string{"channel": "email"}})
	mustRemember(t, src, Scope{Tenant: "acme"}, Memory{Text: "Office closes at six"})
	all := exportMemories(t, src, scope)
	if len(all) != 3 {
		t.Fatalf("exported %d memories, want 3", len(all))
	}
	st, err := dst.ImportMemories(bg, Scope{Tenant: "acme", User: "alice"}, all)
	if err != nil || st.Written != 3 {
		t.Fatalf("ImportMemories: %+v, %v", st, err)
	}
	if got := exportMemories(t, dst, scope); !reflect.DeepEqual(got, all) {
		t.Fatalf("imported memories differ:\n got %+v\nwant %+v", got, all)
	}
	// Again: nothing changes.
	if st, err := dst.ImportMemories(bg, scope, all); err != nil || st.Existing != 3 || st.Written != 0 {
		t.Fatalf("re-import: %+v, %v", st, err)
	}
	// Recall finds them; the earlier version is not recalled.
	rec, err := dst.Recall(bg, Query{Trace: true, Scope: scope, Text: "account", Retrieval: RetrievalLexical})
	if err != nil || len(rec.Items) != 1 || rec.Items[0].Memory.Text != "Account 3943" {
		t.Fatalf("Recall after import: %+v, %v", rec.Items, err)
	}
	// Without ids: new ones; an exact duplicate of a current memory, or an
	// expired memory, is skipped.
	st, err = dst.ImportMemories(bg, scope, []Memory{
		{Text: "Likes tea"},
		{Kind: KindPreference, Text: "  prefers EMAIL "},
		{Text: "Gone", ExpiresAt: time.Now().Add(-time.Hour)},
	})
	if err != nil || st != (ImportStats{Written: 1, Duplicates: 1, Expired: 1}) {
		t.Fatalf("import without ids: %+v, %v", st, err)
	}
	// The shared partition is a scope too.
	if st, err := dst.ImportMemories(bg, Scope{Tenant: "acme"}, exportMemories(t, src, Scope{Tenant: "acme"})); err != nil || st.Written != 1 {
		t.Fatalf("shared import: %+v, %v", st, err)
	}
}

func TestImportMemoriesRefused(t *testing.T) {
	s := openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice"}
	tests := []struct {
		name  string
		mems  []Memory
		index int
	}{
		{"empty text", []Memory{{Text: "ok"}, {Text: "  "}}, 1},
		{"bad kind", []Memory{{Kind: "rumour", Text: "x"}}, 0},
		{"bad id", []Memory{{ID: "nope", Text: "x"}}, 0},
		{"bad supersedes", []Memory{{Text: "x", Supersedes: "nope"}}, 0},
		{"bad importance", []Memory{{Text: "x"}, {Text: "y", Importance: 2}}, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := s.ImportMemories(bg, scope, tt.mems)
			var ie *ImportError
			if !errors.As(err, &ie) || ie.Index != tt.index || !errors.Is(err, ErrInvalidMemory) {
				t.Fatalf("err = %v, want an ImportError at %d wrapping ErrInvalidMemory", err, tt.index)
			}
			if got, err := s.Memories(bg, scope, MemoriesOptions{}); err != nil || len(got) != 0 {
				t.Fatalf("after a refused import: %d memories, %v; want none and no error", len(got), err)
			}
		})
	}
}

func TestExportImportGraph(t *testing.T) {
	src, dst := openMem(t, &Options{SingleValued: []string{"renewal_owner"}}), openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice"}
	march := time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC)
	for _, f := range []Fact{
		{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana", ValidFrom: march},
		{Subject: "Alice", Predicate: "renewal_owner", Object: "Eve", ValidFrom: march.AddDate(0, 3, 0), Source: "msg-1"},
	} {
		if _, err := src.Relate(bg, scope, f); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := updated(bg, src, scope, (*graph.Tx).CreateEntities, []graph.Entity{{Name: "Dana", Type: "person", Observations: []string{"works at Acme"}}}); err != nil {
		t.Fatal(err)
	}
	var a bytes.Buffer
	if err := src.ViewGraph(bg, scope, func(g *graph.Tx) error { return g.Export(&a) }); err != nil {
		t.Fatal(err)
	}
	d, err := graph.ParseNQuads(bg, bytes.NewReader(a.Bytes()))
	if err != nil {
		t.Fatal(err)
	}
	st, err := dst.ImportGraph(bg, scope, d, nil)
	if err != nil || st.Facts != 2 {
		t.Fatalf("ImportGraph: %+v, %v", st, err)
	}
	var b bytes.Buffer
	if err := dst.ViewGraph(bg, scope, func(g *graph.Tx) error { return g.Export(&b) }); err != nil {
		t.Fatal(err)
	}
	if a.String() != b.String() {
		t.Fatalf("graph round trip differs:\n%s\n---\n%s", a.String(), b.String())
	}
	// The store's names follow the import: Recall links the entities.
	rec, err := dst.Recall(bg, Query{Trace: true, Scope: scope, Text: "Who is Alice's renewal owner?"})
	if err != nil || len(rec.Trace.Entities) == 0 {
		t.Fatalf("Recall after graph import: %+v, %v", rec.Trace.Entities, err)
	}
	// Bad input names the line and writes nothing: input that is not
	// N-Quads fails to parse, and a fact the graph refuses fails to load.
	_, err = graph.ParseNQuads(bg, strings.NewReader("<a> <b> <c> .\nnot a quad\n"))
	if !errors.Is(err, graph.ErrInvalidNQuads) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("bad N-Quads: %v", err)
	}
	const fact = "<urn:engram:fact:01JH0000000000000000000000>"
	d, err = graph.ParseNQuads(bg, strings.NewReader("<x> <y> <z> .\n<a> <b> <c> "+fact+" .\n"+
		fact+` <urn:engram:confidence> "2"^^<http://www.w3.org/2001/XMLSchema#double> .`+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	bob := Scope{Tenant: "acme", User: "bob"}
	_, err = dst.ImportGraph(bg, bob, d, nil)
	if !errors.Is(err, graph.ErrInvalidNQuads) || !errors.Is(err, graph.ErrInvalidFact) || !strings.Contains(err.Error(), "line 2") {
		t.Fatalf("refused fact: %v", err)
	}
	if u, _ := dst.Usage(bg, bob); u.Facts != 0 || u.Entities != 0 {
		t.Errorf("refused N-Quads wrote %d facts and %d entities", u.Facts, u.Entities)
	}
}

// The stored form of an imported earlier version is the one UpdateMemory
// writes: Memory reads it back whole.
func TestImportedVersionReadable(t *testing.T) {
	s := openMem(t, nil)
	scope := Scope{Tenant: "acme", User: "alice"}
	old := Memory{ID: "01JH0000000000000000000001", Kind: KindFact, Text: "v1", CreatedAt: time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC), SupersededBy: "01JH0000000000000000000002"}
	cur := Memory{ID: "01JH0000000000000000000002", Kind: KindFact, Text: "v2", CreatedAt: time.Date(2025, 2, 1, 0, 0, 0, 0, time.UTC), Supersedes: old.ID}
	if _, err := s.ImportMemories(bg, scope, []Memory{old, cur}); err != nil {
		t.Fatal(err)
	}
	h, err := s.MemoryHistory(bg, scope, cur.ID)
	if err != nil || len(h) != 2 {
		t.Fatalf("MemoryHistory: %+v, %v", h, err)
	}
	want, _ := json.Marshal([]Memory{cur, old})
	got, _ := json.Marshal(h)
	if !bytes.Equal(got, want) {
		t.Errorf("history\n got %s\nwant %s", got, want)
	}
}
