package httpapi

import (
	"context"
	"net/http"
	"time"

	"github.com/engramdb/engram/kv"
)

// healthTimeout bounds the database ping of /healthz: a load balancer's
// probe must get an answer, and a database slower than this is as good as
// down for serving.
const healthTimeout = 2 * time.Second

// clusterHealthBody is /healthz of a store in PostgreSQL: the fields of
// the plain answer ("status") and the cluster's state.
type clusterHealthBody struct {
	// Status is "ok", or "unavailable" when the database does not answer.
	Status string `json:"status"`
	// Database is "ok" or "unreachable" (the detail goes to the log).
	Database string `json:"database"`
	// Node is this node's id.
	Node string `json:"node"`
	// Nodes are the live nodes, this one included; absent when the
	// database does not answer.
	Nodes []healthNode `json:"nodes"`
	// LeasesHeld counts the partitions this node serves.
	LeasesHeld int            `json:"leases_held"`
	Counters   healthCounters `json:"counters"`
}

// healthNode is a live node. Its address is left out: /healthz is public,
// and the addresses are the cluster's internal ones.
type healthNode struct {
	ID       string    `json:"id"`
	LastSeen time.Time `json:"last_seen"`
}

// healthCounters are kv.ClusterStats and the router's forwards since the
// node started.
type healthCounters struct {
	LeasesAcquired uint64 `json:"leases_acquired"`
	Takeovers      uint64 `json:"takeovers"`
	LeasesLost     uint64 `json:"leases_lost"`
	Fenced         uint64 `json:"fenced"`
	RenewFailures  uint64 `json:"renew_failures"`
	ForwardsOK     uint64 `json:"forwards_ok"`
	ForwardsFailed uint64 `json:"forwards_failed"`
}

// clusterHealth pings the database (by listing the live nodes) and
// reports the cluster's state: 200, or 503 when the database does not
// answer within healthTimeout.
func (h *Handler) clusterHealth(ctx context.Context, c *kv.Cluster) (int, clusterHealthBody) {
	st := c.Stats()
	body := clusterHealthBody{
		Status: "ok", Database: "ok", Node: c.Node(), Nodes: []healthNode{}, LeasesHeld: st.Held,
		Counters: healthCounters{
			LeasesAcquired: st.Acquired, Takeovers: st.Takeovers, LeasesLost: st.Lost,
			Fenced: st.Fenced, RenewFailures: st.RenewFailures,
		},
	}
	if h.router != nil {
		rs := h.router.Stats()
		body.Counters.ForwardsOK, body.Counters.ForwardsFailed = rs.ForwardsOK, rs.ForwardsFailed
	}
	ctx, cancel := context.WithTimeout(ctx, healthTimeout)
	defer cancel()
	nodes, err := c.Nodes(ctx)
	if err != nil {
		if info := infoFrom(ctx); info != nil {
			info.err = err
		}
		body.Status, body.Database = "unavailable", "unreachable"
		return http.StatusServiceUnavailable, body
	}
	for _, n := range nodes {
		body.Nodes = append(body.Nodes, healthNode{ID: n.ID, LastSeen: n.Seen})
	}
	return http.StatusOK, body
}
