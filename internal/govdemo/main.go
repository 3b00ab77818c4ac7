// Command govdemo is scripts/demo-governance.sh's helper: it plays the
// agents of the governance tour through pkg/client, so that the demo needs
// nothing but Go (no curl, no jq).
//
//	govdemo decide URL IDFILE         record four policy decisions; write the approval id to IDFILE
//	govdemo release URL ID            consume approval ID and record the one action it releases
//	govdemo tools URL                 record a destructive action without approval and an SQL syntax error
//	govdemo incidents URL N SECONDS   wait up to SECONDS for N incident events, and print them
//
// It authenticates with $GOVKIT_TOKEN: the demo gives it a gateway token,
// as gate would have, since it names the people and agents it acts for
// (DESIGN §11).
package main

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
)

func main() {
	var err error
	switch {
	case len(os.Args) == 4 && os.Args[1] == "decide":
		err = decide(os.Args[2], os.Args[3])
	case len(os.Args) == 4 && os.Args[1] == "release":
		err = release(os.Args[2], os.Args[3])
	case len(os.Args) == 3 && os.Args[1] == "tools":
		err = tools(os.Args[2])
	case len(os.Args) == 5 && os.Args[1] == "incidents":
		err = incidents(os.Args[2], os.Args[3], os.Args[4])
	default:
		err = errors.New("usage: govdemo decide URL IDFILE | govdemo release URL ID | govdemo tools URL | govdemo incidents URL N SECONDS")
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "govdemo: error: %v\n", err)
		os.Exit(3)
	}
}

// agent is the demo's agent: the gateway names it in the decisions it asks
// for, so the approval requested is agent-7's, and bob and carol may decide
// it.
const agent = "agent-7"

// The pod restart that needs two approvers.
var (
	restartPod = govapi.Tool{Name: "kubectl", RawCommand: "kubectl delete pod payments-7f9c -n payments"}
	payments   = govapi.Resource{Type: "kubernetes", Name: "payments"}
)

func newClient(url string) (*client.Client, error) {
	opts := []client.Option{client.WithUserAgent("govdemo"), client.WithUser(agent)}
	if tok := os.Getenv("GOVKIT_TOKEN"); tok != "" {
		opts = append(opts, client.WithToken(tok))
	}
	return client.New(url, opts...)
}

// decide asks auditd for four decisions, one per outcome of phase 4 of
// govbot's report (seed 003 "Policy Decision Analysis"), each recorded
// with its trace as a policy_decision event. None depends on the time of
// day (change-freeze only denies writes in New York business hours).
func decide(url, idFile string) error {
	c, err := newClient(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cases := []struct {
		label string
		req   govapi.DecisionRequest
	}{
		{"allow", govapi.DecisionRequest{
			Principal: policy.RequestPrincipal{UserID: "bob@example.com"},
			Resource:  govapi.Resource{Type: "database", Name: "prod-db"}, Action: "read",
			Tool: &govapi.Tool{Name: "psql", RawCommand: "SELECT count(*) FROM orders"},
		}},
		{"deny", govapi.DecisionRequest{
			Principal: policy.RequestPrincipal{UserID: "alice@example.com", Roles: []string{"dba"}},
			Resource:  govapi.Resource{Type: "database", Name: "prod-db"}, Action: "destructive",
			Tool: &govapi.Tool{Name: "psql", RawCommand: "DROP TABLE orders"},
		}},
		{"require_approval", govapi.DecisionRequest{
			Principal: policy.RequestPrincipal{UserID: "sam@example.com", Roles: []string{"sre"}},
			Resource:  payments, Action: "destructive", Tool: &restartPod,
			Reason: "restart a wedged pod", ApprovalTTL: "10m",
		}},
		// legacy-db is not in examples/infra.yaml: no tags, no policy
		// matches, the default deny applies (seed 003 "no_match").
		{"no_match", govapi.DecisionRequest{
			Principal: policy.RequestPrincipal{UserID: "bob@example.com"},
			Resource:  govapi.Resource{Type: "database", Name: "legacy-db"}, Action: "read",
			Tool: &govapi.Tool{Name: "psql", RawCommand: "SELECT * FROM invoices LIMIT 10"},
		}},
	}
	for _, tc := range cases {
		tc.req.Agent = agent
		res, err := c.Decide(ctx, tc.req)
		if err != nil {
			return fmt.Errorf("%s decision: %w", tc.label, err)
		}
		d := res.Decision
		who := "default effect"
		if !res.DefaultApplied {
			who = fmt.Sprintf("%s rule %d", d.PolicyName, d.RuleIndex)
		}
		seq := int64(0)
		if res.Event != nil {
			seq = res.Event.Seq
		}
		fmt.Printf("  seq %-3d %-11s %-20s -> %-16s (%s)\n", seq, tc.req.Action, tc.req.Resource.Type+":"+tc.req.Resource.Name, d.EnforcedEffect, who)
		if res.ApprovalID != "" {
			fmt.Printf("          approval %s requested (quorum %d)\n", res.ApprovalID, d.ApprovalQuorum)
			if err := os.WriteFile(idFile, []byte(res.ApprovalID+"\n"), 0o600); err != nil {
				return err
			}
		}
	}
	return nil
}

// release consumes approval id for the action it was approved for, as gate
// does just before it runs the command, and records the command's run
// citing it: an approval releases one execution of exactly its action
// (DESIGN §11), so auditor, secbot and govbot find it authorized.
func release(url, id string) error {
	c, err := newClient(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	ev := audit.Event{
		EventType: audit.TypeToolExecution, Agent: agent, SessionID: "demo-s0", ActionClass: audit.ActionDestructive,
		Resource: &audit.Resource{Type: payments.Type, Name: payments.Name}, ApprovalID: id,
		Tool:    &audit.Tool{Name: restartPod.Name, RawCommand: restartPod.RawCommand, Result: `pod "payments-7f9c" deleted`, DurationMS: 812},
		Outcome: &audit.Outcome{Status: "success"},
	}
	hash := approval.ActionHash(*ev.Resource, ev.ActionClass, ev.Tool.Name, ev.Tool.RawCommand)
	r, err := c.ConsumeApproval(ctx, id, hash)
	if err != nil {
		return fmt.Errorf("consuming approval %s: %w", id, err)
	}
	fmt.Printf("  approval %s consumed by %s for action_hash %.12s…\n", r.ID, r.ConsumedBy, r.ActionHash)
	got, err := c.Append(ctx, ev)
	if err != nil {
		return fmt.Errorf("posting %q: %w", ev.Tool.RawCommand, err)
	}
	fmt.Printf("  seq %-3d %-13s %-11s %s (approval %s)\n", got.Seq, got.Agent, got.ActionClass, got.Tool.RawCommand, id)
	if _, err := c.ConsumeApproval(ctx, id, hash); err != nil {
		fmt.Printf("  a second consumption is refused: %v\n", err)
	} else {
		return fmt.Errorf("approval %s was consumed twice", id)
	}
	return nil
}

// tools records what two agents did: a destructive command run without
// asking for approval (auditor's and secbot's unauthorized_destructive),
// and a query whose output is an SQL syntax error (secbot's
// potential_sql_injection, seed 003 "Detected Security Patterns").
func tools(url string) error {
	c, err := newClient(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	events := []audit.Event{
		{
			EventType: audit.TypeToolExecution, Agent: "db-agent", SessionID: "demo-s1",
			Principal: &audit.Principal{UserID: "db-agent"}, ActionClass: audit.ActionDestructive,
			Resource: &audit.Resource{Type: "database", Name: "staging-db", Tags: []string{"staging"}},
			Tool:     &audit.Tool{Name: "psql", RawCommand: "TRUNCATE audit_trail", Result: "TRUNCATE TABLE", DurationMS: 41},
			Outcome:  &audit.Outcome{Status: "success"},
		},
		{
			EventType: audit.TypeToolExecution, Agent: "support-agent", SessionID: "demo-s2",
			Principal: &audit.Principal{UserID: "support-agent"}, ActionClass: audit.ActionRead,
			Resource: &audit.Resource{Type: "database", Name: "prod-db", Tags: []string{"production"}},
			Tool: &audit.Tool{Name: "psql", RawCommand: `SELECT * FROM users WHERE email = 'x' OR '1'='1' --'`,
				Result: `ERROR:  syntax error at or near "--"` + "\nLINE 1: SELECT * FROM users WHERE email = 'x' OR '1'='1' --'", DurationMS: 3},
			Outcome: &audit.Outcome{Status: "error"},
		},
	}
	for _, ev := range events {
		got, err := c.Append(ctx, ev)
		if err != nil {
			return fmt.Errorf("posting %q: %w", ev.Tool.RawCommand, err)
		}
		fmt.Printf("  seq %-3d %-13s %-11s %s\n", got.Seq, got.Agent, got.ActionClass, got.Tool.RawCommand)
	}
	return nil
}

// incidents waits for n incident events (secbot creates them through POST
// /api/v1/incidents) and prints them.
func incidents(url, count, seconds string) error {
	n, err1 := strconv.Atoi(count)
	secs, err2 := strconv.Atoi(seconds)
	if err1 != nil || err2 != nil || n < 1 || secs < 1 {
		return errors.New("N and SECONDS must be positive numbers")
	}
	c, err := newClient(url)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Duration(secs)*time.Second)
	defer cancel()
	for {
		p, err := c.GovernanceEvents(ctx, govapi.EventQuery{EventType: audit.TypeIncident, Cursor: govapi.Cursor{Limit: govapi.MaxLimit}})
		if err == nil && len(p.Events) >= n {
			for _, ev := range p.Events {
				var in govapi.IncidentInput
				_ = json.Unmarshal(ev.Data, &in)
				fmt.Printf("  seq %-3d incident %-27s %-8s from %-7s %s\n", ev.Seq, in.Type, in.Severity, in.Source, in.Message)
			}
			return nil
		}
		select {
		case <-ctx.Done():
			got := 0
			if err == nil {
				got = len(p.Events)
			}
			return fmt.Errorf("%d of %d incidents within %ss (last error: %v)", got, n, seconds, err)
		case <-time.After(100 * time.Millisecond):
		}
	}
}
