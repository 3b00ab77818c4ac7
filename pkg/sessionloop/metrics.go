package sessionloop

import (
	"fmt"
	"io"
	"net/http"
	"slices"
	"strings"
	"sync"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/govkit/govkit/pkg/analytics"
)

// counter is one metric the reducer may emit.
type counter struct {
	name, help string
	labels     []string
}

// counters are the only metric effects gate session serves: the reducer
// names them (seed 000 §9 Metrics, P-56; seed 002's rejection buckets;
// seed 004's reason codes) and an effect with another name or other labels
// is a reducer bug, refused rather than served.
var counters = []counter{
	{"govkit_session_fsm_tool_block_total", "Tool calls blocked by the workflow state machine (seed 000 Gate 1).", []string{"state", "tool", "kind"}},
	{"govkit_session_fsm_final_block_total", "Final answers blocked until verification (seed 000 Gate 2).", []string{"state"}},
	{"govkit_session_strict_resolution_block_total", "Writes blocked on a resource not resolved first (seed 000 §4).", []string{"tool", "action"}},
	{"govkit_session_phantom_detected_total", "Final answers that claimed work no tool did (seed 000 phantom detection).", []string{"provider", "model"}},
	{"govkit_session_auto_recovery_attempt_total", "Blocks that tracked a pending auto-recovery (seed 000 §8).", []string{"error_code", "tool"}},
	{"govkit_session_auto_recovery_success_total", "Pending recoveries that a later success on their tool settled.", []string{"error_code", "tool"}},
	{"govkit_session_agentic_iterations_total", "Tool calls the agent made, per provider and model.", []string{"provider", "model"}},
	{"govkit_session_routing_mismatch_block_total", "Calls blocked for targeting a host whose child was meant (seed 000 Invariant 7).", []string{"tool", "target_kind", "child_kind"}},
	{"govkit_session_rejections_total", "Model outputs rejected by seed 002's envelope and evidence checks, by bucket.", []string{"bucket", "agent"}},
	{"govkit_session_stabilization_reason_total", "Seed 004 stabilization reason codes given.", []string{"code"}},
}

// MaxLabelSets bounds the distinct label sets of one counter. The reducer
// sanitizes labels (P-58), but tool names and models come from the
// runtime: past the bound, new label sets are counted under "other".
const MaxLabelSets = 1000

// Metrics is gate session's Prometheus registry: the counters above, fed
// by metric effects, and the analytics queue's gauges. It is its own
// registry, never the process-global one.
type Metrics struct {
	reg *prometheus.Registry
	log io.Writer

	mu      sync.Mutex
	vecs    map[string]*counterVec
	refused map[string]bool
}

type counterVec struct {
	vec    *prometheus.CounterVec
	labels []string
	sets   map[string]struct{}
	other  []string
}

// NewMetrics returns the registry, logging refused effects to log once per
// name.
func NewMetrics(log io.Writer) *Metrics {
	if log == nil {
		log = io.Discard
	}
	m := &Metrics{reg: prometheus.NewRegistry(), log: log, vecs: map[string]*counterVec{}, refused: map[string]bool{}}
	for _, c := range counters {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Name: c.name, Help: c.help}, c.labels)
		m.reg.MustRegister(v)
		other := make([]string, len(c.labels))
		for i := range other {
			other[i] = "other"
		}
		m.vecs[c.name] = &counterVec{vec: v, labels: c.labels, sets: map[string]struct{}{}, other: other}
	}
	return m
}

// Observe counts one metric effect and reports whether it was one of the
// table's, with exactly its labels.
func (m *Metrics) Observe(name string, labels map[string]string) bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	cv, ok := m.vecs[name]
	if !ok {
		m.refuse(name, "no such counter")
		return false
	}
	values := make([]string, len(cv.labels))
	for i, l := range cv.labels {
		v, ok := labels[l]
		if !ok {
			m.refuse(name, fmt.Sprintf("labels %s, want %s", labelNames(labels), strings.Join(cv.labels, ",")))
			return false
		}
		if !utf8.ValidString(v) {
			v = strings.ToValidUTF8(v, "_") // Prometheus panics on invalid UTF-8
		}
		values[i] = v
	}
	if len(labels) != len(cv.labels) {
		m.refuse(name, fmt.Sprintf("labels %s, want %s", labelNames(labels), strings.Join(cv.labels, ",")))
		return false
	}
	key := strings.Join(values, "\xff")
	if _, seen := cv.sets[key]; !seen {
		if len(cv.sets) >= MaxLabelSets {
			values = cv.other
		} else {
			cv.sets[key] = struct{}{}
		}
	}
	cv.vec.WithLabelValues(values...).Inc()
	return true
}

func (m *Metrics) refuse(name, why string) {
	if m.refused[name] {
		return
	}
	m.refused[name] = true
	fmt.Fprintf(m.log, "gate: warning: metric effect %.100q dropped: %s (pkg/sessionloop's counters table)\n", name, why)
}

func labelNames(labels map[string]string) string {
	names := make([]string, 0, len(labels))
	for k := range labels {
		names = append(names, fmt.Sprintf("%.40q", k))
	}
	slices.Sort(names)
	return "{" + strings.Join(names, ",") + "}"
}

// Registry is the registry, for a caller that adds its own collectors.
func (m *Metrics) Registry() *prometheus.Registry { return m.reg }

// Handler serves the registry in Prometheus's text format.
func (m *Metrics) Handler() http.Handler {
	return promhttp.HandlerFor(m.reg, promhttp.HandlerOpts{})
}

// WatchQueue exports q's length and drop counts (seed 004 "Analytics
// Queue Policy": drop_count_by_type, drop_count_by_reason).
func (m *Metrics) WatchQueue(q *analytics.Queue) {
	m.reg.MustRegister(&queueCollector{
		q:        q,
		length:   prometheus.NewDesc("govkit_session_analytics_queue_length", "Analytics events waiting for the batch writer.", nil, nil),
		capacity: prometheus.NewDesc("govkit_session_analytics_queue_capacity", "The analytics queue's bound.", nil, nil),
		byType:   prometheus.NewDesc("govkit_session_analytics_dropped_total", "Analytics events dropped on a full queue, by event type (drop_count_by_type).", []string{"type"}, nil),
		byReason: prometheus.NewDesc("govkit_session_analytics_dropped_by_reason_total", "Analytics events dropped on a full queue, by reason code (drop_count_by_reason).", []string{"reason"}, nil),
	})
}

type queueCollector struct {
	q                                  *analytics.Queue
	length, capacity, byType, byReason *prometheus.Desc
}

func (c *queueCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- c.length
	ch <- c.capacity
	ch <- c.byType
	ch <- c.byReason
}

func (c *queueCollector) Collect(ch chan<- prometheus.Metric) {
	ch <- prometheus.MustNewConstMetric(c.length, prometheus.GaugeValue, float64(c.q.Len()))
	ch <- prometheus.MustNewConstMetric(c.capacity, prometheus.GaugeValue, float64(c.q.Cap()))
	d := c.q.Drops()
	for t, n := range d.ByType {
		ch <- prometheus.MustNewConstMetric(c.byType, prometheus.CounterValue, float64(n), t)
	}
	for r, n := range d.ByReason {
		ch <- prometheus.MustNewConstMetric(c.byReason, prometheus.CounterValue, float64(n), r)
	}
}
