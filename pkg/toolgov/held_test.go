package toolgov_test

import (
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/toolgov"
)

// fakeAuditd answers with a fixed approval, policy effect and consumption
// result, and counts what it was asked: the branches of a held approval
// that a real auditd reaches only by waiting (stale, expired) or by racing.
type fakeAuditd struct {
	ap         approval.Request
	apErr      error
	effect     policy.Effect
	consumeErr error

	decisions []govapi.DecisionRequest
	consumed  int
}

func (f *fakeAuditd) Decide(_ context.Context, req govapi.DecisionRequest) (govapi.DecisionResult, error) {
	f.decisions = append(f.decisions, req)
	res := govapi.DecisionResult{Explanation: govapi.Explanation{
		DecisionTrace: policy.DecisionTrace{Decision: policy.Decision{Effect: f.effect, EnforcedEffect: f.effect, PolicyName: "p"}},
		Event:         &govapi.EventRef{EventID: "evt_1"},
	}}
	if f.effect == policy.EffectRequireApproval && req.ApprovalID == "" {
		res.ApprovalID = "apr_new"
	}
	return res, nil
}

func (f *fakeAuditd) Approval(context.Context, string) (approval.Request, error) {
	return f.ap, f.apErr
}

func (f *fakeAuditd) ConsumeApproval(context.Context, string, string) (approval.Request, error) {
	if f.consumeErr != nil {
		return approval.Request{}, f.consumeErr
	}
	f.consumed++
	return f.ap, nil
}

func (f *fakeAuditd) Append(context.Context, audit.Event) (audit.Event, error) {
	return audit.Event{}, nil
}

func TestHeldApproval(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	call := editConfig("x")
	call.ApprovalID = "apr_held"
	res := audit.Resource{Type: call.Resource.Type, Name: call.Resource.Name}
	held := func(status approval.Status, edit ...func(*approval.Request)) approval.Request {
		later := now.Add(time.Minute)
		r := approval.Request{ID: "apr_held", Status: status, Quorum: 1, ExpiresAt: later, ValidUntil: &later,
			ActionHash: approval.ActionHash(res, call.Action, call.Tool, call.RawCommand)}
		for _, e := range edit {
			e(&r)
		}
		return r
	}
	refusal := func(code int, rule string) error {
		return &client.Error{StatusCode: code, Code: rule, Message: rule}
	}
	for _, tc := range []struct {
		name string
		f    fakeAuditd
		// want: the verdict's effect, approval id, consumed; decisions
		// asked; reason fragment.
		effect    policy.Effect
		id        string
		consumed  bool
		decisions int
		reason    string
		err       bool
	}{
		{name: "approved", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectRequireApproval},
			effect: policy.EffectAllow, id: "apr_held", consumed: true, decisions: 1, reason: "consumed for this call"},
		{name: "approved, the policy now allows", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectAllow},
			effect: policy.EffectAllow, decisions: 1, reason: "allowed"},
		{name: "approved, the policy now denies", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectDeny},
			effect: policy.EffectDeny, decisions: 1, reason: "denied"},
		{name: "approved, stale", f: fakeAuditd{ap: held(approval.Approved, func(r *approval.Request) { past := now.Add(-time.Second); r.ValidUntil = &past }), effect: policy.EffectRequireApproval},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 1, reason: "was valid until 2026-05-01T11:59:59Z; "},
		{name: "pending past its expiry", f: fakeAuditd{ap: held(approval.Pending, func(r *approval.Request) { r.ExpiresAt = now.Add(-time.Second) }), effect: policy.EffectRequireApproval},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 1, reason: "approval apr_held is expired; "},
		{name: "cancelled", f: fakeAuditd{ap: held(approval.Cancelled), effect: policy.EffectRequireApproval},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 1, reason: "approval apr_held is cancelled; "},
		{name: "unknown", f: fakeAuditd{apErr: refusal(http.StatusNotFound, ""), effect: policy.EffectRequireApproval},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 1, reason: "cannot be used (404"},
		{name: "another caller's", f: fakeAuditd{apErr: refusal(http.StatusForbidden, ""), effect: policy.EffectRequireApproval},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 1, reason: "cannot be used (403"},
		{name: "consumed by a racing call", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectRequireApproval, consumeErr: refusal(http.StatusConflict, approval.RefusedConsumed)},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 2, reason: "cannot be consumed (409"},
		{name: "stale at consumption", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectRequireApproval, consumeErr: refusal(http.StatusGone, approval.RefusedStale)},
			effect: policy.EffectRequireApproval, id: "apr_new", decisions: 2, reason: "cannot be consumed (410"},
		{name: "auditd fails at consumption", f: fakeAuditd{ap: held(approval.Approved), effect: policy.EffectRequireApproval, consumeErr: refusal(http.StatusServiceUnavailable, "")},
			decisions: 1, err: true},
		{name: "auditd rate-limits the read", f: fakeAuditd{apErr: refusal(http.StatusTooManyRequests, "")},
			err: true},
		{name: "auditd down", f: fakeAuditd{apErr: errors.New("connection refused")},
			err: true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			f := tc.f
			v, err := toolgov.New(&f, func() time.Time { return now }, strings.NewReader(strings.Repeat("r", 1000))).Decide(context.Background(), call)
			if tc.err {
				if err == nil {
					t.Fatalf("verdict %+v, want an error", v)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if v.Effect != tc.effect || v.ApprovalID != tc.id || v.Consumed != tc.consumed || len(f.decisions) != tc.decisions || !strings.Contains(v.Reason, tc.reason) {
				t.Errorf("verdict %+v after %d decisions; want %s %q consumed %v after %d, reason with %q", v, len(f.decisions), tc.effect, tc.id, tc.consumed, tc.decisions, tc.reason)
			}
			if f.consumed != 0 && !v.Consumed {
				t.Error("consumed, but the verdict does not say so")
			}
			// Only a decision made to consume the held approval names it.
			for i, d := range f.decisions {
				if d.ApprovalID != "" && (i > 0 || d.ApprovalID != "apr_held") {
					t.Errorf("decision %d names approval %q", i, d.ApprovalID)
				}
			}
		})
	}
}
