package cluster

import (
	"fmt"
	"testing"

	"github.com/engramdb/engram/kv"
)

func testNodes(ids ...string) []kv.Node {
	var ns []kv.Node
	for _, id := range ids {
		ns = append(ns, kv.Node{ID: id, Addr: id + ":7437"})
	}
	return ns
}

func testParts(n int) [][]byte {
	ps := make([][]byte, n)
	for i := range ps {
		ps[i] = []byte(fmt.Sprintf("t\x00acme\x00user-%d", i))
	}
	return ps
}

// TestOwnerSpreads: 3,000 partitions over three nodes: each gets close to a
// third.
func TestOwnerSpreads(t *testing.T) {
	nodes := testNodes("node-a", "node-b", "node-c")
	counts := map[string]int{}
	for _, p := range testParts(3000) {
		o, ok := Owner(p, nodes)
		if !ok {
			t.Fatal("no owner")
		}
		counts[o.ID]++
	}
	for _, n := range nodes {
		if c := counts[n.ID]; c < 850 || c > 1150 {
			t.Errorf("node %s owns %d of 3000 partitions, want about 1000 (%v)", n.ID, c, counts)
		}
	}
}

// TestOwnerStable: adding a node moves only the partitions the new node
// wins (about a quarter of them with four); removing it moves them back;
// the order of the list does not matter.
func TestOwnerStable(t *testing.T) {
	three := testNodes("node-a", "node-b", "node-c")
	four := append(testNodes("node-d"), three...)
	moved := 0
	parts := testParts(4000)
	for _, p := range parts {
		before, _ := Owner(p, three)
		after, _ := Owner(p, four)
		if before.ID != after.ID {
			moved++
			if after.ID != "node-d" {
				t.Fatalf("partition %q moved from %s to %s, not to the new node", p, before.ID, after.ID)
			}
		}
		reversed := []kv.Node{three[2], three[1], three[0]}
		if r, _ := Owner(p, reversed); r.ID != before.ID {
			t.Fatalf("the order of the nodes changed the owner of %q", p)
		}
	}
	if moved < 800 || moved > 1200 {
		t.Errorf("%d of 4000 partitions moved to the fourth node, want about 1000", moved)
	}
}

// TestOwnerSkipsNodesWithoutAddress: a command-line tool's heartbeat
// (no address) never owns a partition.
func TestOwnerSkipsNodesWithoutAddress(t *testing.T) {
	nodes := []kv.Node{{ID: "cli"}, {ID: "serve", Addr: "h:1"}}
	for _, p := range testParts(50) {
		if o, ok := Owner(p, nodes); !ok || o.ID != "serve" {
			t.Fatalf("owner = %v %v", o, ok)
		}
	}
	if _, ok := Owner([]byte("p"), []kv.Node{{ID: "cli"}}); ok {
		t.Fatal("an owner among nodes without an address")
	}
	if _, ok := Owner([]byte("p"), nil); ok {
		t.Fatal("an owner among no nodes")
	}
}

func TestUnavailableError(t *testing.T) {
	e := &UnavailableError{Owner: "b", Reason: "it could not be reached", Err: fmt.Errorf("dial tcp 10.0.0.2:7437: refused")}
	if got := e.Error(); got != "cluster: the partition's owner is unavailable: node b owns the partition: it could not be reached; retry" {
		t.Fatalf("Error() = %q", got)
	}
}
