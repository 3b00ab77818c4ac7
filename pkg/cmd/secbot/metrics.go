package secbot

import (
	"github.com/prometheus/client_golang/prometheus"

	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/respond"
)

// patterns are secbot's pattern names, the values of the pattern label.
var patterns = []string{detect.HashMismatch, detect.UnauthorizedDestructive, detect.PotentialSQLInjection, detect.PotentialCommandInjection}

// metrics are secbot's Prometheus metrics (GET /metrics), on a registry of
// their own so that two secbots in one process (tests) do not collide.
type metrics struct {
	reg        *prometheus.Registry
	events     prometheus.Counter
	lastSeq    prometheus.Gauge
	reconnects prometheus.Counter
	matches    *prometheus.CounterVec
	created    *prometheus.CounterVec
	failed     *prometheus.CounterVec
	suppressed *prometheus.CounterVec
	dryRun     *prometheus.CounterVec
	callbacks  *prometheus.CounterVec
}

func newMetrics() *metrics {
	const ns = "govkit_secbot"
	byPattern := func(name, help string) *prometheus.CounterVec {
		v := prometheus.NewCounterVec(prometheus.CounterOpts{Namespace: ns, Name: name, Help: help}, []string{"pattern"})
		for _, p := range patterns {
			v.WithLabelValues(p) // present from the start, at 0
		}
		return v
	}
	m := &metrics{
		reg: prometheus.NewRegistry(),
		events: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "events_seen_total",
			Help: "Audit events read from the stream.",
		}),
		lastSeq: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "last_seq",
			Help: "Seq of the last audit event read from the stream.",
		}),
		reconnects: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "stream_reconnects_total",
			Help: "Times the stream ended or could not be reached and secbot connected again.",
		}),
		matches:    byPattern("matches_total", "Events that matched a pattern, before the cooldown."),
		created:    byPattern("incidents_created_total", "Incidents created through POST /api/v1/incidents."),
		failed:     byPattern("incidents_failed_total", "Incidents that could not be created, after retries."),
		suppressed: byPattern("incidents_suppressed_total", "Matches held back by the cooldown (one incident per pattern and agent per --cooldown)."),
		dryRun:     byPattern("incidents_dry_run_total", "Incidents printed and not created (--dry-run)."),
		callbacks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "callbacks_total",
			Help: "POST /callback requests, by result: accepted, bad_request, too_large.",
		}, []string{"result"}),
	}
	m.reg.MustRegister(m.events, m.lastSeq, m.reconnects, m.matches, m.created, m.failed, m.suppressed, m.dryRun, m.callbacks)
	return m
}

var _ respond.Counters = (*metrics)(nil)

func (m *metrics) Event(seq int64) {
	m.events.Inc()
	m.lastSeq.Set(float64(seq))
}
func (m *metrics) Reconnect()                { m.reconnects.Inc() }
func (m *metrics) Match(pattern string)      { m.matches.WithLabelValues(pattern).Inc() }
func (m *metrics) Suppressed(pattern string) { m.suppressed.WithLabelValues(pattern).Inc() }
func (m *metrics) DryRun(pattern string)     { m.dryRun.WithLabelValues(pattern).Inc() }
func (m *metrics) Created(pattern string)    { m.created.WithLabelValues(pattern).Inc() }
func (m *metrics) Failed(pattern string)     { m.failed.WithLabelValues(pattern).Inc() }
