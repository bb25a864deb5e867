package httpapi

import (
	"context"
	"net/http"
	"strings"
	"testing"
)

// TestClusterThirdNodeHolds: on three nodes, a partition whose lease a
// third node holds (neither the node the request reaches nor the
// partition's rendezvous owner) is forwarded to that holder, in one hop:
// the rendezvous owner sees nothing of it and the lease stays where it is.
// Reads through each of the three nodes see the write.
func TestClusterThirdNodeHolds(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b, c := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b"), newClusterNode(t, dsn, schema, "c")
	user := userOwnedBy(t, b, a, b, c)
	if _, err := c.store.Cluster().Acquire(context.Background(), part(user)); err != nil {
		t.Fatal(err)
	}
	path := "/v1/users/" + user + "/memories"
	a.must(http.StatusCreated, "POST", path, tokenAcme, map[string]any{"text": "held by the third node"})
	if !c.store.Cluster().Holds(part(user)) || a.store.Cluster().Holds(part(user)) || b.store.Cluster().Holds(part(user)) {
		t.Fatalf("holds: a %v, b %v, c %v; want c alone", a.store.Cluster().Holds(part(user)),
			b.store.Cluster().Holds(part(user)), c.store.Cluster().Holds(part(user)))
	}
	if s := a.router.Stats(); s.ForwardsOK != 1 || s.ForwardsFailed != 0 {
		t.Fatalf("a's forwards = %+v, want one ok", s)
	}
	for _, n := range []*clusterNode{b, c} {
		if s := n.router.Stats(); s.ForwardsOK != 0 || s.ForwardsFailed != 0 {
			t.Fatalf("%s forwarded: %+v", n.id, s)
		}
	}
	if lines := accessPaths(t, b.testServer); len(lines) != 0 {
		t.Fatalf("the rendezvous owner b served %q", lines)
	}
	if lines := accessPaths(t, c.testServer); len(lines) != 1 || lines[0] != "POST /v1/users/{user}/memories" {
		t.Fatalf("the holder c served %q, want the one POST", lines)
	}
	for _, n := range []*clusterNode{a, b, c} {
		if got := memoryTexts(t, n, user); len(got) != 1 || got[0] != "held by the third node" {
			t.Fatalf("memories through %s = %q", n.id, got)
		}
	}
	if s := b.router.Stats(); s.ForwardsOK != 1 {
		t.Fatalf("b's forwards after its read = %+v, want the read forwarded to c", s)
	}
}

// accessPaths returns "METHOD route" of the access-log records written
// so far.
func accessPaths(t *testing.T, s *testServer) []string {
	t.Helper()
	var out []string
	for _, rec := range accessLines(t, s) {
		m, _ := rec["method"].(string)
		p, _ := rec["route"].(string)
		out = append(out, strings.TrimSpace(m+" "+p))
	}
	return out
}
