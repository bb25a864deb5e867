package memory

import (
	"strings"
	"testing"
)

// TestRecallSynonyms is the new-user check: with the default
// hashing embedder, whose vectors are lexical, "What automobile does she
// own?" finds "Alice drives a red car" only through WordNet synonyms.
func TestRecallSynonyms(t *testing.T) {
	scope := Scope{Tenant: "acme", User: "bob"}
	for _, c := range []struct {
		name     string
		synonyms bool
		want     bool
	}{
		{"off", false, false},
		{"on", true, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			s := openMem(t, &Options{Synonyms: c.synonyms, Extraction: ExtractOff})
			for _, text := range []string{
				"Alice drives a red car",
				"Alice's favourite colour is green",
				"Bob plays chess on Sundays",
			} {
				if _, err := s.Remember(bg, scope, Memory{Text: text}); err != nil {
					t.Fatal(err)
				}
			}
			rec, err := s.Recall(bg, Query{Scope: scope, Text: "What automobile does she own?"})
			if err != nil {
				t.Fatal(err)
			}
			found := false
			for _, it := range rec.Items {
				if it.Memory != nil && strings.Contains(it.Memory.Text, "red car") {
					found = true
				}
			}
			if found != c.want {
				t.Errorf("synonyms %v: car memory recalled %v, want %v (items %+v)", c.synonyms, found, c.want, rec.Items)
			}
		})
	}
}
