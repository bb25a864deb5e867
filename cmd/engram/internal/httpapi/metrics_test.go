package httpapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// scrape reads /metrics and parses the text exposition format.
func (s *testServer) scrape(token string) map[string]*dto.MetricFamily {
	s.t.Helper()
	r := s.must(200, "GET", "/metrics", token, nil)
	parser := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := parser.TextToMetricFamilies(bytes.NewReader(r.body))
	if err != nil {
		s.t.Fatalf("parse /metrics: %v\n%s", err, r.body)
	}
	return fams
}

func labels(m *dto.Metric) map[string]string {
	out := map[string]string{}
	for _, l := range m.GetLabel() {
		out[l.GetName()] = l.GetValue()
	}
	return out
}

func TestMetrics(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(201, "POST", "/v1/users/alice/sessions/s/messages", tokenAcme, `{"messages":[{"role":"user","content":"hello"}]}`)
	s.must(201, "POST", "/v1/users/alice/sessions/s/messages", tokenAcme, `{"messages":[{"role":"user","content":"again"}]}`)
	s.must(404, "GET", "/v1/users/alice/memories/01JNOSUCHMEMORY0000000000", tokenAcme, nil)
	s.must(401, "GET", "/v1/users/alice/sessions", "", nil)
	s.must(200, "POST", "/v1/recall", tokenAcme, `{"user":"alice","session":"s","text":"hello"}`)
	s.must(404, "GET", "/nowhere", "", nil)

	fams := s.scrape("")
	req := fams["engram_http_request_duration_seconds"]
	if req == nil || req.GetType() != dto.MetricType_HISTOGRAM {
		t.Fatalf("no request histogram: %v", req)
	}
	counts := map[string]uint64{}
	for _, m := range req.GetMetric() {
		l := labels(m)
		counts[l["method"]+" "+l["route"]+" "+l["status_class"]] = m.GetHistogram().GetSampleCount()
		if len(m.GetHistogram().GetBucket()) != len(latencyBuckets)+1 { // and +Inf
			t.Errorf("%v has %d buckets", l, len(m.GetHistogram().GetBucket()))
		}
	}
	for key, want := range map[string]uint64{
		"POST /v1/users/{user}/sessions/{session}/messages 2xx": 2,
		"GET /v1/users/{user}/memories/{id} 4xx":                1,
		"GET /v1/users/{user}/sessions 4xx":                     1,
		"POST /v1/recall 2xx":                                   1,
		"GET unmatched 4xx":                                     1,
	} {
		if counts[key] != want {
			t.Errorf("requests %q = %d, want %d (have %v)", key, counts[key], want, counts)
		}
	}
	recall := fams["engram_recall_duration_seconds"]
	if recall == nil || recall.GetMetric()[0].GetHistogram().GetSampleCount() != 1 {
		t.Errorf("recall histogram = %v", recall)
	}
	for _, name := range []string{"engram_store_lsm_bytes", "engram_store_value_log_bytes", "engram_store_updates_total",
		"engram_store_views_total", "engram_store_conflicts_total", "engram_store_failures_total",
		"engram_store_opened_timestamp_seconds", "engram_http_requests_in_flight", "go_goroutines"} {
		if fams[name] == nil {
			t.Errorf("no metric %s", name)
		}
	}
	for _, name := range []string{"engram_background_busy_seconds_total", "engram_background_paused_seconds_total"} {
		var works []string
		if f := fams[name]; f != nil {
			for _, m := range f.GetMetric() {
				works = append(works, m.GetLabel()[0].GetValue())
			}
		}
		if fmt.Sprint(works) != "[extract snapshot sweep writeback]" {
			t.Errorf("%s has works %v, want extract, snapshot, sweep and writeback", name, works)
		}
	}
	if u := fams["engram_store_updates_total"]; u != nil && u.GetMetric()[0].GetCounter().GetValue() < 2 {
		t.Errorf("store updates = %v, want at least the two appends", u.GetMetric()[0].GetCounter().GetValue())
	}
	// The recall used alice's partition: loaded once (a miss), then
	// found loaded (hits), all within a budget that is reported.
	cache := map[string]float64{}
	for _, name := range []string{"engram_partition_cache_hits_total", "engram_partition_cache_misses_total",
		"engram_partition_cache_evictions_total", "engram_partition_cache_bytes",
		"engram_partition_cache_budget_bytes", "engram_partition_cache_partitions"} {
		f := fams[name]
		if f == nil {
			t.Errorf("no metric %s", name)
			continue
		}
		m := f.GetMetric()[0]
		cache[name] = m.GetCounter().GetValue() + m.GetGauge().GetValue()
	}
	if cache["engram_partition_cache_misses_total"] < 1 || cache["engram_partition_cache_partitions"] < 1 ||
		cache["engram_partition_cache_bytes"] <= 0 || cache["engram_partition_cache_budget_bytes"] < cache["engram_partition_cache_bytes"] {
		t.Errorf("partition cache metrics %v: want a miss, a loaded partition, and its bytes within the budget", cache)
	}
	// The scrape does not count itself in flight.
	if f := fams["engram_http_requests_in_flight"]; f != nil && f.GetMetric()[0].GetGauge().GetValue() != 0 {
		t.Errorf("in flight = %v during a scrape", f.GetMetric()[0].GetGauge().GetValue())
	}
	// No tenant, user or id reaches a label.
	body := string(s.must(200, "GET", "/metrics", "", nil).body)
	for _, leak := range []string{"acme", "alice", "01JNOSUCH", "nowhere"} {
		if strings.Contains(body, leak) {
			t.Errorf("/metrics shows %q", leak)
		}
	}
}

// TestAccessLog: one record per request with the route pattern, status,
// size, duration, tenant and client name, and never the token or the ids in
// the path.
func TestAccessLog(t *testing.T) {
	s := newTestServer(t, nil, nil)
	s.must(201, "POST", "/v1/users/alice/sessions/s/messages", tokenAcme, `{"messages":[{"role":"user","content":"hello"}]}`)
	s.must(401, "GET", "/v1/users/alice/sessions", "wrong-token-0123456789", nil)

	var recs []map[string]any
	for line := range strings.SplitSeq(strings.TrimSpace(s.log.String()), "\n") {
		var rec map[string]any
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatalf("log line %q: %v", line, err)
		}
		recs = append(recs, rec)
	}
	if len(recs) != 2 {
		t.Fatalf("%d log records:\n%s", len(recs), s.log.String())
	}
	ok, denied := recs[0], recs[1]
	for k, want := range map[string]any{
		"msg": "http request", "method": "POST", "route": "/v1/users/{user}/sessions/{session}/messages",
		"status": float64(201), "tenant": "acme", "client": "ci",
	} {
		if ok[k] != want {
			t.Errorf("log %s = %v, want %v", k, ok[k], want)
		}
	}
	if ok["bytes"].(float64) <= 0 || ok["duration"].(float64) <= 0 || ok["remote"] == "" {
		t.Errorf("log record = %v", ok)
	}
	if denied["status"] != float64(401) || denied["tenant"] != nil {
		t.Errorf("denied record = %v", denied)
	}
	for _, secret := range []string{tokenAcme, "wrong-token", "alice"} {
		if strings.Contains(s.log.String(), secret) {
			t.Errorf("the access log shows %q", secret)
		}
	}
}
