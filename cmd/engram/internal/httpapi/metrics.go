package httpapi

import (
	"net/http"
	"strconv"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

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

func newMetrics(store *memory.Store, reg *prometheus.Registry) (*metrics, error) {
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
)

func (c storeCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, d := range []*prometheus.Desc{descLSMBytes, descValueLogBytes, descUpdates, descViews, descConflicts, descFailures, descOpened} {
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
}
