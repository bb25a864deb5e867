package cluster

import "github.com/engramdb/engram/kv"

// Owner picks the node that should own part among nodes by rendezvous
// (highest-random-weight) hashing: each node's weight is a hash of its id
// and the partition, and the heaviest wins. Every node computes the same
// answer from the same list, and adding a node moves only the partitions
// it wins (about 1/n of them); removing one moves only its own. Nodes
// without an address (command-line tools, which serve nothing) are
// skipped; ok is false when none is left.
func Owner(part []byte, nodes []kv.Node) (owner kv.Node, ok bool) {
	var best uint64
	for _, n := range nodes {
		if n.Addr == "" {
			continue
		}
		w := weight(n.ID, part)
		if !ok || w > best || w == best && n.ID < owner.ID {
			owner, best, ok = n, w, true
		}
	}
	return owner, ok
}

// weight hashes a node id and a partition: FNV-1a over id, a 0 byte and
// part, then splitmix64's finalizer, so that ids differing in one byte
// get unrelated weights.
func weight(id string, part []byte) uint64 {
	const (
		offset = 14695981039346656037
		prime  = 1099511628211
	)
	h := uint64(offset)
	for i := 0; i < len(id); i++ {
		h = (h ^ uint64(id[i])) * prime
	}
	h *= prime // the 0 separator: "ab"+"c" and "a"+"bc" differ
	for _, b := range part {
		h = (h ^ uint64(b)) * prime
	}
	h ^= h >> 30
	h *= 0xbf58476d1ce4e5b9
	h ^= h >> 27
	h *= 0x94d049bb133111eb
	h ^= h >> 31
	return h
}
