package cluster

import (
	"context"
	"errors"
	"log/slog"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/engramdb/engram/kv"
)

// HeaderForwarded marks a request one node forwarded to another; its value
// is the forwarding node's id. A request that carries it is never
// forwarded again.
const HeaderForwarded = "X-Engram-Forwarded"

// nodesTTL is how long the list of live nodes is reused: a node that joins
// is picked by rendezvous hashing a second later at most, and the lookup
// costs one query a second, not one per request.
const nodesTTL = time.Second

// Options configures a [Router]. Every zero field means the default.
type Options struct {
	// Logger receives a warning per failed forward. Nil discards them.
	Logger *slog.Logger
	// Transport carries forwarded requests. Nil means a transport of the
	// router's own: direct connections (no HTTP proxy from the
	// environment) dialled with a 3-second timeout.
	Transport http.RoundTripper
}

// Stats counts forwards since the router was made.
type Stats struct {
	// ForwardsOK counts forwarded requests the owner answered (any
	// status); ForwardsFailed those it could not be reached for.
	ForwardsOK, ForwardsFailed uint64
}

// Router decides, for each request, which node serves it; see the package
// documentation. It is safe for concurrent use.
type Router struct {
	c         *kv.Cluster
	log       *slog.Logger
	transport http.RoundTripper
	proxy     *httputil.ReverseProxy
	now       func() time.Time // test seam

	nodes struct {
		sync.Mutex
		list []kv.Node
		at   time.Time
	}
	forwardsOK, forwardsFailed atomic.Uint64
}

// New returns a router over a store's cluster (memory.Store.Cluster). It
// panics when c is nil: a store in a directory has no partitions to route.
func New(c *kv.Cluster, opts *Options) *Router {
	if c == nil {
		panic("cluster: New needs the cluster of a store in PostgreSQL")
	}
	if opts == nil {
		opts = &Options{}
	}
	r := &Router{c: c, log: opts.Logger, transport: opts.Transport, now: time.Now}
	if r.log == nil {
		r.log = slog.New(slog.DiscardHandler)
	}
	if r.transport == nil {
		r.transport = &http.Transport{
			DialContext:         (&net.Dialer{Timeout: 3 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
			MaxIdleConnsPerHost: 32,
			IdleConnTimeout:     90 * time.Second,
		}
	}
	r.proxy = &httputil.ReverseProxy{
		Rewrite:   r.rewrite,
		Transport: r.transport,
		// Flush at once: MCP answers may stream server-sent events.
		FlushInterval: -1,
		ErrorHandler:  r.forwardFailed,
		ModifyResponse: func(*http.Response) error {
			r.forwardsOK.Add(1)
			return nil
		},
		ErrorLog: slog.NewLogLogger(r.log.Handler(), slog.LevelWarn),
	}
	return r
}

// Cluster returns the cluster the router routes over.
func (r *Router) Cluster() *kv.Cluster { return r.c }

// Stats returns the forward counters.
func (r *Router) Stats() Stats {
	return Stats{ForwardsOK: r.forwardsOK.Load(), ForwardsFailed: r.forwardsFailed.Load()}
}

// Close closes the idle connections to other nodes.
func (r *Router) Close() {
	if t, ok := r.transport.(interface{ CloseIdleConnections() }); ok {
		t.CloseIdleConnections()
	}
}

// Route makes sure the request of partition part is served by its owner.
// When local is true this node holds the lease and the caller serves the
// request; otherwise Route has forwarded it and the owner's answer has been
// written to w. An error (nothing written) is an [*UnavailableError]
// (wrapping [ErrUnavailable]) to answer 503 with Retry-After, or the
// request context's error when the client went away.
//
// The request's body is read by the forward; read it before Route only
// when it is replaced by a copy.
func (r *Router) Route(w http.ResponseWriter, req *http.Request, part []byte) (local bool, err error) {
	if r.c.Holds(part) {
		return true, nil
	}
	ctx := req.Context()
	if req.Header.Get(HeaderForwarded) != "" {
		// Forwarded once: serve here or refuse, never a second hop.
		if err := r.acquire(ctx, part); err != nil {
			return false, err
		}
		return true, nil
	}
	l, held, err := r.c.Lease(ctx, part)
	if err != nil {
		return false, r.dbError(ctx, err)
	}
	if held && l.Node == r.c.Node() {
		// The database says this node holds it (a renewal raced the
		// lookup): renewing is taking it again.
		if err := r.acquire(ctx, part); err != nil {
			return false, err
		}
		return true, nil
	}
	nodes, err := r.liveNodes(ctx)
	if err != nil {
		return false, r.dbError(ctx, err)
	}
	if held {
		return false, r.forwardTo(w, req, l.Node, nodes)
	}
	owner, ok := Owner(part, nodes)
	if !ok || owner.ID == r.c.Node() {
		err := r.acquire(ctx, part)
		var lh *kv.LeaseHeldError
		if errors.As(err, &lh) {
			// Another node took it meanwhile: it serves.
			return false, r.forwardTo(w, req, lh.Lease.Node, nodes)
		}
		if err != nil {
			return false, err
		}
		return true, nil
	}
	return false, r.forward(w, req, owner)
}

// acquire takes the partition's lease; a lease another node holds is an
// *UnavailableError naming it.
func (r *Router) acquire(ctx context.Context, part []byte) error {
	_, err := r.c.Acquire(ctx, part)
	var lh *kv.LeaseHeldError
	switch {
	case err == nil:
		return nil
	case errors.As(err, &lh):
		return &UnavailableError{Owner: lh.Lease.Node, Reason: "it holds the lease and the request was already forwarded once", Err: err}
	}
	return r.dbError(ctx, err)
}

// dbError turns a failed lease or node lookup into an *UnavailableError,
// or the context's error when the client went away.
func (r *Router) dbError(ctx context.Context, err error) error {
	if cerr := ctx.Err(); cerr != nil {
		return cerr
	}
	return &UnavailableError{Reason: "the partition's owner cannot be looked up in the database", Err: err}
}

// liveNodes returns the live nodes, at most nodesTTL old.
func (r *Router) liveNodes(ctx context.Context) ([]kv.Node, error) {
	r.nodes.Lock()
	defer r.nodes.Unlock()
	if r.nodes.list != nil && r.now().Sub(r.nodes.at) < nodesTTL {
		return r.nodes.list, nil
	}
	list, err := r.c.Nodes(ctx)
	if err != nil {
		return nil, err
	}
	if list == nil {
		list = []kv.Node{}
	}
	r.nodes.list, r.nodes.at = list, r.now()
	return list, nil
}

// forgetNodes drops the cached node list, after a forward failed.
func (r *Router) forgetNodes() {
	r.nodes.Lock()
	r.nodes.list = nil
	r.nodes.Unlock()
}

// forwardTo forwards to the node named id, when it is live with an
// address.
func (r *Router) forwardTo(w http.ResponseWriter, req *http.Request, id string, nodes []kv.Node) error {
	for _, n := range nodes {
		if n.ID == id && n.Addr != "" {
			return r.forward(w, req, n)
		}
	}
	return &UnavailableError{Owner: id, Reason: "it is not among the live nodes that serve requests"}
}

type forwardKey struct{}

// forwarding is what the proxy's callbacks learn of one forward.
type forwarding struct {
	to  kv.Node
	err error
}

// forward sends the request to node n and copies its answer to w.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, n kv.Node) error {
	f := &forwarding{to: n}
	req = req.WithContext(context.WithValue(req.Context(), forwardKey{}, f))
	r.proxy.ServeHTTP(w, req)
	return f.err
}

func (r *Router) rewrite(pr *httputil.ProxyRequest) {
	f := pr.In.Context().Value(forwardKey{}).(*forwarding)
	pr.SetURL(&url.URL{Scheme: "http", Host: f.to.Addr})
	pr.SetXForwarded()
	// Authorization, and every other end-to-end header, is kept: the
	// owner authenticates the request again.
	pr.Out.Header.Set(HeaderForwarded, r.c.Node())
}

// forwardFailed is the proxy's error handler: it writes nothing, and
// leaves the error for forward to return (the caller answers it).
func (r *Router) forwardFailed(_ http.ResponseWriter, req *http.Request, err error) {
	f := req.Context().Value(forwardKey{}).(*forwarding)
	if cerr := req.Context().Err(); cerr != nil {
		f.err = cerr
		return
	}
	r.forwardsFailed.Add(1)
	r.forgetNodes()
	r.log.Warn("cluster: forwarding to the partition's owner failed", "owner", f.to.ID, "addr", f.to.Addr, "err", err)
	f.err = &UnavailableError{Owner: f.to.ID, Reason: "it could not be reached", Err: err}
}
