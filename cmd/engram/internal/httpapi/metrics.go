package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/engramdb/engram/cmd/engram/internal/cluster"
	"github.com/engramdb/engram/kv"
	"github.com/engramdb/engram/memory"
)

// metrics are the handler's Prometheus metrics. Their labels are route
// patterns and status classes, never tenants or ids, so their cardinality is
// fixed by the route table and public scraping leaks nothing about the data.
type metrics struct {
	registry *prometheus.Registry
	requests *prometheus.HistogramVec
	inFlight prometheus.Gauge
	recall   prometheus.Histogram
	serve    http.Handler
}

// latencyBuckets run from 0.25 ms to about 8 s: an append with Sync
// durability takes a few milliseconds, a recall with a network embedder a
// few hundred.
var latencyBuckets = prometheus.ExponentialBuckets(0.00025, 2, 16)

func newMetrics(store *memory.Store, router *cluster.Router, reg *prometheus.Registry) (*metrics, error) {
	own := reg == nil
	if own {
		reg = prometheus.NewRegistry()
	}
	m := &metrics{
		registry: reg,
		requests: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Namespace: "engram",
			Subsystem: "http",
			Name:      "request_duration_seconds",
			Help:      "Latency of HTTP requests by method, route pattern and status class.",
			Buckets:   latencyBuckets,
		}, []string{"method", "route", "status_class"}),
		inFlight: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: "engram",
			Subsystem: "http",
			Name:      "requests_in_flight",
			Help:      "HTTP requests being served, /metrics scrapes excluded.",
		}),
		recall: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: "engram",
			Name:      "recall_duration_seconds",
			Help:      "Latency of Store.Recall calls, embedding the query included.",
			Buckets:   latencyBuckets,
		}),
	}
	cs := []prometheus.Collector{m.requests, m.inFlight, m.recall, storeCollector{store}}
	if c := store.Cluster(); c != nil {
		cs = append(cs, clusterCollector{c: c, router: router})
	}
	if own {
		cs = append(cs, collectors.NewGoCollector(), collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}))
	}
	for _, c := range cs {
		if err := reg.Register(c); err != nil {
			return nil, err
		}
	}
	m.serve = promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	return m, nil
}

func (m *metrics) observe(rt route, status int, d time.Duration) {
	m.requests.WithLabelValues(rt.method, rt.path, statusClass(status)).Observe(d.Seconds())
}

// statusClass returns "2xx", "4xx" and so on.
func statusClass(status int) string {
	if status < 100 || status > 599 {
		return "other"
	}
	return strconv.Itoa(status/100) + "xx"
}

func (h *Handler) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	h.metrics.serve.ServeHTTP(w, r)
	return nil
}

// storeCollector reports the store's sizes and counters at scrape time, from
// one [memory.Store.Stats] snapshot.
type storeCollector struct {
	store *memory.Store
}

var (
	descLSMBytes = prometheus.NewDesc("engram_store_lsm_bytes",
		"On-disk size of the store's LSM tree (refreshed about once a minute).", nil, nil)
	descValueLogBytes = prometheus.NewDesc("engram_store_value_log_bytes",
		"On-disk size of the store's value log (refreshed about once a minute).", nil, nil)
	descUpdates = prometheus.NewDesc("engram_store_updates_total",
		"Write transactions since the store opened.", nil, nil)
	descViews = prometheus.NewDesc("engram_store_views_total",
		"Read transactions since the store opened.", nil, nil)
	descConflicts = prometheus.NewDesc("engram_store_conflicts_total",
		"Write transactions retried after a conflict.", nil, nil)
	descFailures = prometheus.NewDesc("engram_store_failures_total",
		"Transactions that returned an error.", nil, nil)
	descOpened = prometheus.NewDesc("engram_store_opened_timestamp_seconds",
		"When the store was opened, in Unix seconds.", nil, nil)
	descBackgroundBusy = prometheus.NewDesc("engram_background_busy_seconds_total",
		"Time each kind of background work (extract, sweep, snapshot, writeback) spent working (wall clock; its CPU time is at most this).", []string{"work"}, nil)
	descBackgroundPaused = prometheus.NewDesc("engram_background_paused_seconds_total",
		"Time each kind of background work stood aside for requests (memory.Options.BackgroundShare).", []string{"work"}, nil)
	descCacheHits = prometheus.NewDesc("engram_partition_cache_hits_total",
		"Uses of a user's (or tenant's shared) indexes that found them loaded.", nil, nil)
	descCacheMisses = prometheus.NewDesc("engram_partition_cache_misses_total",
		"Uses of a partition's indexes that loaded them from the store (snapshot and log, or a rebuild).", nil, nil)
	descCacheEvictions = prometheus.NewDesc("engram_partition_cache_evictions_total",
		"Partitions evicted to keep the loaded indexes within the budget (--partition-cache).", nil, nil)
	descCacheBytes = prometheus.NewDesc("engram_partition_cache_bytes",
		"Estimated memory of the loaded partitions' indexes.", nil, nil)
	descCacheBudget = prometheus.NewDesc("engram_partition_cache_budget_bytes",
		"The partition cache's budget (--partition-cache, or its default).", nil, nil)
	descCachePartitions = prometheus.NewDesc("engram_partition_cache_partitions",
		"Partitions loaded.", nil, nil)
)

// storeDescs are the metrics storeCollector reports.
var storeDescs = []*prometheus.Desc{descLSMBytes, descValueLogBytes, descUpdates, descViews, descConflicts, descFailures, descOpened,
	descCacheHits, descCacheMisses, descCacheEvictions, descCacheBytes, descCacheBudget, descCachePartitions,
	descBackgroundBusy, descBackgroundPaused}

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range storeDescs {
		ch <- d
	}
}

func (c storeCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.store.Stats()
	ch <- prometheus.MustNewConstMetric(descLSMBytes, prometheus.GaugeValue, float64(s.LSMBytes))
	ch <- prometheus.MustNewConstMetric(descValueLogBytes, prometheus.GaugeValue, float64(s.ValueLogBytes))
	ch <- prometheus.MustNewConstMetric(descUpdates, prometheus.CounterValue, float64(s.Updates))
	ch <- prometheus.MustNewConstMetric(descViews, prometheus.CounterValue, float64(s.Views))
	ch <- prometheus.MustNewConstMetric(descConflicts, prometheus.CounterValue, float64(s.Conflicts))
	ch <- prometheus.MustNewConstMetric(descFailures, prometheus.CounterValue, float64(s.Failures))
	ch <- prometheus.MustNewConstMetric(descOpened, prometheus.GaugeValue, float64(s.OpenedAt.UnixNano())/1e9)
	for _, b := range c.store.BackgroundStats() {
		ch <- prometheus.MustNewConstMetric(descBackgroundBusy, prometheus.CounterValue, b.Busy.Seconds(), b.Work.String())
		ch <- prometheus.MustNewConstMetric(descBackgroundPaused, prometheus.CounterValue, b.Paused.Seconds(), b.Work.String())
	}
	ch <- prometheus.MustNewConstMetric(descCacheHits, prometheus.CounterValue, float64(s.Cache.Hits))
	ch <- prometheus.MustNewConstMetric(descCacheMisses, prometheus.CounterValue, float64(s.Cache.Misses))
	ch <- prometheus.MustNewConstMetric(descCacheEvictions, prometheus.CounterValue, float64(s.Cache.Evictions))
	ch <- prometheus.MustNewConstMetric(descCacheBytes, prometheus.GaugeValue, float64(s.Cache.Bytes))
	ch <- prometheus.MustNewConstMetric(descCacheBudget, prometheus.GaugeValue, float64(s.Cache.Budget))
	ch <- prometheus.MustNewConstMetric(descCachePartitions, prometheus.GaugeValue, float64(s.Cache.Partitions))
}

// clusterCollector reports partition ownership (kv.Cluster.Stats) and the
// router's forwards, for a store in PostgreSQL.
type clusterCollector struct {
	c      *kv.Cluster
	router *cluster.Router // nil: no forwards
}

var (
	descLeasesHeld = prometheus.NewDesc("engram_cluster_leases_held",
		"Partition leases this node holds.", nil, nil)
	descLeasesAcquired = prometheus.NewDesc("engram_cluster_lease_acquired_total",
		"Partition leases this node took (takeovers included).", nil, nil)
	descTakeovers = prometheus.NewDesc("engram_cluster_takeovers_total",
		"Partition leases this node took over from a node whose lease had lapsed.", nil, nil)
	descLeasesLost = prometheus.NewDesc("engram_cluster_leases_lost_total",
		"Partition leases a renewal found taken over by another node.", nil, nil)
	descFenced = prometheus.NewDesc("engram_cluster_fenced_total",
		"Commits refused because this node did not hold the partition's lease.", nil, nil)
	descRenewFailures = prometheus.NewDesc("engram_cluster_renew_failures_total",
		"Lease renewal rounds that could not reach the database.", nil, nil)
	descForwards = prometheus.NewDesc("engram_cluster_forwards_total",
		"Requests forwarded to their partition's owner: ok when it answered, error when it could not be reached.", []string{"result"}, nil)
)

func (c clusterCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLeasesHeld, descLeasesAcquired, descTakeovers, descLeasesLost, descFenced, descRenewFailures, descForwards} {
		ch <- d
	}
}

func (c clusterCollector) Collect(ch chan<- prometheus.Metric) {
	s := c.c.Stats()
	ch <- prometheus.MustNewConstMetric(descLeasesHeld, prometheus.GaugeValue, float64(s.Held))
	ch <- prometheus.MustNewConstMetric(descLeasesAcquired, prometheus.CounterValue, float64(s.Acquired))
	ch <- prometheus.MustNewConstMetric(descTakeovers, prometheus.CounterValue, float64(s.Takeovers))
	ch <- prometheus.MustNewConstMetric(descLeasesLost, prometheus.CounterValue, float64(s.Lost))
	ch <- prometheus.MustNewConstMetric(descFenced, prometheus.CounterValue, float64(s.Fenced))
	ch <- prometheus.MustNewConstMetric(descRenewFailures, prometheus.CounterValue, float64(s.RenewFailures))
	var f cluster.Stats
	if c.router != nil {
		f = c.router.Stats()
	}
	ch <- prometheus.MustNewConstMetric(descForwards, prometheus.CounterValue, float64(f.ForwardsOK), "ok")
	ch <- prometheus.MustNewConstMetric(descForwards, prometheus.CounterValue, float64(f.ForwardsFailed), "error")
}
