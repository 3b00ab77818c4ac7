package auditd_test

import (
	"encoding/json"
	"errors"
	"testing"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/token"
)

// The operations answer without HTTP (issue 13: gate calls them directly),
// and their refusals are typed: a kind and the code a client branches on.
func TestOperationsRefuseWithTypedErrors(t *testing.T) {
	srv := auditdtest.New(t, nil)
	p := loadPolicy(t, prodPolicy, testInfra)
	if err := srv.SetPolicy(p); err != nil {
		t.Fatal(err)
	}
	ctx := ctxT(t)
	alice := token.Identity{Name: "alice", Roles: []token.Role{token.Admin}} // local mode: the header's name
	prod := govapi.Resource{Type: "database", Name: "prod-db"}
	approvalFor := func(action string) govapi.ApprovalInput {
		return govapi.ApprovalInput{Input: approval.Input{Resource: audit.Resource{Type: "database", Name: "prod-db"}, Action: action}}
	}
	for _, tc := range []struct {
		name string
		op   func() error
		kind auditd.Kind
		code string
	}{
		{"approval for an allowed action", func() error { _, err := srv.RequestApproval(ctx, alice, approvalFor("read")); return err },
			auditd.Conflict, govapi.CodeApprovalNotRequired},
		{"approval for a denied action", func() error { _, err := srv.RequestApproval(ctx, alice, approvalFor("destructive")); return err },
			auditd.Forbidden, govapi.CodePolicyDenied},
		{"asserted roles", func() error {
			_, err := srv.Decide(ctx, alice, govapi.DecisionRequest{Principal: policy.RequestPrincipal{UserID: "alice", Roles: []string{"dba"}}, Resource: prod, Action: "write"})
			return err
		}, auditd.Forbidden, govapi.CodePrincipalNotAllowed},
		{"asserted tags", func() error {
			_, err := srv.Decide(ctx, alice, govapi.DecisionRequest{Resource: govapi.Resource{Type: "database", Name: "prod-db", Tags: []string{"staging"}}, Action: "write"})
			return err
		}, auditd.Forbidden, govapi.CodeTagsNotAllowed},
		{"reserved event type", func() error {
			_, err := srv.Append(ctx, alice, audit.Event{EventType: audit.TypeIncident})
			return err
		}, auditd.Invalid, govapi.CodeReservedEventType},
		{"unknown event", func() error { _, err := srv.Event(ctx, "evt_missing"); return err }, auditd.NotFound, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			err := tc.op()
			var ref *auditd.Refusal
			if !errors.As(err, &ref) || ref.Kind != tc.kind || ref.Code != tc.code {
				t.Fatalf("err = %#v, want a Refusal of kind %d code %q", err, tc.kind, tc.code)
			}
		})
	}

	// What the operations record, they return; a retry is not a second
	// record.
	in := govapi.DecisionRequest{EventID: "evt_op_1", Resource: prod, Action: "read"}
	first, err := srv.Decide(ctx, alice, in)
	if err != nil || !first.Created || first.Value.Decision.EnforcedEffect != policy.EffectAllow {
		t.Fatalf("Decide = %+v, %v", first, err)
	}
	again, err := srv.Decide(ctx, alice, in)
	if err != nil || again.Created || again.Value.Event.Seq != first.Value.Event.Seq {
		t.Fatalf("retry = %+v, %v; want the first decision, not created", again, err)
	}
	if _, err := srv.Decide(ctx, token.Identity{Name: "mallory"}, in); err == nil {
		t.Fatal("another caller's retry of the event_id was answered")
	}
}

// A refusal's detail reaches the client: an agent sees which rule denied
// its request without asking again.
func TestRefusalDetailReachesTheClient(t *testing.T) {
	d := startDaemon(t, "", nil)
	if err := d.srv.SetPolicy(loadPolicy(t, prodPolicy, testInfra)); err != nil {
		t.Fatal(err)
	}
	_, err := d.c.RequestApproval(ctxT(t), approval.Input{Resource: audit.Resource{Type: "database", Name: "prod-db"}, Action: "destructive"})
	var ae *client.Error
	if !errors.As(err, &ae) || ae.Code != govapi.CodePolicyDenied {
		t.Fatalf("err = %v, want policy_denied", err)
	}
	var ex govapi.Explanation
	if err := json.Unmarshal(ae.Detail, &ex); err != nil || ex.Decision.PolicyName != "prod-db-guard" || ex.Decision.EnforcedEffect != policy.EffectDeny {
		t.Fatalf("detail = %s (%v), want the trace of prod-db-guard's deny", ae.Detail, err)
	}
}
