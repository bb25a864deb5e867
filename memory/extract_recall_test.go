package memory

import (
	"strings"
	"testing"

	"github.com/engramdb/engram/graph"
)

// TestFormationRecallAcrossSessions is the support scenario of issue 13,
// with default options throughout: a fact the user states in one session
// is formed into the graph by the default extractor and recalled, with a
// default Query, in the next session, without the query naming the user.
func TestFormationRecallAcrossSessions(t *testing.T) {
	st := openMem(t, nil)
	monday := Scope{Tenant: "acme", User: "alice", Session: "monday"}
	mustAppend(t, st.Session(monday), user("My renewal owner is Dana."), asst("Thanks, I'll remember that."))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	msgs, err := st.Session(monday).Messages(bg, MessagesOptions{})
	if err != nil {
		t.Fatal(err)
	}
	facts, err := viewed(bg, st, testUser, (*graph.Tx).Facts, graph.FactQuery{Subject: "alice"})
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].Predicate != "renewal_owner" || facts[0].Object != "Dana" || facts[0].Source != msgs[0].ID {
		t.Fatalf("facts formed: %+v, want alice renewal_owner Dana from %s", facts, msgs[0].ID)
	}
	rec, err := st.Recall(bg, Query{Scope: Scope{Tenant: "acme", User: "alice", Session: "tuesday"}, Text: "Who owns my renewal?"})
	if err != nil {
		t.Fatal(err)
	}
	var found bool
	for _, it := range rec.Items {
		if it.Source == SourceGraph && it.Fact != nil && it.Fact.Object == "Dana" {
			found = true
		}
	}
	if !found || !strings.Contains(rec.Preamble, "Dana") {
		t.Fatalf("the new session's recall lacks the formed fact; items %+v\npreamble %q", rec.Items, rec.Preamble)
	}

	// A correction in a later session replaces the value; the old one
	// stays in the history.
	mustAppend(t, st.Session(Scope{Tenant: "acme", User: "alice", Session: "wednesday"}), user("My renewal owner is Eve now."))
	if err := st.Flush(bg); err != nil {
		t.Fatal(err)
	}
	facts, err = viewed(bg, st, testUser, (*graph.Tx).Facts, graph.FactQuery{Subject: "alice", Predicate: "renewal_owner"})
	if err != nil {
		t.Fatal(err)
	}
	if len(facts) != 1 || facts[0].Object != "Eve" {
		t.Fatalf("after the correction: %+v, want Eve alone", facts)
	}
	var hist []Fact
	err = st.ViewGraph(bg, testUser, func(g *graph.Tx) (err error) {
		hist, err = g.History("alice", "renewal_owner")
		return err
	})
	if err != nil || len(hist) != 2 {
		t.Fatalf("history %+v, %v; want Dana then Eve", hist, err)
	}
}
