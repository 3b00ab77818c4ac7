package govbot

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/govreport"
	"github.com/govkit/govkit/pkg/govreport/history"
	"github.com/govkit/govkit/pkg/notify"
	"github.com/govkit/govkit/pkg/termtext"
)

// run makes the report, adds its trend from --history, prints it, posts
// it to --webhook, and exits by its summary.
func run(o *Options) error {
	c, err := o.client()
	if err != nil {
		return err
	}
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	now := o.now().UTC()

	// The history opens first: an unusable file is a usage error found
	// before auditd is asked anything.
	var hist *history.Store
	if o.History != "" {
		if hist, err = history.Open(ctx, o.History, now); err != nil {
			return o.historyError("cannot open", err)
		}
		defer hist.Close()
	}

	r, err := collect(ctx, c, o, now)
	if err != nil {
		ee := o.gatewayError(err)
		if ee.Code == exitUnreachable && hist != nil {
			// A run that found no auditd is part of the trend too.
			cutoff := now.Add(-time.Duration(o.HistoryRetention))
			if _, err := hist.Record(ctx, govreport.UnreachableRun(o.Gateway, time.Duration(o.Since), now), cutoff); err != nil {
				fmt.Fprintf(o.IO.ErrOut, "govbot: error: cannot record this run in the history file %s: %s\n", o.History, termtext.OneLine(err.Error()))
			}
		}
		if ee.Code == exitUnreachable && o.Webhook != "" {
			o.post(govreport.UnreachableNotice(ee.Err.Error(), now))
		}
		return ee
	}

	var histErr error
	if hist != nil {
		histErr = o.keep(ctx, hist, r, now)
	}
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		if err := cli.WriteJSON(o.IO.Out, r); err != nil {
			return err
		}
	} else if err := govreport.WriteText(o.IO.Out, r); err != nil {
		return cli.Failf("writing the report: %v", err)
	}
	if o.Webhook != "" {
		o.post(r.Notice())
	}
	if histErr != nil {
		return histErr
	}
	if r.Summary.ExitCode != 0 {
		return cli.Silent(r.Summary.ExitCode)
	}
	return nil
}

// keep adds r's trend over the runs --history keeps, and records r,
// deleting the runs older than --history-retention.
func (o *Options) keep(ctx context.Context, hist *history.Store, r *govreport.Report, now time.Time) error {
	retention := time.Duration(o.HistoryRetention)
	cutoff := now.Add(-retention)
	earlier, err := hist.Runs(ctx, r.Gateway, cutoff)
	if err != nil {
		return o.historyError("cannot read", err)
	}
	run := govreport.RunOf(r)
	r.Trend = govreport.NewTrend(earlier, run, o.HistoryRetention.String())
	if _, err := hist.Record(ctx, run, cutoff); err != nil {
		return o.historyError("cannot record this run in", err)
	}
	return nil
}

// historyError is a failure of --history: exit 3, naming the file (a
// path the operator chose, not a secret).
func (o *Options) historyError(what string, err error) error {
	return cli.Failf("%s the history file %s: %s", what, o.History, termtext.OneLine(err.Error())).
		WithHint("pass --history with a writable path for a SQLite file govbot owns (or leave it out)")
}

// post delivers n to --webhook through pkg/notify's Dispatcher (issue 20:
// one delivery path), and waits for it: govbot is one-shot. A failure is
// said on stderr and changes nothing else (it is not a compliance
// finding).
func (o *Options) post(n *notify.Notice) {
	hook, err := notify.NewWebhook(notify.WebhookConfig{Name: "webhook", URL: o.Webhook, Slack: true, HTTPClient: o.HTTPClient})
	if err != nil { // validate checked it
		fmt.Fprintf(o.IO.ErrOut, "govbot: error: --%v\n", err)
		return
	}
	// failure is set by the dispatcher's goroutine, which may outlive a
	// Close that timed out.
	var mu sync.Mutex
	var failure error
	d := notify.NewDispatcher([]notify.Notifier{hook}, notify.Options{
		Now:            o.now,
		Attempts:       webhookAttempts,
		Backoff:        o.WebhookBackoff,
		AttemptTimeout: webhookTimeout,
		Logf: func(format string, args ...any) {
			// Retries, in govbot's voice; the final failure is said below.
			if msg := fmt.Sprintf(format, args...); strings.Contains(msg, "retrying in") {
				fmt.Fprintf(o.IO.ErrOut, "govbot: warning: %s\n", strings.TrimPrefix(msg, "notify: webhook: "))
			}
		},
		Failed: func(_ string, _ notify.Message, err error) {
			mu.Lock()
			defer mu.Unlock()
			failure = err
		},
	})
	d.Send(notify.Message{Kind: notify.KindNotice, Notice: n})
	// Not the run's context: an interrupted report still says so.
	ctx, cancel := context.WithTimeout(context.Background(), webhookDeadline)
	defer cancel()
	closeErr := d.Close(ctx)
	mu.Lock()
	defer mu.Unlock()
	if failure == nil {
		failure = closeErr
	}
	if failure != nil {
		fmt.Fprintf(o.IO.ErrOut, "govbot: error: posting the summary to --webhook (%s): %s\n", notify.RedactURL(o.Webhook), termtext.OneLine(failure.Error()))
		fmt.Fprintf(o.IO.ErrOut, "govbot: hint: the report is complete and the exit status is unchanged; check the webhook URL (--webhook or GOVKIT_GOVBOT_WEBHOOK)\n")
	}
}

// Delivery of --webhook: a few attempts, each bounded, all within
// webhookDeadline, so a dead Slack cannot hold a cron job.
const (
	webhookAttempts = 3
	webhookTimeout  = 30 * time.Second
	webhookDeadline = 2 * time.Minute
)

// client returns the client for --gateway.
func (o *Options) client() (*client.Client, error) {
	opts := []client.Option{
		client.WithUserAgent("govbot/" + build.String()),
		client.WithHTTPClient(&http.Client{Timeout: requestTimeout}),
	}
	if o.Token != "" {
		opts = append(opts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		opts = append(opts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.Gateway, opts...)
	if err != nil {
		return nil, cli.Fail(err, "pass --url http://HOST:PORT (or set GOVKIT_URL)")
	}
	if c.SendsTokenInClear() {
		fmt.Fprintf(o.IO.ErrOut, "govbot: warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)\n", o.Gateway)
	}
	return c, nil
}

// phaseError is a failed request of one phase.
type phaseError struct {
	phase int
	what  string // "GET /api/v1/governance"
	err   error
}

func (e *phaseError) Error() string { return e.what + ": " + e.err.Error() }
func (e *phaseError) Unwrap() error { return e.err }

// errNotAuditd is an answer that decodes but is not auditd's.
var errNotAuditd = errors.New("the answer is not auditd's governance status (no schema_version)")

// collect asks auditd for phases 1, 3, 5 and 6 and analyses them. Every
// request is a GET: govbot is read-only (seed 003: "stateless and
// read-only"; --history, its one state, is its own file, not auditd's).
func collect(ctx context.Context, c *client.Client, o *Options, now time.Time) (*govreport.Report, error) {
	st, err := c.Governance(ctx)
	if err != nil {
		return nil, &phaseError{1, "GET " + govapi.PathGovernance, err}
	}
	if st.SchemaVersion == 0 {
		return nil, &phaseError{1, "GET " + govapi.PathGovernance, errNotAuditd}
	}

	since := time.Duration(o.Since)
	from := now.Add(-since)
	an := govreport.NewAnalyzer(now, o.MaxEvents)
	if err := scanEvents(ctx, c, an, from, st.Chain.HeadSeq); err != nil {
		return nil, &phaseError{3, "GET " + govapi.PathGovernanceEvents, err}
	}
	looked, cited := map[string]approval.Request{}, map[string][]audit.Event{}
	for _, id := range an.DeferredIDs() {
		req, err := c.Approval(ctx, id)
		switch {
		case client.IsNotFound(err):
			continue // unknown: judged as such
		case err != nil:
			return nil, &phaseError{3, "GET /v1/approvals/" + id, err}
		}
		looked[id] = req
		// The events before the window that cited it: the first may have
		// used its consumption (DESIGN §11 "one use per approval").
		if cited[id], err = c.GovernanceCitations(ctx, id, an.FirstDeferred(id)); err != nil {
			return nil, &phaseError{3, "GET " + govapi.PathGovernanceEvents + "?approval_id=" + id, err}
		}
	}
	decided, err := coverageAnswers(ctx, c, an.CoverageQuestions(), looked)
	if err != nil {
		return nil, &phaseError{4, "GET " + govapi.PathGovernanceEvents, err}
	}
	pending, err := c.GovernancePending(ctx)
	if err != nil {
		return nil, &phaseError{5, "GET " + govapi.PathGovernancePending, err}
	}
	verify, err := c.GovernanceVerify(ctx)
	if err != nil {
		return nil, &phaseError{6, "GET " + govapi.PathGovernanceVerify, err}
	}

	in := govreport.Input{
		Now: now, Gateway: o.Gateway, Since: since, StaleAfter: time.Duration(o.StaleAfter),
		Status: st, Analyzer: an, Lookups: govreport.Lookups{Approvals: looked, Cited: cited, Decided: decided},
		Pending: pending, Verify: verify,
	}
	if o.Policy != "" {
		// A rule index means nothing in another version of the file.
		if st.Policy.SHA256 == o.policySHA256 {
			in.Rules = o.rules
		} else {
			fmt.Fprintf(o.IO.ErrOut, "govbot: warning: --policy %s (sha256 %s) is not the policy auditd has in force (sha256 %s); dead rules are named by index only\n",
				o.Policy, shortHash(o.policySHA256), shortHash(st.Policy.SHA256))
		}
	}
	return govreport.New(in), nil
}

// shortHash is the first 12 hex digits of a sha256, or "none".
func shortHash(h string) string {
	if h == "" {
		return "none"
	}
	return termtext.Truncate(h, 12)
}

// coverageAnswers asks auditd, for each link of an execution the window
// showed no decision for, whether a policy decision before the window
// stands behind it (issue 20 "policy coverage"): a policy_decision event
// with that id or trace_id, or an approval a decision opened. Approvals
// already looked up are not asked again.
func coverageAnswers(ctx context.Context, c *client.Client, links []govreport.Link, looked map[string]approval.Request) (map[govreport.Link]bool, error) {
	out := map[govreport.Link]bool{}
	for _, l := range links {
		var q govapi.EventQuery
		switch l.Kind {
		case govreport.LinkDecision:
			// The explain route answers for a policy_decision event only:
			// 404 for no event, 422 not_a_decision for another kind.
			_, err := c.ExplainEvent(ctx, l.ID)
			var ae *client.Error
			switch {
			case err == nil:
				out[l] = true
			case client.IsNotFound(err), errors.As(err, &ae) && ae.StatusCode == http.StatusUnprocessableEntity:
				out[l] = false
			default:
				return nil, err
			}
			continue
		case govreport.LinkTrace:
			q = govapi.EventQuery{TraceID: l.ID, EventType: audit.TypePolicyDecision, Cursor: govapi.Cursor{Limit: 1}}
		case govreport.LinkApproval:
			req, ok := looked[l.ID]
			if !ok {
				var err error
				req, err = c.Approval(ctx, l.ID)
				switch {
				case client.IsNotFound(err):
					continue
				case err != nil:
					return nil, err
				}
			}
			out[l] = len(req.PolicyDecision) > 0
			continue
		default:
			continue
		}
		p, err := c.GovernanceEvents(ctx, q)
		if err != nil {
			return nil, err
		}
		out[l] = len(p.Events) > 0
	}
	return out, nil
}

// scanEvents feeds the window's events to an, page by page, up to head
// (the chain head when the report started, so that the snapshot is one
// moment). Seqs are contiguous, so the first event of the window tells
// how many it holds: beyond --max-events only the latest are read, since
// the latest matter most to a daily report.
func scanEvents(ctx context.Context, c *client.Client, an *govreport.Analyzer, from time.Time, head int64) error {
	limit := an.MaxEvents()
	f := govapi.EventQuery{Since: from, Cursor: govapi.Cursor{Limit: govapi.MaxLimit}}
	if head > 0 {
		probe, err := c.GovernanceEvents(ctx, govapi.EventQuery{Since: from, Cursor: govapi.Cursor{Limit: 1}})
		if err != nil {
			return err
		}
		if len(probe.Events) == 0 || probe.Events[0].Seq > head {
			return nil
		}
		first := probe.Events[0].Seq
		f.AfterSeq = first - 1
		if head-first+1 > int64(limit) {
			an.SetCapped()
			f.AfterSeq = head - int64(limit)
		}
	}
	for {
		p, err := c.GovernanceEvents(ctx, f)
		if err != nil {
			return err
		}
		for _, ev := range p.Events {
			if head > 0 && ev.Seq > head {
				return nil
			}
			if an.Full() {
				an.SetCapped()
				return nil
			}
			an.Add(ev)
		}
		if !p.HasMore || p.NextAfterSeq <= f.AfterSeq {
			return nil
		}
		f.AfterSeq = p.NextAfterSeq
	}
}

// gatewayError maps a failed request to the exit status of DESIGN §8: 1
// when the gateway is unreachable or does not answer like auditd, 3 when
// it refuses govbot's credentials (a configuration error to fix) or the
// run was interrupted. The message names the URL, and the hint the flag
// and variable that set it.
func (o *Options) gatewayError(err error) *cli.ExitError {
	what, phase := "", 0
	var pe *phaseError
	if errors.As(err, &pe) {
		what, phase = pe.what, pe.phase
	}
	where := fmt.Sprintf("auditd at %s", o.Gateway)
	fix := "start auditd there, or point govbot at a running one with --url URL or GOVKIT_URL"
	if o.gatewaySource != "" {
		fix += " (the URL came from " + o.gatewaySource + ")"
	}
	unreachable := func(format string, args ...any) *cli.ExitError {
		return &cli.ExitError{Code: exitUnreachable, Err: fmt.Errorf(format, args...), Hint: fix}
	}

	var ae *client.Error
	var syntax *json.SyntaxError
	var typ *json.UnmarshalTypeError
	switch {
	case errors.Is(err, context.Canceled):
		return cli.Failf("interrupted")
	case client.IsCertificateError(err):
		// Like refused credentials: govbot's configuration to fix, not
		// an outage (DESIGN §11 "Transport").
		return cli.Failf("%s (%s): %s", where, what, netReason(err)).WithHint(cli.CACertHint)
	case errors.As(err, &ae) && ae.StatusCode == http.StatusUnauthorized:
		hint := "pass --token TOKEN (or set GOVKIT_TOKEN) with a token that has the auditor role"
		if o.Token != "" {
			hint = "the token was refused: check --token (or GOVKIT_TOKEN); 'auditd token create --roles auditor' makes one"
		}
		return cli.Failf("%s refused govbot's credentials (%s): %s", where, what, termtext.OneLine(ae.Message)).WithHint(hint)
	case errors.As(err, &ae) && ae.StatusCode == http.StatusForbidden:
		return cli.Failf("%s refused %s: %s", where, what, termtext.OneLine(ae.Message)).
			WithHint("use a token with the auditor role ('auditd token create --roles auditor')")
	case errors.As(err, &ae) && ae.StatusCode == http.StatusNotFound && phase == 1:
		return unreachable("%s does not serve auditd's governance API: %s answered 404", where, what)
	case errors.As(err, &ae):
		return unreachable("%s answered %s with %d: %s", where, what, ae.StatusCode, termtext.OneLine(termtext.Truncate(strings.Join(strings.Fields(ae.Message), " "), 200)))
	case errors.Is(err, errNotAuditd), errors.As(err, &syntax), errors.As(err, &typ):
		return unreachable("%s does not answer like auditd: %s did not return auditd's JSON", where, what)
	case client.IsTransient(err):
		// Answers of auditd (*client.Error) and certificates are handled
		// above: what is left is a failure to talk to it at all.
		return unreachable("cannot reach %s: %s", where, netReason(err))
	}
	return unreachable("%s: %s failed: %v", where, what, err)
}

// netReason is client.NetReason of a phase's network error, except that
// a request that ran out of requestTimeout says so.
func netReason(err error) string {
	if pe, ok := err.(*phaseError); ok {
		err = pe.err
	}
	if ue, ok := err.(*url.Error); ok && ue.Timeout() {
		return "no answer within " + requestTimeout.String()
	}
	return client.NetReason(err)
}
