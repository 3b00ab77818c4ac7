package auditd

import (
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"

	"github.com/govkit/govkit/pkg/stream"
)

// metrics are auditd's Prometheus metrics (GET /metrics), on a registry of
// their own so that two servers in one process (tests) do not collide.
type metrics struct {
	reg           *prometheus.Registry
	appended      prometheus.Counter
	duplicates    prometheus.Counter
	rejected      *prometheus.CounterVec
	commitErrors  prometheus.Counter
	batchSize     prometheus.Histogram
	commitSeconds prometheus.Histogram
	verifications *prometheus.CounterVec
	brokenLinks   prometheus.Gauge
	approvals     *prometheus.CounterVec
	notifications *prometheus.CounterVec
	decisions     *prometheus.CounterVec
	incidents     *prometheus.CounterVec
	policyReloads *prometheus.CounterVec
	degraded      prometheus.Gauge
	redactions    *prometheus.CounterVec
	waiters       prometheus.Gauge
}

func newMetrics(hub *stream.Hub, head *headState) *metrics {
	const ns = "govkit_auditd"
	m := &metrics{
		reg: prometheus.NewRegistry(),
		appended: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "events_appended_total",
			Help: "Events committed to the audit log.",
		}),
		duplicates: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "events_duplicate_total",
			Help: "Appends answered with an already stored event (a retried event_id).",
		}),
		rejected: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "requests_rejected_total",
			Help: "API requests refused, by HTTP status code.",
		}, []string{"code"}),
		commitErrors: prometheus.NewCounter(prometheus.CounterOpts{
			Namespace: ns, Name: "commit_errors_total",
			Help: "Batches the store failed to commit.",
		}),
		batchSize: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "batch_size_events",
			Help:    "Events per group commit (including retries answered from the batch).",
			Buckets: prometheus.ExponentialBuckets(1, 2, 9), // 1 … 256
		}),
		commitSeconds: prometheus.NewHistogram(prometheus.HistogramOpts{
			Namespace: ns, Name: "commit_duration_seconds",
			Help:    "Time to store one batch durably.",
			Buckets: prometheus.ExponentialBuckets(0.0001, 2, 15), // 0.1ms … 1.6s
		}),
		verifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "verifications_total",
			Help: "Chain verifications, by result: verified, broken or error.",
		}, []string{"result"}),
		brokenLinks: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "chain_broken_links",
			Help: "Broken links found by the last chain verification.",
		}),
		approvals: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "approval_changes_total",
			Help: "Approval request changes recorded, by the status after the change.",
		}, []string{"status"}),
		notifications: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "approval_notifications_total",
			Help: "Approval notification attempts, by notifier and result: sent, retry, failed or dropped.",
		}, []string{"notifier", "result"}),
		decisions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "policy_decisions_total",
			Help: "Decisions recorded by POST /api/v1/decisions, by enforced effect: allow, deny or require_approval.",
		}, []string{"enforced_effect"}),
		incidents: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "incidents_total",
			Help: "Incidents recorded by POST /api/v1/incidents, by severity: info, warning or critical.",
		}, []string{"severity"}),
		policyReloads: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "policy_reloads_total",
			Help: "Policy reloads (SIGHUP), by result: success, or failure (the old policy stays in force).",
		}, []string{"result"}),
		degraded: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "degraded",
			Help: "1 while GET /health answers 503 degraded (read-only, database file replaced, last commit failed), else 0.",
		}),
		redactions: prometheus.NewCounterVec(prometheus.CounterOpts{
			Namespace: ns, Name: "redactions_total",
			Help: "Secrets removed from events before sealing, by kind (one per field and kind of an event).",
		}, []string{"kind"}),
		waiters: prometheus.NewGauge(prometheus.GaugeOpts{
			Namespace: ns, Name: "approval_waiters",
			Help: "Approval long-polls in progress (GET /v1/approvals/{id}?wait=, GET /v1/approvals?wait=).",
		}),
	}
	m.reg.MustRegister(m.degraded, m.appended, m.duplicates, m.rejected, m.commitErrors, m.batchSize,
		m.commitSeconds, m.verifications, m.brokenLinks, m.approvals, m.notifications,
		m.decisions, m.incidents, m.policyReloads, m.redactions, m.waiters,
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "chain_head_seq",
			Help: "Seq of the last committed event.",
		}, func() float64 { seq, _ := head.get(); return float64(seq) }),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "stream_subscribers",
			Help: "Live subscribers of the event stream.",
		}, func() float64 { return float64(hub.Subscribers()) }),
		prometheus.NewCounterFunc(prometheus.CounterOpts{
			Namespace: ns, Name: "stream_subscribers_dropped_total",
			Help: "Stream subscribers dropped for falling too far behind.",
		}, func() float64 { return float64(hub.Dropped()) }),
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	for _, r := range []string{"verified", "broken", "error"} {
		m.verifications.WithLabelValues(r)
	}
	// Present at zero, so that alerts on increase() see the first one.
	for _, e := range []string{"allow", "deny", "require_approval"} {
		m.decisions.WithLabelValues(e)
	}
	for _, sev := range []string{"info", "warning", "critical"} {
		m.incidents.WithLabelValues(sev)
	}
	for _, r := range []string{"success", "failure"} {
		m.policyReloads.WithLabelValues(r)
	}
	return m
}
