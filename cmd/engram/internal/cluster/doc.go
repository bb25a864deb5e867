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
// A forward waits for the owner's answer as long as the owner is live
// (its heartbeat, renewed every third of the lease TTL, has not lapsed):
// an owner that is paused or hung whole (SIGSTOP, a stalled VM) accepts
// the connection in its kernel and never answers, so every third of the
// TTL the forwarding node asks the database, and once the owner has been
// silent for a TTL the forward is cut and answered 503. The forwarding
// node then takes the partition, when rendezvous hashing over the nodes
// still live picks it, so that the client's retry is served at once. The
// wait is thus at most about 4/3 of the TTL past the owner's last
// heartbeat; an owner that is alive and slow (a model call) is waited for.
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
