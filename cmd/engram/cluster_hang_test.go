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
	"strings"
	"syscall"
	"testing"
	"time"
)

// The hangs of issue 26 on a cluster, with real `engram serve --postgres`
// processes on the test PostgreSQL: a forward to a paused (SIGSTOP) owner. Each needs
// ENGRAM_TEST_POSTGRES and skips under -short, as TestClusterKill9 does.

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

// TestClusterForwardToPausedOwner (issue 26, hang 2): two nodes with a
// 4 s lease; the owner of a user's partition is stopped (SIGSTOP). A write
// sent to the other node is forwarded to the stopped owner, whose kernel
// accepts the connection; before, the forward waited for the whole pause
// (201 after 40 s). Now it is answered 503 owner_unavailable with
// Retry-After within a few lease TTLs, the node that waited takes the
// partition over without another request, and the retry is served there.
func TestClusterForwardToPausedOwner(t *testing.T) {
	const ttl = 4 * time.Second
	c := newTestCluster(t)
	n1 := c.startNode("n1", ttl)
	n2 := c.startNode("n2", ttl)
	user := c.userOwnedBy(n2, n1, "paused")
	before, _ := c.lease(user)

	if err := n1.p.cmd.Process.Signal(syscall.SIGSTOP); err != nil {
		t.Fatal(err)
	}
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
