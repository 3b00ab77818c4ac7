package gate

import (
	"context"

	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

// limits are the blast-radius limits of the rule that decided (seed 003
// "Blast Radius"): with one, the command's output is held back until the
// check after execution has passed.
type limits struct {
	rows, pods int
}

func (l limits) any() bool { return l.rows > 0 || l.pods > 0 }

// limitsOf reads the deciding rule's limits from the trace.
func limitsOf(tr policy.DecisionTrace) limits {
	var l limits
	if tr.DefaultApplied {
		return l
	}
	for _, pt := range tr.PoliciesEvaluated {
		if pt.PolicyName != tr.Decision.PolicyName {
			continue
		}
		for _, rt := range pt.Rules {
			if rt.Index != tr.Decision.RuleIndex {
				continue
			}
			for _, c := range rt.Conditions {
				switch c.Name {
				case "max_rows_affected":
					l.rows = c.Limit
				case "max_pods_affected":
					l.pods = c.Limit
				}
			}
		}
	}
	return l
}

// checkBlastRadius is the check after execution: the counts parsed from the
// output go to auditd as a post_execution decision (recorded in the
// chain). It sets br.Exceeded when the output must be withheld, a deny or
// a check that could not be made (fail closed), and says why.
func (r *run) checkBlastRadius(ctx context.Context, out string, complete bool, br *BlastRadius) (why string) {
	br.MaxRows, br.MaxPods = r.limits.rows, r.limits.pods
	req := govapi.DecisionRequest{
		EventID: r.newID(), SessionID: r.req.Session,
		Resource: govapi.Resource{Type: r.resType, Name: r.resName}, Action: r.action(),
		Tool: &govapi.Tool{Name: r.tool, RawCommand: r.command}, PostExecution: true,
	}
	if br.Rows == nil && r.limits.rows > 0 {
		if n, ok := policy.ParseRowsAffected(out); ok {
			br.Rows = &n
		}
	}
	if r.limits.pods > 0 {
		if n, ok := policy.ParsePodsAffected(out); ok {
			br.Pods = &n
		}
	}
	if !complete && br.Transaction == "" {
		// More output than gate keeps to count in: a count from part of
		// it could only be too low (fail closed).
		br.Exceeded, br.Note = true, "the output was too large to count what it changed"
		return "blast radius not verified, output withheld: " + br.Note
	}
	if br.Rows != nil {
		req.RowsAffected = max(*br.Rows, 0)
	}
	if br.Pods != nil {
		req.PodsAffected = max(*br.Pods, 0)
	}
	if req.RowsAffected == 0 && req.PodsAffected == 0 {
		br.Note = "no count in the output: the limit was not evaluated"
	}
	dr, err := r.req.Client.Decide(ctx, req)
	if err != nil {
		// The check could not be made: withhold (fail closed), and say so.
		br.Exceeded, br.Note = true, "the check after execution could not reach auditd"
		r.incident("governance_unavailable", "governance unavailable: the blast-radius check after execution could not reach auditd; the output was withheld", nil)
		return "blast radius not verified, output withheld: " + br.Note
	}
	if dr.Event != nil {
		br.DecisionID = dr.Event.EventID
	}
	br.Exceeded = dr.Decision.EnforcedEffect == policy.EffectDeny
	return "blast radius exceeded, output withheld: " + dr.Explanation.Explanation
}
