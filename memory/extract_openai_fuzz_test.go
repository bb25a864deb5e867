package memory

import (
	"errors"
	"strings"
	"testing"
	"unicode/utf8"
)

// FuzzOpenAIExtractorReply feeds arbitrary content to the reply decoder and
// the checks after it: they must never panic, must fail only with
// ErrMalformedExtraction, and every item they keep must be one the store
// accepts and may touch only what was shown.
func FuzzOpenAIExtractorReply(f *testing.F) {
	for _, s := range []string{
		`{"add": [{"kind": "Fact", "text": "Sam owns it.", "tags": ["a", "A", ""], "importance": 0.5}]}`,
		"```json\n{\"facts\": [{\"subject\": \"I\", \"predicate\": \"Lives In\", \"object\": \"Lisbon\", \"valid_from\": \"2026-05-01\", \"confidence\": 1, \"single_valued\": true}]}\n```",
		`<think>{}</think>{"update": [{"id": "m1", "text": "x"}], "delete": ["m1", {"id": "m2"}], "invalidate": [{"id": "f1"}, {"subject": "me", "predicate": "owns"}]}`,
		`{"entities": [{"name": "Bob", "type": "\u0001person", "aliases": ["bob", "Robert"], "observations": ["x", "x"]}]}`,
		`{"add": "x"}`, `[1]`, `{"memories": []}`, "", "```", "{\"facts\": [{\"subject\": \"\xff\"}]}",
	} {
		f.Add(s)
	}
	refs := &extractRefs{
		memories: map[string]string{"m1": "01J00000000000000000MEMORY", "01J00000000000000000MEMORY": "01J00000000000000000MEMORY"},
		facts:    map[string]string{"f1": "01J0000000000000000000FACT", "01J0000000000000000000FACT": "01J0000000000000000000FACT"},
		shown:    []Fact{{ID: "01J0000000000000000000FACT", Subject: "alice", Predicate: "owns", Object: "Acme"}},
	}
	f.Fuzz(func(t *testing.T, content string) {
		var r extractReply
		if err := decodeExtractReply(content, &r); err != nil {
			if !errors.Is(err, ErrMalformedExtraction) {
				t.Fatalf("error %v is not ErrMalformedExtraction", err)
			}
			return
		}
		x := refs.check(&r, "alice")
		name := func(what, s string) {
			if s == "" || len(s) > maxExtractName || !utf8.ValidString(s) || strings.ContainsRune(s, utf8.RuneError) || s != strings.TrimSpace(s) {
				t.Fatalf("%s %q kept", what, s)
			}
			if !extractPrintable(s) {
				t.Fatalf("%s %q holds a control character", what, s)
			}
		}
		for _, m := range x.Memories {
			if !m.Kind.Valid() || m.Importance < 0 || m.Importance > 1 {
				t.Fatalf("memory %+v kept", m)
			}
			if _, ok := extractText(m.Text); !ok {
				t.Fatalf("memory text %q kept", m.Text)
			}
		}
		for _, e := range x.Entities {
			name("entity", e.Name)
			for _, a := range e.Aliases {
				name("alias", a)
			}
		}
		for _, fact := range x.Facts {
			name("subject", fact.Subject)
			name("predicate", fact.Predicate)
			name("object", fact.Object)
			if fact.Confidence < 0 || fact.Confidence > 1 || strings.ContainsAny(fact.Predicate, " -") {
				t.Fatalf("fact %+v kept", fact)
			}
		}
		for _, u := range x.Updates {
			if u.ID != "01J00000000000000000MEMORY" {
				t.Fatalf("update of %q, which was not shown", u.ID)
			}
		}
		for _, id := range x.Deletes {
			if id != "01J00000000000000000MEMORY" {
				t.Fatalf("delete of %q, which was not shown", id)
			}
		}
		for _, inv := range x.Invalidate {
			if inv.ID != "01J0000000000000000000FACT" || inv.Subject != "" {
				t.Fatalf("invalidation %+v", inv)
			}
		}
	})
}
