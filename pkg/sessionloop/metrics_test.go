package sessionloop

import (
	"bytes"
	"fmt"
	"io"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/analytics"
)

// counterValue is a counter's value for one label set (0 when absent).
func counterValue(t *testing.T, m *Metrics, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := m.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metric:
		for _, mt := range mf.GetMetric() {
			if len(mt.GetLabel()) != len(labels) {
				continue
			}
			for _, lp := range mt.GetLabel() {
				if labels[lp.GetName()] != lp.GetValue() {
					continue metric
				}
			}
			return mt.GetCounter().GetValue()
		}
	}
	return 0
}

// TestObserve: every counter of the table takes its own labels (P-56);
// other names and labels are refused, and said so once.
func TestObserve(t *testing.T) {
	var log bytes.Buffer
	m := NewMetrics(&log)
	for _, c := range counters {
		labels := map[string]string{}
		for _, l := range c.labels {
			labels[l] = "v_" + l
		}
		if !m.Observe(c.name, labels) || !m.Observe(c.name, labels) {
			t.Fatalf("%s refused %v", c.name, labels)
		}
		if v := counterValue(t, m, c.name, labels); v != 2 {
			t.Errorf("%s = %v, want 2", c.name, v)
		}
	}
	refused := []struct {
		name   string
		labels map[string]string
	}{
		{"govkit_session_made_up_total", nil},
		{"govkit_session_made_up_total", map[string]string{"a": "b"}},
		{"govkit_session_fsm_final_block_total", nil},
		{"govkit_session_fsm_final_block_total", map[string]string{"state": "READING", "tool": "x"}},
		{"govkit_session_fsm_final_block_total", map[string]string{"tool": "x"}},
	}
	for _, r := range refused {
		if m.Observe(r.name, r.labels) {
			t.Errorf("Observe(%s, %v) accepted", r.name, r.labels)
		}
	}
	if n := strings.Count(log.String(), "\n"); n != 2 {
		t.Errorf("%d warnings, want one per name:\n%s", n, log.String())
	}
	if !strings.Contains(log.String(), `gate: warning: metric effect "govkit_session_made_up_total" dropped: no such counter`) {
		t.Errorf("warning %q", log.String())
	}
	if !m.Observe("govkit_session_stabilization_reason_total", map[string]string{"code": "bad\xffutf8"}) {
		t.Error("invalid UTF-8 label refused")
	}
}

// TestLabelCardinality: past MaxLabelSets distinct label sets, new ones
// are counted under "other"; known ones keep their own series.
func TestLabelCardinality(t *testing.T) {
	m := NewMetrics(nil)
	const name = "govkit_session_stabilization_reason_total"
	for i := range MaxLabelSets + 5 {
		m.Observe(name, map[string]string{"code": fmt.Sprint("C", i)})
	}
	m.Observe(name, map[string]string{"code": "C0"})
	if v := counterValue(t, m, name, map[string]string{"code": "other"}); v != 5 {
		t.Errorf("other = %v, want 5", v)
	}
	if v := counterValue(t, m, name, map[string]string{"code": "C0"}); v != 2 {
		t.Errorf("C0 = %v, want 2", v)
	}
}

// TestMetricsEndpoint: the handler serves the counters and the analytics
// queue's length and drops by type and reason (S-08).
func TestMetricsEndpoint(t *testing.T) {
	m := NewMetrics(nil)
	q := analytics.NewQueue(1)
	m.WatchQueue(q)
	q.Offer(analytics.Event{Type: "metric"})
	q.Offer(analytics.Event{Type: "stabilization", Reasons: []string{"BUDGET_HARD_LIMIT"}})
	m.Observe("govkit_session_fsm_final_block_total", map[string]string{"state": "VERIFYING"})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	resp, err := srv.Client().Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		`govkit_session_fsm_final_block_total{state="VERIFYING"} 1`,
		`govkit_session_analytics_queue_length 1`,
		`govkit_session_analytics_queue_capacity 1`,
		`govkit_session_analytics_dropped_total{type="stabilization"} 1`,
		`govkit_session_analytics_dropped_by_reason_total{reason="BUDGET_HARD_LIMIT"} 1`,
	} {
		if !strings.Contains(string(body), want+"\n") {
			t.Errorf("/metrics lacks %q:\n%s", want, body)
		}
	}
}
