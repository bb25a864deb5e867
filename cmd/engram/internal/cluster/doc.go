// Package cluster routes the requests of engram serve nodes that share one
// PostgreSQL store to the node that owns each request's partition.
//
// # Basics
//
// A partition is a (tenant, user) pair, or a tenant's shared partition
// (memory.Partition). One node at a time holds its lease (kv.Cluster) and
// serves it; [Router.Route] decides, for each request, where it is served:
//
//	this node holds the lease ........................ serve here
//	another live node holds a valid lease ............ forward to it
//	nobody holds it: rendezvous hashing over the
//	live nodes picks the owner ........... this node:  acquire, serve here
//	                                       another:    forward (it acquires)
//
// A forwarded request carries [HeaderForwarded] and is never forwarded
// again: the node that receives it acquires the lease when it is free, and
// otherwise answers 503 (an [*UnavailableError] naming the owner), as does
// a forward to a dead owner. Leases lapse with their holder's heartbeat,
// so the next request after that takes the partition over.
//
// The decision is cheap: [kv.Cluster.Holds] is local, the live nodes are
// cached for a second, and only a request of a partition this node does not
// hold costs a lookup of its lease.
//
// # Caveats
//
// [HeaderForwarded] is not authenticated: a client that sends it only
// stops its own request from being forwarded (it is then served here, or
// answered 503). The bearer token is checked again by the owner, so every
// node needs the same tokens file.
package cluster
