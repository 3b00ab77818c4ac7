package serve

import (
	"context"
	"errors"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// upgradeAction is what a mode upgrade asks auditd to approve: the
// conversation as the resource, so that a policy can require approval for
// it (resources: [{type: conversation}], action write).
func upgradeAction(convID string) (audit.Resource, string, string, string) {
	return audit.Resource{Type: "conversation", Name: convID}, "write", "request_mode_upgrade",
		"upgrade conversation " + convID + " to unrestricted"
}

// requestModeApproval turns request_mode_upgrade into an approval request
// in auditd (with --url) and waits for a person's decision. Nothing here
// ever upgrades on its own: an expired, cancelled or unanswerable request
// is a denial (B-15c), and without auditd the decision comes only from
// the API (gate conversations mode ID approve).
func (d *driver) requestModeApproval(ctx context.Context, e conversation.Effect) {
	a := d.s.o.Auditd
	if a == nil {
		return
	}
	convID, reason := d.c.ID, e.Reason
	ctx, cancel := context.WithCancel(ctx)
	d.approvalCancel = cancel
	go func() {
		res, action, tool, raw := upgradeAction(convID)
		req, err := a.RequestApproval(ctx, approval.Input{Resource: res, Action: action, Tool: tool, RawCommand: raw, Reason: reason})
		var ae *client.Error
		switch {
		case errors.As(err, &ae) && ae.Code == govapi.CodeApprovalNotRequired:
			// The policy would allow it unasked; a mode upgrade still
			// needs a person, so the API decides.
			d.s.logf("conversation %s: auditd's policy does not require approval for a mode upgrade; waiting for a decision through the API", convID)
			return
		case err != nil:
			d.post(conversation.Event{Type: conversation.EvModeDecision, Approved: false,
				Reason: "auditd could not open an approval request: " + err.Error()})
			return
		}
		d.post(approvalOpened{id: req.ID})
		for {
			r, err := a.WaitApproval(ctx, req.ID, govapi.MaxWait)
			if ctx.Err() != nil {
				return
			}
			if err != nil {
				select { // auditd is away: ask again shortly
				case <-time.After(time.Second):
				case <-ctx.Done():
					return
				}
				continue
			}
			switch r.Status {
			case approval.Pending:
				continue
			case approval.Approved:
				// One approval, one upgrade (DESIGN §11).
				if _, err := a.ConsumeApproval(ctx, r.ID, approval.ActionHash(res, action, tool, raw)); err != nil {
					d.post(conversation.Event{Type: conversation.EvModeDecision, Approved: false, ApprovalID: r.ID,
						Reason: "the approval could not be consumed: " + err.Error()})
					return
				}
				d.post(conversation.Event{Type: conversation.EvModeDecision, Approved: true, ApprovalID: r.ID, Reason: "approved in auditd"})
			default:
				d.post(conversation.Event{Type: conversation.EvModeDecision, Approved: false, ApprovalID: r.ID,
					Reason: "the approval request was " + string(r.Status) + denial(r)})
			}
			return
		}
	}()
}

// denial is who denied the request and why, for the agent: the reason
// is what tells it what to do instead (B-15b).
func denial(r approval.Request) string {
	v, ok := r.Denial()
	switch {
	case !ok:
		return ""
	case v.Reason == "":
		return " by " + v.By
	}
	return " by " + v.By + ": " + v.Reason
}

// withdrawApproval stops waiting on the upgrade's approval and withdraws
// it in auditd (the machine no longer waits: a cancel, a downgrade).
func (d *driver) withdrawApproval() {
	if d.approvalCancel != nil {
		d.approvalCancel()
		d.approvalCancel = nil
	}
	if id, a := d.approvalID, d.s.o.Auditd; id != "" && a != nil {
		d.approvalID = ""
		go func() {
			ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
			defer cancel()
			_, _ = a.CancelApproval(ctx, id)
		}()
	}
}

// withdrawStaleApprovals withdraws, after a restart, the auditd approval
// requests of an upgrade the conversation waited on when the server died:
// Restore ends the wait, so nothing would ever consume them, and a person
// should not be asked to decide what no one waits for. Their ids were not
// persisted (they arrive after the transition that asked), so they are
// found by their resource.
func (d *driver) withdrawStaleApprovals() {
	a := d.s.o.Auditd
	if a == nil {
		return
	}
	res, _, _, _ := upgradeAction(d.c.ID)
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
		defer cancel()
		pending, err := a.PendingApprovals(ctx)
		if err != nil {
			d.s.logf("conversation %s: could not withdraw the approval requests of the upgrade it waited on before the restart: %v", res.Name, err)
			return
		}
		for _, p := range pending {
			if p.Resource.Type == res.Type && p.Resource.Name == res.Name {
				_, _ = a.CancelApproval(ctx, p.ID)
			}
		}
	}()
}

// approvalOpened tells the loop which auditd approval an upgrade waits on,
// for the API and the stream.
type approvalOpened struct{ id string }
