package httpapi

import (
	"strings"
	"testing"
)

// TestNullBodyFieldsAreAbsent sends every route that takes a body once
// with its optional fields null and once with them left out, each to a
// user of its own, and requires the same status, the same error, and the
// same stored tool calls: null reads as absent, as over MCP. Before, a
// tool call's "arguments": null was stored and served back as null.
func TestNullBodyFieldsAreAbsent(t *testing.T) {
	s := newTestServer(t, nil, nil)
	for _, c := range []struct {
		method, path string
		// body has USER where the user goes and OPTn where the optional
		// fields nulls[n] go.
		body  string
		nulls []string
	}{
		{"POST", "/v1/users/USER/sessions/s/messages", `{"messages": [
			{"role": "user", "content": "Alice drinks tea" OPT0},
			{"role": "assistant", "tool_calls": [{"id": "c1", "name": "f" OPT1}]},
			{"role": "tool", "tool_call_id": "c1", "content": "ok"}] OPT2}`, []string{
			`, "name": null, "tool_calls": null, "tool_call_id": null, "time": null, "metadata": null`,
			`, "arguments": null`,
			`, "facts": null`}},
		{"POST", "/v1/users/USER/memories", `{"text": "Alice drinks tea" OPT0}`, []string{
			`, "kind": null, "tags": null, "metadata": null, "source": null, "expires_at": null, "importance": null, "agent": null`}},
		{"POST", "/v1/users/USER/facts", `{"subject": "Alice", "predicate": "drinks", "object": "tea" OPT0}`, []string{
			`, "valid_from": null, "valid_to": null, "source": null, "confidence": null`}},
		{"POST", "/v1/users/USER/traverse", `{"from": ["Alice"] OPT0}`, []string{
			`, "max_hops": null, "direction": null, "predicates": null, "as_of": null, "max_fanout": null, "limit": null`}},
		{"POST", "/v1/users/USER/entities", `{"entities": [{"name": "Bob", "entityType": "person" OPT0}]}`, []string{
			`, "observations": null, "aliases": null`}},
		{"POST", "/v1/users/USER/observations", `{"observations": [{"entityName": "Bob", "contents": ["tall"] OPT0}]}`, []string{
			`, "observations": null`}},
		{"DELETE", "/v1/users/USER/observations", `{"deletions": [{"entityName": "Bob", "observations": ["tall"]}] OPT0}`, []string{
			`, "observations": null`}},
		{"POST", "/v1/recall", `{"user": "USER", "text": "what does Alice drink" OPT0}`, []string{
			`, "session": null, "max_messages": null, "max_tokens": null, "top_k": null, "hops": null, "since": null,
			 "until": null, "half_life": null, "sources": null, "retrieval": null, "mmr": null, "now": null`}},
	} {
		send := func(user string, withNulls bool) response {
			pairs := []string{"USER", user}
			for i, n := range c.nulls {
				if !withNulls {
					n = ""
				}
				pairs = append(pairs, "OPT"+string(rune('0'+i)), n)
			}
			r := strings.NewReplacer(pairs...)
			return s.call(c.method, r.Replace(c.path), tokenAcme, r.Replace(c.body))
		}
		withNull, without := send("nulls", true), send("absent", false)
		if without.status >= 300 {
			t.Errorf("%s %s = %d %s", c.method, c.path, without.status, without.body)
		}
		if withNull.status != without.status || (withNull.status >= 300 && string(withNull.body) != string(without.body)) {
			t.Errorf("%s %s with nulls = %d %s; left out = %d %s", c.method, c.path,
				withNull.status, withNull.body, without.status, without.body)
		}
	}
	// The tool call without arguments is stored without them either way.
	for _, user := range []string{"nulls", "absent"} {
		r := s.must(200, "GET", "/v1/users/"+user+"/sessions/s/messages", tokenAcme, nil)
		if strings.Contains(string(r.body), `"arguments"`) {
			t.Errorf("%s's messages: %s", user, r.body)
		}
	}
}
