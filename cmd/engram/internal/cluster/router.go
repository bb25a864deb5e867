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
	// environment) dialled with a 3-second timeout. Whatever the
	// transport, a forward whose owner goes silent is cut (see
	// Router.Route).
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
		return false, r.forwardTo(w, req, part, l.Node, nodes)
	}
	owner, ok := Owner(part, nodes)
	if !ok || owner.ID == r.c.Node() {
		err := r.acquire(ctx, part)
		var lh *kv.LeaseHeldError
		if errors.As(err, &lh) {
			// Another node took it meanwhile: it serves.
			return false, r.forwardTo(w, req, part, lh.Lease.Node, nodes)
		}
		if err != nil {
			return false, err
		}
		return true, nil
	}
	return false, r.forward(w, req, part, owner)
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
func (r *Router) forwardTo(w http.ResponseWriter, req *http.Request, part []byte, id string, nodes []kv.Node) error {
	for _, n := range nodes {
		if n.ID == id && n.Addr != "" {
			return r.forward(w, req, part, n)
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

// errOwnerSilent cancels a forward whose node stopped renewing its
// heartbeat while the request waited for its answer (see watch).
var errOwnerSilent = errors.New("cluster: the owner stopped renewing its heartbeat during the forward")

// forward sends the request of partition part to node n and copies its
// answer to w. It waits for the answer as long as n shows it is alive (its
// heartbeat, renewed every third of the lease TTL, is live); once n has
// been silent for a whole TTL, the forward is cut and answered 503, and
// this node takes the partition over when rendezvous hashing over the
// nodes still live picks it, so that the client's retry is served here.
// A node that merely works long on a request (a model call) keeps
// renewing, and its answer is waited for.
func (r *Router) forward(w http.ResponseWriter, req *http.Request, part []byte, n kv.Node) error {
	f := &forwarding{to: n}
	parent := req.Context()
	ctx, cancel := context.WithCancelCause(parent)
	defer cancel(nil)
	stop := r.watch(ctx, n.ID, cancel)
	defer stop() // also when the proxy aborts a body cut midway
	req = req.WithContext(context.WithValue(ctx, forwardKey{}, f))
	r.proxy.ServeHTTP(w, req)
	stop()
	if errors.Is(context.Cause(ctx), errOwnerSilent) {
		// Even when the client has gone: the next request finds it.
		tctx, tcancel := context.WithTimeout(context.WithoutCancel(parent), r.c.LeaseTTL())
		r.takeOver(tctx, part, n.ID)
		tcancel()
	}
	return f.err
}

// watch checks, every third of the lease TTL until stop is called, that
// node id is live, and cancels ctx with errOwnerSilent when it is not:
// its heartbeat is older than the TTL, or the database could not tell for
// longer than a TTL. The returned stop waits for the check to end.
func (r *Router) watch(ctx context.Context, id string, cancel context.CancelCauseFunc) (stop func()) {
	ttl := r.c.LeaseTTL()
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		t := time.NewTicker(ttl / 3)
		defer t.Stop()
		heard := time.Now()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			live, err := r.isLive(ctx, id, ttl/3)
			switch {
			case err == nil && live:
				heard = time.Now()
			case err == nil || time.Since(heard) > ttl:
				cancel(errOwnerSilent)
				return
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() { close(done) })
		<-ended
	}
}

// isLive reports whether node id has a live heartbeat, asking the
// database (within timeout); the answer refreshes the cached node list.
func (r *Router) isLive(ctx context.Context, id string, timeout time.Duration) (bool, error) {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	list, err := r.c.Nodes(ctx)
	if err != nil {
		return false, err
	}
	if list == nil {
		list = []kv.Node{}
	}
	r.nodes.Lock()
	r.nodes.list, r.nodes.at = list, r.now()
	r.nodes.Unlock()
	for _, n := range list {
		if n.ID == id {
			return true, nil
		}
	}
	return false, nil
}

// takeOverTries bounds the tries to take a silent owner's partition: its
// lease lapses a moment after its heartbeat (they are renewed by two
// statements of one round trip).
const takeOverTries = 3

// takeOver takes the partition of a forward cut because its owner, dead,
// went silent, when rendezvous hashing over the live nodes picks this
// node (another one picked takes it at the retry's forward). A failure
// is left for the next request to find.
func (r *Router) takeOver(ctx context.Context, part []byte, dead string) {
	ttl := r.c.LeaseTTL()
	for try := 1; ; try++ {
		nodes, err := r.liveNodes(ctx)
		if err != nil {
			return
		}
		if owner, ok := Owner(part, nodes); !ok || owner.ID != r.c.Node() {
			return
		}
		actx, cancel := context.WithTimeout(ctx, ttl/3)
		_, err = r.c.Acquire(actx, part)
		cancel()
		var lh *kv.LeaseHeldError
		if err == nil || !errors.As(err, &lh) || lh.Lease.Node != dead || try == takeOverTries {
			if err != nil {
				r.log.Warn("cluster: taking over a silent owner's partition failed", "owner", dead, "err", err)
			}
			return
		}
		wait := min(max(time.Until(lh.Lease.Expires), 0)+10*time.Millisecond, ttl/3)
		select {
		case <-ctx.Done():
			return
		case <-time.After(wait):
		}
	}
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
	reason := "it could not be reached"
	if cause := context.Cause(req.Context()); errors.Is(cause, errOwnerSilent) {
		reason = "it stopped renewing its heartbeat while the request waited for its answer"
		err = cause
	} else if cerr := req.Context().Err(); cerr != nil {
		f.err = cerr
		return
	}
	r.forwardsFailed.Add(1)
	r.forgetNodes()
	r.log.Warn("cluster: forwarding to the partition's owner failed", "owner", f.to.ID, "addr", f.to.Addr, "err", err)
	f.err = &UnavailableError{Owner: f.to.ID, Reason: reason, Err: err}
}
