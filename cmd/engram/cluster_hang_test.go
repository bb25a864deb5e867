//go:build !windows

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
)

// The hangs of issue 26 on a cluster, with real `engram serve --postgres`
// processes on the test PostgreSQL: a forward to a paused (SIGSTOP) owner,
// a flush on the node that forwarded an append, and a flush after a clean
// restart that left extraction jobs of partitions nobody holds. Each needs
// ENGRAM_TEST_POSTGRES and skips under -short, as TestClusterKill9 does;
// named TestFault* for the fault suite (bench/results/faults.md).

// startNode starts a node with id and lease TTL ttl, with extra flags.
func (c *testCluster) startNode(id string, ttl time.Duration, extra ...string) *clusterNode {
	c.t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		c.t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	args := append([]string{"serve", "--postgres", c.dsn, "--postgres-schema", c.schema,
		"--tokens", c.tokens, "--addr", addr, "--advertise", addr, "--node-id", id,
		"--lease-ttl", ttl.String(), "--log-format", "json"}, extra...)
	p := startServeProcess(c.t, args...)
	n := &clusterNode{id: id, addr: p.addr, p: p}
	c.nodes = append(c.nodes, n)
	return n
}

// userOwnedBy writes a memory of users named prefix0, prefix1, ...
// through via until one's partition is held by owner, and returns it.
func (c *testCluster) userOwnedBy(via, owner *clusterNode, prefix string) string {
	c.t.Helper()
	for i := range 40 {
		u := fmt.Sprintf("%s%d", prefix, i)
		c.get(via, "POST", "/v1/users/"+u+"/memories", map[string]any{"text": "placing " + u}, nil)
		if l, ok := c.lease(u); ok && l.live && l.node == owner.id {
			return u
		}
	}
	c.t.Fatalf("none of 40 users written through %s is owned by %s", via.id, owner.id)
	return ""
}

// stopProcess stops p (SIGSTOP) and waits until the kernel shows it
// stopped: the signal is delivered asynchronously, and a request sent at
// once could still be served (CI saw the "paused" owner answer 201 a
// forwarded write 0.5 ms after the signal was sent).
func stopProcess(t testing.TB, p *os.Process) {
	t.Helper()
	if err := p.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
	stat := fmt.Sprintf("/proc/%d/stat", p.Pid)
	for deadline := time.Now().Add(10 * time.Second); ; {
		b, err := os.ReadFile(stat)
		if err != nil {
			t.Fatalf("read %s: %v", stat, err)
		}
		// pid (comm) state ...: comm may hold spaces and parentheses.
		if i := bytes.LastIndexByte(b, ')'); i >= 0 && i+2 < len(b) && (b[i+2] == 'T' || b[i+2] == 't') {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("process %d not stopped 10 s after SIGSTOP: %s", p.Pid, b)
		}
		time.Sleep(time.Millisecond)
	}
}

// rawCall is call with the answer's headers, and the time it took.
func (c *testCluster) rawCall(timeout time.Duration, n *clusterNode, method, path string, body any) (code int, header http.Header, msg string, took time.Duration) {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	var rd io.Reader
	if body != nil {
		data, _ := json.Marshal(body)
		rd = bytes.NewReader(data)
	}
	req, _ := http.NewRequestWithContext(ctx, method, "http://"+n.addr+path, rd)
	req.Header.Set("Authorization", "Bearer "+serveTestToken)
	if body != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	start := time.Now()
	resp, err := c.client.Do(req)
	if err != nil {
		return 0, nil, err.Error(), time.Since(start)
	}
	defer resp.Body.Close()
	data, _ := io.ReadAll(resp.Body)
	return resp.StatusCode, resp.Header, string(data), time.Since(start)
}

// errorCode is the code of a JSON error answer.
func errorCode(msg string) string {
	var e struct {
		Error struct{ Code string } `json:"error"`
	}
	_ = json.Unmarshal([]byte(msg), &e)
	return e.Error.Code
}

// TestFaultClusterPausedOwner (issue 26, hang 2): two nodes with a
// 4 s lease; the owner of a user's partition is stopped (SIGSTOP). A write
// sent to the other node is forwarded to the stopped owner, whose kernel
// accepts the connection; before, the forward waited for the whole pause
// (201 after 40 s). Now it is answered 503 owner_unavailable with
// Retry-After within a few lease TTLs, the node that waited takes the
// partition over without another request, and the retry is served there.
func TestFaultClusterPausedOwner(t *testing.T) {
	const ttl = 4 * time.Second
	c := newTestCluster(t)
	n1 := c.startNode("n1", ttl)
	n2 := c.startNode("n2", ttl)
	user := c.userOwnedBy(n2, n1, "paused")
	before, _ := c.lease(user)

	stopProcess(t, n1.p.cmd.Process)
	n1.down.Store(true)
	resumed := false
	resume := func() {
		if !resumed {
			resumed = true
			n1.p.cmd.Process.Signal(syscall.SIGCONT)
			n1.down.Store(false)
		}
	}
	t.Cleanup(resume)

	// Forwarded to the stopped owner: a bounded wait, then 503.
	code, hdr, msg, took := c.rawCall(40*time.Second, n2, "POST", "/v1/users/"+user+"/memories", map[string]any{"text": "sent during the pause"})
	t.Logf("a write forwarded to the stopped owner: %d %s after %s", code, strings.TrimSpace(msg), took.Round(100*time.Millisecond))
	if code != http.StatusServiceUnavailable || errorCode(msg) != "owner_unavailable" {
		t.Fatalf("a write forwarded to the stopped owner = %d %q after %s, want 503 owner_unavailable", code, msg, took)
	}
	if hdr.Get("Retry-After") == "" {
		t.Errorf("the 503 has no Retry-After")
	}
	if took > 3*ttl {
		t.Errorf("the 503 came after %s, more than 3 lease TTLs (%s)", took, 3*ttl)
	}

	// The waiting node took the partition over, without a new request.
	deadline := time.Now().Add(ttl)
	for {
		l, ok := c.lease(user)
		if ok && l.live && l.node == n2.id && l.epoch > before.epoch {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%s after the 503 the lease of %s is %+v (%v), want %s's at an epoch above %d", ttl, user, l, ok, n2.id, before.epoch)
		}
		time.Sleep(50 * time.Millisecond)
	}
	// The retry is served by it at once, the owner still stopped.
	code, _, msg, took = c.rawCall(10*time.Second, n2, "POST", "/v1/users/"+user+"/memories", map[string]any{"text": "the retry"})
	if code != http.StatusCreated {
		t.Fatalf("the retry through %s = %d %s after %s", n2.id, code, msg, took)
	}
	resume()
	// Through the resumed node (forwarded to the new owner): the retry is
	// there.
	st := c.read(n1, user, nil)
	if _, ok := st.memories["the retry"]; !ok {
		t.Errorf("the retry is not stored: %v", st.memories)
	}
}

// TestFaultClusterFlushAfterForward (issue 26, hang 3a): an append sent
// through the node that does not own the user, followed at once by a flush
// to that node. Before, the flush waited for its own worker, which never
// runs another node's jobs, and hung until the client gave up (4 times out
// of 4). Now it returns once the owner has extracted the message.
func TestFaultClusterFlushAfterForward(t *testing.T) {
	c := newTestCluster(t)
	n1 := c.startNode("n1", clusterLeaseTTL)
	n2 := c.startNode("n2", clusterLeaseTTL)
	user := c.userOwnedBy(n2, n1, "fwd")
	for i := range 4 {
		city := clusterWord("Berl", i)
		city = strings.ToUpper(city[:1]) + city[1:]
		c.get(n2, "POST", "/v1/users/"+user+"/sessions/s/messages",
			map[string]any{"messages": []map[string]any{{"role": "user", "content": "I live in " + city + "."}}}, nil)
		code, _, msg, took := c.rawCall(30*time.Second, n2, "POST", "/v1/admin/flush", nil)
		if code != http.StatusNoContent {
			t.Fatalf("round %d: flush through %s after an append forwarded to %s = %d %s after %s", i, n2.id, n1.id, code, msg, took)
		}
		t.Logf("round %d: flush answered %d after %s", i, code, took.Round(time.Millisecond))
		var facts struct {
			Facts []struct{ Predicate, Object string } `json:"facts"`
		}
		c.get(n2, "GET", "/v1/users/"+user+"/facts", nil, &facts)
		found := false
		for _, f := range facts.Facts {
			found = found || f.Object == city
		}
		if !found {
			t.Errorf("round %d: after the flush, no fact of %s's city %s: %+v", i, user, city, facts.Facts)
		}
	}
}

// slowModel is an OpenAI-compatible chat server for the extractor that
// holds every call until released, then answers an empty extraction.
type slowModel struct {
	srv      *httptest.Server
	release  chan struct{}
	started  chan struct{} // receives a value per call, when there is room
	answered atomic.Int64
}

func newSlowModel(t *testing.T) *slowModel {
	m := &slowModel{release: make(chan struct{}), started: make(chan struct{}, 64)}
	m.srv = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		select {
		case m.started <- struct{}{}:
		default:
		}
		select {
		case <-m.release:
		case <-r.Context().Done():
			return
		}
		m.answered.Add(1)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"index":0,"message":{"role":"assistant","content":"{\"add\": []}"},"finish_reason":"stop"}]}`)
	}))
	t.Cleanup(m.srv.Close)
	return m
}

// TestFaultClusterFlushAfterRestart (issue 26, hang 3b): messages of two users
// are appended with a slow extractor, the node is stopped cleanly (its
// leases released, the jobs left queued) and started again. Before, the
// worker skipped the partitions nobody held and the flush hung until a
// request touched each user. Now the worker takes the free partitions and
// drains them, and the flush returns.
func TestFaultClusterFlushAfterRestart(t *testing.T) {
	c := newTestCluster(t)
	model := newSlowModel(t)
	flags := []string{"--extract-model", "slow", "--extract-base-url", model.srv.URL + "/v1"}
	n1 := c.startNode("n1", clusterLeaseTTL, flags...)
	users := []string{"ra", "rb"}
	for i, u := range []string{"ra", "ra", "rb"} {
		c.get(n1, "POST", "/v1/users/"+u+"/sessions/s/messages",
			map[string]any{"messages": []map[string]any{{"role": "user", "content": fmt.Sprintf("message %d of %s", i, u)}}}, nil)
	}
	select {
	case <-model.started:
	case <-time.After(20 * time.Second):
		t.Fatal("the extractor was not called within 20 s")
	}
	if err := n1.p.cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-n1.p.exited:
		if err != nil {
			t.Fatalf("n1 exited with %v after SIGTERM", err)
		}
	case <-time.After(20 * time.Second):
		t.Fatal("n1 did not exit within 20 s of SIGTERM")
	}
	n1.down.Store(true)
	for _, u := range users {
		if l, ok := c.lease(u); ok && l.live {
			t.Fatalf("after a clean stop the lease of %s is live: %+v", u, l)
		}
	}
	if n := model.answered.Load(); n != 0 {
		t.Fatalf("the model answered %d calls before the stop", n)
	}

	close(model.release)
	again := c.startNode("n1", clusterLeaseTTL, flags...)
	code, _, msg, took := c.rawCall(30*time.Second, again, "POST", "/v1/admin/flush", nil)
	if code != http.StatusNoContent {
		t.Fatalf("flush after the restart = %d %s after %s (the model answered %d calls)", code, msg, took, model.answered.Load())
	}
	t.Logf("flush after the restart answered %d after %s; the model answered %d calls", code, took.Round(time.Millisecond), model.answered.Load())
	if n := model.answered.Load(); n < 3 {
		t.Errorf("the model answered %d calls, want the 3 queued messages", n)
	}
	for _, u := range users {
		if l, ok := c.lease(u); !ok || !l.live || l.node != again.id {
			t.Errorf("after the flush the lease of %s is %+v (%v), want the restarted node's", u, l, ok)
		}
	}
}
