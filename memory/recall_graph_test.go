package memory

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/engramdb/engram/graph"
)

// TestRecallMyRenewalDefault is issue 13's support scenario: a fact stated
// in one session is recalled, with a default Query, in the next, through
// the user's own entity ("my" names alice) and the message itself.
func TestRecallMyRenewalDefault(t *testing.T) {
	s := openMem(t, nil)
	monday := Scope{Tenant: "acme", User: "alice", Session: "monday"}
	mustAppend(t, s.Session(monday), user("My renewal owner is Dana."), asst("Noted."))
	win, err := s.Session(monday).Window(bg, WindowOptions{})
	if err != nil || len(win) != 2 {
		t.Fatalf("window %+v, %v", win, err)
	}
	// What extraction will write: the user's entity is named by the user
	// id, and the fact's Source is the message.
	if _, err := s.Relate(bg, alice, Fact{Subject: "alice", Predicate: "renewal_owner", Object: "Dana", Source: win[0].ID}); err != nil {
		t.Fatal(err)
	}
	friday := Scope{Tenant: "acme", User: "alice", Session: "friday"}
	mustAppend(t, s.Session(friday), user("Who owns my renewal?"))
	rec, err := s.Recall(bg, Query{Trace: true, Scope: friday, Text: "Who owns my renewal?"})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(rec.Trace.Entities, []string{"alice"}) {
		t.Fatalf("entities %v", rec.Trace.Entities)
	}
	var fact, episode bool
	for _, it := range rec.Items {
		switch {
		case it.Source == SourceGraph && it.Fact.Object == "Dana" && it.Fact.Source == win[0].ID:
			fact = true
		case it.Source == SourceEpisodes && it.Session == "monday" && strings.Contains(it.Text, "Dana"):
			episode = true
		}
	}
	if !fact || !episode {
		t.Fatalf("fact %v, episode %v: %+v", fact, episode, rec.Items)
	}
	if !strings.Contains(rec.Preamble, "alice —renewal owner→ Dana") {
		t.Fatalf("preamble %q", rec.Preamble)
	}
}

// TestRecallSelfByAlias: the user's entity may carry the user id as an
// alias; first-person words reach it, and "tell me" asks rather than
// mentions.
func TestRecallSelfByAlias(t *testing.T) {
	s := openMem(t, nil)
	u := Scope{Tenant: "acme", User: "u-42"}
	if _, err := s.Relate(bg, u, Fact{Subject: "Alice Smith", Predicate: "lives_in", Object: "Lisbon"}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Relate(bg, u, Fact{Subject: "Dana", Predicate: "works_at", Object: "Acme"}); err != nil {
		t.Fatal(err)
	}
	if err := s.UpdateGraph(bg, u, func(g *graph.Tx) error { _, err := g.AddAliases("Alice Smith", "U-42"); return err }); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Where do I live?", []string{"Alice Smith"}},
		{"where's MY home? i'm lost", []string{"Alice Smith"}},
		{"Tell me about Dana", []string{"Dana"}},
		{"Remind me where Dana and I work", []string{"Dana", "Alice Smith"}},
		{"Where does Dana work?", []string{"Dana"}},
		{"Immy and Mimi", nil}, // no first-person word, only letters of one
	} {
		rec, err := s.Recall(bg, Query{Trace: true, Scope: u, Text: tc.text, Sources: []Source{SourceGraph}})
		if err != nil {
			t.Fatal(err)
		}
		if !slices.Equal(rec.Trace.Entities, tc.want) {
			t.Errorf("%q: entities %v, want %v", tc.text, rec.Trace.Entities, tc.want)
		}
	}
}

// TestRecallSelfIsolation: first-person words link only the asking user's
// own entity, in that user's graph: an entity of the same name in another
// user's graph, or another tenant's, is never reached.
func TestRecallSelfIsolation(t *testing.T) {
	s := openMem(t, nil)
	bob := Scope{Tenant: "acme", User: "bob"}
	other := Scope{Tenant: "globex", User: "alice"}
	for _, sc := range []Scope{bob, other} {
		// Bob talks about a colleague called alice; globex has its own alice.
		if _, err := s.Relate(bg, sc, Fact{Subject: "alice", Predicate: "renewal_owner", Object: "Mallory"}); err != nil {
			t.Fatal(err)
		}
	}
	for _, sc := range []Scope{alice, bob} {
		rec, err := s.Recall(bg, Query{Trace: true, Scope: sc, Text: "Who owns my renewal?"})
		if err != nil {
			t.Fatal(err)
		}
		if len(rec.Trace.Entities) != 0 || len(rec.Items) != 0 || strings.Contains(rec.Preamble, "Mallory") {
			t.Fatalf("%s reached another user's alice: %v %+v", sc.User, rec.Trace.Entities, rec.Items)
		}
	}
	// Alice's own fact is reached, and only hers.
	if _, err := s.Relate(bg, alice, Fact{Subject: "Alice", Predicate: "renewal_owner", Object: "Dana"}); err != nil {
		t.Fatal(err)
	}
	rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: "Who owns my renewal?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) != 1 || rec.Items[0].Fact.Object != "Dana" {
		t.Fatalf("items %+v", rec.Items)
	}
}

// seedDana writes a graph where Dana has n acquaintances, an employer
// whose headquarters is two hops from her, a home town and a favourite
// city. Most of her facts sort after her acquaintances ("favourite_city"
// < "knows" < "lives_in" < "works_at").
func seedDana(t *testing.T, s *Store, n int) {
	t.Helper()
	var b Batch
	for i := range n {
		b.Relate(alice, Fact{Subject: "Dana", Predicate: "knows", Object: fmt.Sprintf("Person %02d", i)})
	}
	b.Relate(alice, Fact{Subject: "Dana", Predicate: "works_at", Object: "Acme"})
	b.Relate(alice, Fact{Subject: "Acme", Predicate: "headquartered_in", Object: "Berlin"})
	b.Relate(alice, Fact{Subject: "Dana", Predicate: "lives_in", Object: "Lisbon"})
	b.Relate(alice, Fact{Subject: "Dana", Predicate: "favourite_city", Object: "Porto"})
	if _, err := s.Write(bg, &b); err != nil {
		t.Fatal(err)
	}
}

// TestRecallGraphRelevance: facts that share the query's terms come first,
// even two hops out past many nearer ones; the rest go to "graph.other"
// at a tenth of the weight, behind episodes that match.
func TestRecallGraphRelevance(t *testing.T) {
	s := openMem(t, nil)
	// 30 acquaintances: more than the fan-out bound of 16, so a walk in
	// hop order never reaches her employer.
	seedDana(t, s, 30)
	rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: "Where is Dana's employer headquartered?", Sources: []Source{SourceGraph}})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) == 0 || rec.Items[0].Fact.Predicate != "headquartered_in" {
		t.Fatalf("first fact: %+v", rec.Items)
	}
	if rec.Trace.Lists["graph"] != 1 || rec.Trace.Lists["graph.other"] == 0 {
		t.Fatalf("lists %v", rec.Trace.Lists)
	}
	// A fact that shares more terms ranks above one that shares fewer;
	// naming two entities a fact links is no match ("Lisbon" is one).
	rec, err = s.Recall(bg, Query{Trace: true, Scope: alice, Text: "Is Lisbon the favourite city Dana would live in?", Sources: []Source{SourceGraph}})
	if err != nil {
		t.Fatal(err)
	}
	var order []string
	for _, it := range rec.Items {
		order = append(order, it.Fact.Predicate)
	}
	if len(order) < 3 || !slices.Equal(order[:2], []string{"favourite_city", "lives_in"}) || rec.Trace.Lists["graph"] != 2 {
		t.Fatalf("order %v, lists %v", order, rec.Trace.Lists)
	}

	// With episodes in play, unmatched facts do not crowd out a matching
	// message.
	mustAppend(t, s.Session(Scope{Tenant: "acme", User: "alice", Session: "old"}), user("Dana said the office moved to Potsdam."))
	rec, err = s.Recall(bg, Query{Trace: true, Scope: alice, Text: "Where is Dana's office?"})
	if err != nil {
		t.Fatal(err)
	}
	if len(rec.Items) == 0 || rec.Items[0].Source != SourceEpisodes {
		t.Fatalf("first item %+v", rec.Items[:min(3, len(rec.Items))])
	}
}

// TestRecallGraphEntityOnly: a query that only names an entity keeps the
// walk's order, nearest facts first and newest first among them, in one
// full-weight list.
func TestRecallGraphEntityOnly(t *testing.T) {
	s := openMem(t, nil)
	seedDana(t, s, 10)
	for _, text := range []string{"Dana", "Tell me about Dana", "What do you know about Dana?"} {
		rec, err := s.Recall(bg, Query{Trace: true, Scope: alice, Text: text, Sources: []Source{SourceGraph}, TopK: 40})
		if err != nil {
			t.Fatal(err)
		}
		if rec.Trace.Lists["graph.other"] != 0 || rec.Trace.Lists["graph"] != 14 {
			t.Fatalf("%q: lists %v", text, rec.Trace.Lists)
		}
		last, prev := 0, time.Time{}
		for _, it := range rec.Items {
			hops := 1
			if it.Fact.Subject == "Acme" {
				hops = 2
			}
			if hops < last || (hops == last && it.Fact.ValidFrom.After(prev)) {
				t.Fatalf("%q: hop order broken at %s", text, it.Text)
			}
			last, prev = hops, it.Fact.ValidFrom
		}
	}
}

func TestContentTerms(t *testing.T) {
	for _, tc := range []struct {
		text string
		want []string
	}{
		{"Who owns my renewal?", []string{"own", "renew"}},
		{"Tell me about Dana", nil},
		{"What does Dana know about the budget?", []string{"budget"}},
	} {
		ns := &nameSet{names: map[string]string{"dana": "Dana", "alice": "alice"}, maxWords: 1}
		_, spans := ns.linkAs(tc.text, "alice")
		var got []string
		for term := range contentTerms(tc.text, spans) {
			got = append(got, term)
		}
		slices.Sort(got)
		if !slices.Equal(got, tc.want) {
			t.Errorf("%q: %v, want %v", tc.text, got, tc.want)
		}
	}
}
