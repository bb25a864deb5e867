package httpapi

import (
	"context"
	"encoding/json"
	"slices"
	"testing"

	"github.com/engramdb/engram/graph"
	"github.com/engramdb/engram/memory"
)

// TestObservationsMCPShape: the observation routes take and answer the
// MCP memory server's shapes (add_observations: {entityName, contents} in,
// {results: [{entityName, addedObservations}]} out; delete_observations:
// {deletions: [{entityName, observations}]}), so a client can send the
// same JSON to either interface. The shapes of before (observations for
// contents and for deletions; observations in the answer) still work and
// are deprecated.
func TestObservationsMCPShape(t *testing.T) {
	s := newTestServer(t, nil, nil)
	g := "/v1/users/alice"
	s.must(201, "POST", g+"/entities", tokenAcme, `{"entities":[{"name":"Bob","entityType":"person","observations":["likes tea"]}]}`)

	type answer struct {
		Results []struct {
			EntityName        string   `json:"entityName"`
			AddedObservations []string `json:"addedObservations"`
		} `json:"results"`
		Observations []struct {
			EntityName   string   `json:"entityName"`
			Observations []string `json:"observations"`
		} `json:"observations"`
	}
	var a answer
	r := s.must(201, "POST", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","contents":["likes tea","speaks Dutch"]}]}`)
	r.decode(t, &a)
	if len(a.Results) != 1 || a.Results[0].EntityName != "Bob" || !slices.Equal(a.Results[0].AddedObservations, []string{"speaks Dutch"}) {
		t.Fatalf("add with contents = %s", r.body)
	}
	if len(a.Observations) != 1 || !slices.Equal(a.Observations[0].Observations, []string{"speaks Dutch"}) {
		t.Errorf("the deprecated observations field of the answer = %s", r.body)
	}
	// Nothing new: addedObservations is an empty list, not null.
	r = s.must(201, "POST", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","contents":["speaks Dutch"]}]}`)
	var raw map[string][]map[string]json.RawMessage
	if err := json.Unmarshal(r.body, &raw); err != nil || len(raw["results"]) != 1 || string(raw["results"][0]["addedObservations"]) != "[]" {
		t.Errorf("add of nothing new = %s", r.body)
	}
	// Deprecated: observations for contents.
	s.must(201, "POST", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","observations":["plays go"]}]}`).decode(t, &a)
	if len(a.Results) != 1 || !slices.Equal(a.Results[0].AddedObservations, []string{"plays go"}) {
		t.Errorf("add with the deprecated field = %+v", a)
	}
	if r := s.call("POST", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","contents":["a"],"observations":["b"]}]}`); r.status != 400 || r.errorCode() != "invalid_json" {
		t.Errorf("contents and observations at once = %d %s", r.status, r.body)
	}

	// delete_observations: deletions, and the deprecated observations.
	s.must(204, "DELETE", g+"/observations", tokenAcme, `{"deletions":[{"entityName":"Bob","observations":["likes tea"]}]}`)
	s.must(204, "DELETE", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","observations":["plays go"]}]}`)
	if r := s.call("DELETE", g+"/observations", tokenAcme, `{"deletions":[],"observations":[]}`); r.status != 400 || r.errorCode() != "invalid_json" {
		t.Errorf("deletions and observations at once = %d %s", r.status, r.body)
	}
	var gr graphResponse
	s.must(200, "POST", g+"/graph/open", tokenAcme, `{"names":["Bob"]}`).decode(t, &gr)
	if len(gr.Entities) != 1 || !slices.Equal(gr.Entities[0].Observations, []string{"speaks Dutch"}) {
		t.Errorf("Bob after the deletes = %+v", gr.Entities)
	}
}

// TestObservationsRedacted: with a Redactor, observations written through
// the graph routes (on a new entity, or added) are stored with
// placeholders, and a deletion naming the original text finds them (the
// same data gets the same placeholder for the user).
func TestObservationsRedacted(t *testing.T) {
	s := newTestServer(t, &memory.Options{Redactor: memory.NewRedactor()}, nil)
	g := "/v1/users/alice"
	s.must(201, "POST", g+"/entities", tokenAcme, `{"entities":[{"name":"Bob","entityType":"person","observations":["mail bob@example.org"]}]}`)
	s.must(201, "POST", g+"/observations", tokenAcme, `{"observations":[{"entityName":"Bob","contents":["phone +44 20 7946 0958"]}]}`)
	var e graph.Entity
	err := s.store.ViewGraph(context.Background(), memory.Scope{Tenant: "acme", User: "alice"}, func(tx *graph.Tx) (err error) {
		e, err = tx.Entity("Bob")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(e.Observations, []string{"mail [EMAIL_1]", "phone [PHONE_1]"}) {
		t.Fatalf("observations stored %q", e.Observations)
	}
	s.must(204, "DELETE", g+"/observations", tokenAcme, `{"deletions":[{"entityName":"Bob","observations":["mail bob@example.org"]}]}`)
	err = s.store.ViewGraph(context.Background(), memory.Scope{Tenant: "acme", User: "alice"}, func(tx *graph.Tx) (err error) {
		e, err = tx.Entity("Bob")
		return err
	})
	if err != nil || !slices.Equal(e.Observations, []string{"phone [PHONE_1]"}) {
		t.Errorf("after the deletion: %q, %v", e.Observations, err)
	}
}
