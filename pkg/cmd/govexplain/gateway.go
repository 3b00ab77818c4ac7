package govexplain

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os/signal"
	"syscall"
	"time"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
)

// localOnly are the flags that describe a local evaluation: with --url
// auditd's own files and clock decide, so giving one is a mistake to
// point out rather than ignore.
var localOnly = []string{"policy", "infra", "dry-run", "default-effect", "at"}

// question are the flags of a hypothetical request, which --event replaces.
var question = []string{"resource", "action", "tags", "user", "role", "service", "rows", "pods", "session"}

func (o *ExplainOptions) validateGateway() error {
	for _, name := range localOnly {
		if o.given != nil && o.given(name) {
			return cli.Failf("--%s does not apply with --url: auditd evaluates with the policy, infra file and clock it has loaded", name).
				WithHint("drop --" + name + ", or drop --url to evaluate locally")
		}
	}
	roots, err := client.LoadCACert(o.CACert) // nil without --ca-cert: the system's
	if err != nil {
		return cli.CACertFailure(o.flags, err)
	}
	o.roots = roots
	if o.Event != "" {
		for _, name := range question {
			if o.given != nil && o.given(name) {
				return cli.Failf("--%s does not apply with --event: the recorded decision already names its request", name).
					WithHint("drop --" + name + ", or drop --event to ask a hypothetical question")
			}
		}
		return nil
	}
	return o.validateQuestion()
}

// gatewayRun asks auditd: a hypothetical evaluation (GET
// /api/v1/governance/explain, nothing recorded) or, with --event, the trace
// recorded with a decision (seed 003 "Surfacing the Explanation", 2 and 3).
// Output and exit codes are those of a local evaluation.
func gatewayRun(o *ExplainOptions) error {
	opts := []client.Option{client.WithUserAgent("govexplain/" + build.String())}
	if o.Token != "" {
		opts = append(opts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		opts = append(opts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.Gateway, opts...)
	if err != nil {
		return cli.Fail(err, "pass --url http://HOST:PORT (auditd's address)")
	}
	if c.SendsTokenInClear() {
		fmt.Fprintf(o.IO.ErrOut, "govexplain: warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)\n", o.Gateway)
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	var ex govapi.Explanation
	if o.Event != "" {
		ex, err = c.ExplainEvent(ctx, o.Event)
	} else {
		typ, name, _ := o.resource()
		q := govapi.ExplainQuery{
			ResourceType: typ, ResourceName: name, Action: o.Action,
			UserID: o.User, Roles: o.Roles, Service: o.Service,
			RowsAffected: o.Rows, PodsAffected: o.Pods, SessionID: o.Session,
		}
		if o.tagsSet {
			q.Tags = append([]string{}, o.Tags...) // given, even if empty: no infra lookup
		}
		ex, err = c.Explain(ctx, q)
	}
	if err != nil {
		return o.gatewayError(err)
	}
	note := ex.Note
	if ex.Event != nil && o.Event != "" {
		recorded := fmt.Sprintf("recorded with event %s (seq %d) at %s; this is the trace stored then, not a re-evaluation.",
			ex.Event.EventID, ex.Event.Seq, ex.Event.Timestamp.UTC().Format(time.RFC3339))
		if note != "" {
			note += "\nNote: " + recorded
		} else {
			note = recorded
		}
	}
	if err := printTrace(o.IO, o.Output.Resolve(o.IO), ex, ex.Explanation, note); err != nil {
		return err
	}
	return exitFor(ex.Decision.EnforcedEffect)
}

// gatewayError says what went wrong with auditd and what to do about it.
func (o *ExplainOptions) gatewayError(err error) error {
	var ae *client.Error
	if !errors.As(err, &ae) {
		if errors.Is(err, context.Canceled) {
			return cli.Failf("interrupted")
		}
		if client.IsCertificateError(err) {
			return cli.Failf("auditd at %s: %s", o.Gateway, client.NetReason(err)).WithHint(cli.CACertHint)
		}
		return cli.Failf("cannot reach auditd at %s: %s", o.Gateway, client.NetReason(err)).
			WithHint("start auditd, or pass --url naming a running one")
	}
	switch ae.StatusCode {
	case http.StatusUnauthorized:
		return cli.Failf("auditd refused the request: %s", ae.Message).WithHint("pass --token TOKEN (or set GOVKIT_TOKEN)")
	case http.StatusForbidden:
		return cli.Failf("auditd refused the request: %s", ae.Message).WithHint("use a token with the auditor role")
	case http.StatusServiceUnavailable:
		return cli.Failf("%s", ae.Message).WithHint("start auditd with --policy FILE, or evaluate locally with govexplain --policy FILE")
	case http.StatusNotFound:
		if o.Event != "" {
			return cli.Failf("%s", ae.Message).WithHint("check the event ID: auditd's GET /api/events?event_type=policy_decision lists recorded decisions")
		}
		return cli.Failf("auditd at %s has no governance API: %s", o.Gateway, ae.Message).WithHint("upgrade auditd")
	case http.StatusUnprocessableEntity:
		return cli.Failf("%s", ae.Message).WithHint("--event takes the ID of a policy_decision event")
	}
	return cli.Failf("auditd answered %d: %s", ae.StatusCode, ae.Message)
}
