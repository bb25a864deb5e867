package httpapi

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/kv/kvtest"
	"github.com/engramdb/engram/memory"
)

// clusterDSN returns ENGRAM_TEST_POSTGRES and a fresh schema dropped at
// cleanup, or skips.
func clusterDSN(t *testing.T) (dsn, schema string) {
	t.Helper()
	return kvtest.PostgresSchema(t, "h_")
}

// clusterNode is one engram serve node: a store in PostgreSQL with
// explicit leases, a router and the real handler on a loopback listener.
type clusterNode struct {
	*testServer
	id     string
	addr   string
	srv    *httptest.Server
	router *cluster.Router
	// mcpRelease lets the MCP stand-in send its second event.
	mcpRelease chan struct{}

	closeOnce sync.Once
}

// newClusterNode starts node id on the schema.
func newClusterNode(t *testing.T, dsn, schema, id string) *clusterNode {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	store, err := memory.Open("", &memory.Options{
		Extraction: memory.ExtractOff,
		Postgres: &memory.PostgresOptions{DSN: dsn, Schema: schema, Node: id, Addr: ln.Addr().String(),
			LeaseTTL: 2 * time.Second, ExplicitLeases: true},
	})
	if err != nil {
		ln.Close()
		t.Fatal(err)
	}
	router := cluster.New(store.Cluster(), nil)
	logs := &syncBuffer{}
	release := make(chan struct{}, 1)
	h, err := New(store, &Options{Tokens: adminTokens(t), Router: router, Logger: slogJSON(logs),
		MCP: mcpEcho{release: release}, MCPScope: func(r *http.Request) (memory.Scope, error) {
			return memory.Scope{Tenant: Tenant(r.Context()), User: r.Header.Get("X-Engram-User")}, nil
		}})
	if err != nil {
		store.Close()
		t.Fatal(err)
	}
	srv := httptest.NewUnstartedServer(h)
	srv.Listener.Close()
	srv.Listener = ln
	srv.Start()
	n := &clusterNode{
		testServer: &testServer{t: t, url: srv.URL, client: srv.Client(), store: store, h: h, log: logs},
		id:         id, addr: ln.Addr().String(), srv: srv, router: router, mcpRelease: release,
	}
	t.Cleanup(n.close)
	return n
}

// close stops the node: its server, router and store (which releases its
// leases and heartbeat row).
func (n *clusterNode) close() {
	n.closeOnce.Do(func() {
		n.srv.Close()
		n.router.Close()
		if err := n.store.Close(); err != nil {
			n.t.Error(err)
		}
	})
}

// mcpEcho stands for the MCP handler: it streams an event naming the user,
// flushes, and sends a second event only once the client has read the
// first (or after 5 seconds), so a proxy that buffers the stream is seen.
type mcpEcho struct{ release chan struct{} }

func (e mcpEcho) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprintf(w, "data: served for %s\n\n", r.Header.Get("X-Engram-User"))
	w.(http.Flusher).Flush()
	select {
	case <-e.release:
	case <-time.After(5 * time.Second):
	}
	fmt.Fprint(w, "data: done\n\n")
}

// userOwnedBy returns a user of tenant acme whose partition rendezvous
// hashing gives to want among nodes.
func userOwnedBy(t *testing.T, want *clusterNode, nodes ...*clusterNode) string {
	t.Helper()
	var live []kv.Node
	for _, n := range nodes {
		live = append(live, kv.Node{ID: n.id, Addr: n.addr})
	}
	for i := 0; i < 1000; i++ {
		u := fmt.Sprintf("user%d", i)
		if o, _ := cluster.Owner(memory.Partition(memory.Scope{Tenant: "acme", User: u}), live); o.ID == want.id {
			return u
		}
	}
	t.Fatal("no user hashes to", want.id)
	return ""
}

func part(user string) []byte { return memory.Partition(memory.Scope{Tenant: "acme", User: user}) }

// memoryTexts lists a user's memories through n.
func memoryTexts(t *testing.T, n *clusterNode, user string) []string {
	t.Helper()
	var list struct {
		Memories []struct {
			Text string `json:"text"`
		} `json:"memories"`
	}
	n.must(http.StatusOK, "GET", "/v1/users/"+user+"/memories", tokenAcme, nil).decode(t, &list)
	var out []string
	for _, m := range list.Memories {
		out = append(out, m.Text)
	}
	return out
}

// TestClusterForward: a request to the node that does not own the
// partition is forwarded to the rendezvous owner, which takes the lease and
// answers; reads through either node see the write.
func TestClusterForward(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, b, a, b)
	a.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "Dana owns the renewal"})
	if !b.store.Cluster().Holds(part(user)) || a.store.Cluster().Holds(part(user)) {
		t.Fatalf("holds: a %v, b %v; want b alone", a.store.Cluster().Holds(part(user)), b.store.Cluster().Holds(part(user)))
	}
	if s := a.router.Stats(); s.ForwardsOK != 1 || s.ForwardsFailed != 0 {
		t.Fatalf("a's forwards = %+v, want one ok", s)
	}
	for _, n := range []*clusterNode{a, b} {
		if got := memoryTexts(t, n, user); len(got) != 1 || got[0] != "Dana owns the renewal" {
			t.Fatalf("memories through %s = %q", n.id, got)
		}
	}
	// Recall names its user in the body; it is routed by it too.
	r := a.must(http.StatusOK, "POST", "/v1/recall", tokenAcme, map[string]any{"user": user, "text": "who owns the renewal"})
	if !strings.Contains(string(r.body), "Dana owns the renewal") {
		t.Fatalf("recall through a: %s", r.body)
	}
	if s := a.router.Stats(); s.ForwardsOK != 3 {
		t.Fatalf("a's forwards = %+v, want 3 ok (post, list, recall)", s)
	}
	if a.store.Cluster().Stats().Held != 0 {
		t.Fatal("a took a lease")
	}
	// MCP: routed by its scope; the stream's first event arrives through
	// the forward before the owner writes the second (flushed, not
	// buffered).
	req, _ := http.NewRequest("POST", a.url+"/mcp", strings.NewReader(`{}`))
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set("X-Engram-User", user)
	start := time.Now()
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	first := make([]byte, 100)
	nr, _ := resp.Body.Read(first)
	if resp.StatusCode != 200 || !strings.Contains(string(first[:nr]), "served for "+user) || time.Since(start) > 4*time.Second {
		t.Fatalf("mcp through a = %d %q after %s", resp.StatusCode, first[:nr], time.Since(start))
	}
	b.mcpRelease <- struct{}{}
	rest, _ := io.ReadAll(resp.Body)
	if !strings.Contains(string(rest), "data: done") || a.router.Stats().ForwardsOK != 4 {
		t.Fatalf("mcp rest %q, forwards %+v", rest, a.router.Stats())
	}
}

// TestClusterFencedMidRequest: a node that believes it holds a partition
// whose lease another node took meanwhile (it paused past the lease)
// answers the write 503 with Retry-After, never 500, and writes nothing.
func TestClusterFencedMidRequest(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, a, a, b)
	a.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "before"})
	// a's lease lapses behind its back; b takes the partition.
	c, err := pgx.Connect(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.Exec(context.Background(), "UPDATE "+schema+".lease_expiry x SET expires_at = '-infinity' FROM "+schema+".leases l WHERE l.part = x.part AND l.node = 'a'")
	c.Close(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.store.Cluster().Acquire(context.Background(), part(user)); err != nil {
		t.Fatal(err)
	}
	if !a.store.Cluster().Holds(part(user)) {
		t.Skip("a's renewal noticed the loss first")
	}
	r := a.call("POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "from the fenced node"})
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" || r.errorCode() != "partition_moved" {
		t.Fatalf("fenced write = %d %v %s", r.status, r.header, r.body)
	}
	if got := memoryTexts(t, b, user); len(got) != 1 || got[0] != "before" {
		t.Fatalf("after the fenced write: %q", got)
	}
	if a.store.Cluster().Stats().Fenced == 0 {
		t.Error("the fenced commit is not counted")
	}
}

// TestClusterLeaseDecides: a partition whose lease another node holds is
// forwarded to that holder, whatever rendezvous hashing says.
func TestClusterLeaseDecides(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, b, a, b)
	if _, err := a.store.Cluster().Acquire(context.Background(), part(user)); err != nil {
		t.Fatal(err)
	}
	b.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "held by a"})
	if !a.store.Cluster().Holds(part(user)) || b.store.Cluster().Holds(part(user)) {
		t.Fatal("the lease moved")
	}
	if s := b.router.Stats(); s.ForwardsOK != 1 {
		t.Fatalf("b's forwards = %+v", s)
	}
}

// TestClusterNoSecondForward: a request that arrives forwarded is served
// where it lands or refused with 503, never forwarded again.
func TestClusterNoSecondForward(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, b, a, b)
	a.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "x"}) // b holds it now
	req, _ := http.NewRequest("GET", a.url+"/v1/users/"+user+"/memories", nil)
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set(cluster.HeaderForwarded, "c")
	before := a.router.Stats()
	resp, err := a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	var body struct{ Error errorDetail }
	decodeBody(t, resp, &body)
	if resp.StatusCode != http.StatusServiceUnavailable || resp.Header.Get("Retry-After") != "1" ||
		body.Error.Code != "owner_unavailable" || !strings.Contains(body.Error.Message, "node b") {
		t.Fatalf("forwarded twice? %d Retry-After %q %+v", resp.StatusCode, resp.Header.Get("Retry-After"), body)
	}
	if a.router.Stats() != before {
		t.Fatalf("a forwarded: %+v", a.router.Stats())
	}
	// A forwarded request of a free partition is served where it lands.
	other := userOwnedBy(t, b, a, b) + "x"
	req, _ = http.NewRequest("GET", a.url+"/v1/users/"+other+"/memories", nil)
	req.Header.Set("Authorization", "Bearer "+tokenAcme)
	req.Header.Set(cluster.HeaderForwarded, "c")
	resp, err = a.client.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != 200 || !a.store.Cluster().Holds(part(other)) {
		t.Fatalf("free partition, forwarded: %d, held by a: %v", resp.StatusCode, a.store.Cluster().Holds(part(other)))
	}
}

// TestClusterTakeover: when the owner closes (its leases released), the
// next requests to another node take the partition over, and every
// earlier write is there, listed and recalled.
func TestClusterTakeover(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, a, a, b)
	var want []string
	for i := 0; i < 5; i++ {
		text := fmt.Sprintf("fact %d about the renewal", i)
		want = append(want, text)
		b.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": text})
	}
	b.must(http.StatusCreated, "POST", "/v1/users/"+user+"/sessions/s1/messages", tokenAcme,
		map[string]any{"messages": []map[string]string{{"role": "user", "content": "the invoice number is 3942"}}})
	if !a.store.Cluster().Holds(part(user)) {
		t.Fatal("a does not hold the partition")
	}
	a.close()
	// A client retries a 503 (b may still list a for a second).
	var r response
	for i := 0; i < 20; i++ {
		r = b.call("POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "written after the takeover"})
		if r.status != http.StatusServiceUnavailable {
			break
		}
		if r.header.Get("Retry-After") != "1" {
			t.Fatalf("503 without Retry-After: %v", r.header)
		}
		time.Sleep(200 * time.Millisecond)
	}
	if r.status != http.StatusCreated {
		t.Fatalf("after a closed: %d %s", r.status, r.body)
	}
	if !b.store.Cluster().Holds(part(user)) {
		t.Fatal("b did not take the partition over")
	}
	got := strings.Join(memoryTexts(t, b, user), "|")
	for _, w := range append(want, "written after the takeover") {
		if !strings.Contains(got, w) {
			t.Fatalf("after the takeover %q is missing from %q", w, got)
		}
	}
	rec := b.must(http.StatusOK, "POST", "/v1/recall", tokenAcme, map[string]any{"user": user, "session": "s1", "text": "fact 3 renewal"})
	if !strings.Contains(string(rec.body), "fact 3 about the renewal") || !strings.Contains(string(rec.body), "3942") {
		t.Fatalf("recall after the takeover: %s", rec.body)
	}
}

// TestClusterDeadOwner: a forward to an owner whose server is gone (its
// lease still valid) is answered 503 with Retry-After, and counted.
func TestClusterDeadOwner(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	user := userOwnedBy(t, a, a, b)
	b.must(http.StatusCreated, "POST", "/v1/users/"+user+"/memories", tokenAcme, map[string]any{"text": "x"})
	a.srv.Close() // the store (its heartbeat and leases) lives on
	r := b.call("GET", "/v1/users/"+user+"/memories", tokenAcme, nil)
	if r.status != http.StatusServiceUnavailable || r.header.Get("Retry-After") != "1" || r.errorCode() != "owner_unavailable" ||
		!strings.Contains(string(r.body), "node a") {
		t.Fatalf("dead owner: %d %v %s", r.status, r.header, r.body)
	}
	if strings.Contains(string(r.body), a.addr) {
		t.Fatalf("the answer shows the owner's address: %s", r.body)
	}
	if s := b.router.Stats(); s.ForwardsFailed != 1 {
		t.Fatalf("b's forwards = %+v", s)
	}
	m := b.must(http.StatusOK, "GET", "/metrics", "", nil)
	if !strings.Contains(string(m.body), `engram_cluster_forwards_total{result="error"} 1`) {
		t.Fatalf("metrics:\n%s", m.body)
	}
}

// TestClusterThreeNodes: requests for many users, all sent to one node,
// are answered, spread over the three nodes, each partition held by
// exactly one.
func TestClusterThreeNodes(t *testing.T) {
	dsn, schema := clusterDSN(t)
	nodes := []*clusterNode{newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b"), newClusterNode(t, dsn, schema, "c")}
	const users = 24
	for i := 0; i < users; i++ {
		u := fmt.Sprintf("u%d", i)
		nodes[0].must(http.StatusCreated, "POST", "/v1/users/"+u+"/memories", tokenAcme, map[string]any{"text": "memory of " + u})
		if got := memoryTexts(t, nodes[i%3], u); len(got) != 1 || got[0] != "memory of "+u {
			t.Fatalf("%s through %s: %q", u, nodes[i%3].id, got)
		}
	}
	total := 0
	for _, n := range nodes {
		held := n.store.Cluster().Stats().Held
		if held == 0 {
			t.Errorf("node %s holds no partition", n.id)
		}
		total += held
	}
	if total != users {
		t.Fatalf("%d leases held for %d partitions", total, users)
	}
}

// TestClusterHealthAndMetrics: /healthz reports the database, the node,
// the live nodes, the leases and the counters; 503 once the database is
// gone. /metrics has the engram_cluster_ series.
func TestClusterHealthAndMetrics(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	a.must(http.StatusCreated, "POST", "/v1/users/"+userOwnedBy(t, a, a, b)+"/memories", tokenAcme, map[string]any{"text": "x"})
	a.must(http.StatusCreated, "POST", "/v1/users/"+userOwnedBy(t, b, a, b)+"/memories", tokenAcme, map[string]any{"text": "y"})
	var h clusterHealthBody
	a.must(http.StatusOK, "GET", "/healthz", "", nil).decode(t, &h)
	if h.Status != "ok" || h.Database != "ok" || h.Node != "a" || len(h.Nodes) != 2 || h.Nodes[0].ID != "a" || h.Nodes[1].ID != "b" ||
		h.LeasesHeld != 1 || h.Counters.LeasesAcquired != 1 || h.Counters.ForwardsOK != 1 {
		t.Fatalf("healthz = %+v", h)
	}
	m := string(a.must(http.StatusOK, "GET", "/metrics", "", nil).body)
	for _, want := range []string{
		"engram_cluster_leases_held 1", "engram_cluster_lease_acquired_total 1", "engram_cluster_takeovers_total 0",
		"engram_cluster_leases_lost_total 0", "engram_cluster_fenced_total 0", "engram_cluster_renew_failures_total 0",
		`engram_cluster_forwards_total{result="ok"} 1`, `engram_cluster_forwards_total{result="error"} 0`,
	} {
		if !strings.Contains(m, want+"\n") {
			t.Errorf("metrics lack %q", want)
		}
	}
	// The database gone (the store closed under the handler): 503.
	a.srv.Close()
	a.router.Close()
	if err := a.store.Close(); err != nil {
		t.Fatal(err)
	}
	a.closeOnce.Do(func() {})
	rec := httptest.NewRecorder()
	a.h.ServeHTTP(rec, httptest.NewRequest("GET", "/healthz", nil))
	h = clusterHealthBody{}
	if err := jsonUnmarshal(rec.Body.Bytes(), &h); err != nil {
		t.Fatal(err)
	}
	if rec.Code != http.StatusServiceUnavailable || h.Status != "unavailable" || h.Database != "unreachable" || h.Node != "a" {
		t.Fatalf("healthz without a database = %d %s", rec.Code, rec.Body)
	}
}

func slogJSON(w io.Writer) *slog.Logger { return slog.New(slog.NewJSONHandler(w, nil)) }

func jsonUnmarshal(b []byte, v any) error { return json.Unmarshal(b, v) }

// decodeBody decodes and closes a response's JSON body.
func decodeBody(t *testing.T, resp *http.Response, v any) {
	t.Helper()
	defer resp.Body.Close()
	if err := json.NewDecoder(resp.Body).Decode(v); err != nil {
		t.Fatal(err)
	}
}

// TestClusterSharedForward: a request under /v1/shared/ sent to a node
// that does not own the tenant's shared partition is forwarded to the
// partition's rendezvous owner, which takes its lease and answers; the
// node it reached takes none.
func TestClusterSharedForward(t *testing.T) {
	dsn, schema := clusterDSN(t)
	a, b := newClusterNode(t, dsn, schema, "a"), newClusterNode(t, dsn, schema, "b")
	shared := memory.Partition(memory.Scope{Tenant: "acme"})
	owner, other := a, b
	if o, _ := cluster.Owner(shared, []kv.Node{{ID: a.id, Addr: a.addr}, {ID: b.id, Addr: b.addr}}); o.ID == b.id {
		owner, other = b, a
	}
	other.must(http.StatusCreated, "POST", "/v1/shared/memories", tokenAcme, map[string]any{"text": "The wifi password is on the fridge"})
	if !owner.store.Cluster().Holds(shared) || other.store.Cluster().Holds(shared) {
		t.Fatalf("shared partition held: owner %v, other %v; want the owner alone",
			owner.store.Cluster().Holds(shared), other.store.Cluster().Holds(shared))
	}
	if s := other.router.Stats(); s.ForwardsOK != 1 {
		t.Fatalf("forwards = %+v, want one ok", s)
	}
	for _, n := range []*clusterNode{a, b} {
		r := n.must(http.StatusOK, "GET", "/v1/shared/memories", tokenAcme, nil)
		if !strings.Contains(string(r.body), "on the fridge") {
			t.Fatalf("shared memories through %s: %s", n.id, r.body)
		}
	}
}
