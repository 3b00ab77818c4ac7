package secbot

import (
	"context"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/respond"
)

// exitIncidents is --once's exit status when it created (or, with
// --dry-run, would create) an incident: auditor --once's "alerts raised".
const exitIncidents = 2

// once is --once, secbot from cron (issue 20): one pass of the engine
// (respond.Responder.Once) through the HTTP API. It exits 0 when no new
// incident was created, 2 when one was (with --dry-run: would be), and 3
// when auditd does not answer or refuses, or an incident could not be
// created.
func (s *secbot) once(ctx context.Context) error {
	res, err := s.r.Once(ctx)
	if err != nil {
		if respond.IsUnreachable(err) {
			return cli.Failf("%s", s.r.APIProblem(err)).
				WithHint("start auditd, or pass --url (or set GOVKIT_URL) naming a running one")
		}
		return cli.Failf("%s", s.r.APIProblem(err))
	}
	what := "new incident(s)"
	if s.o.DryRun {
		what = "incident(s) it would create"
	}
	s.log.logf("checked %d events after seq %d up to seq %d: %d %s", res.Checked, res.Since, res.Head, res.Incidents, what)
	switch {
	case res.Failed > 0:
		return cli.Failf("%d incident(s) could not be created", res.Failed).
			WithHint("see the errors above; secbot --once creates them on its next run")
	case res.Incidents > 0:
		return cli.Silent(exitIncidents)
	}
	return nil
}
