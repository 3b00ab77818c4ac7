package serve

import (
	"context"
	"encoding/json"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/toolgov"
)

// agentLabel names gate serve in what it records; the identity is its
// token's (DESIGN §11).
const agentLabel = "gate-serve"

// recordTimeout bounds one record in auditd.
const recordTimeout = 10 * time.Second

// recordTool appends a tool execution to auditd's chain (with --url).
func (s *Server) recordTool(convID string, call conversation.ToolCall, res convtools.Result) {
	if s.gov == nil {
		return
	}
	action := "write"
	for _, d := range convtools.Definitions() {
		if d.Name == call.Name && (d.Kind == "read" || d.Kind == "search") {
			action = "read"
		}
	}
	rec := toolgov.Record{Type: toolgov.TypeToolExecution, Status: "success", Result: res.Output,
		Call: toolgov.Call{SessionID: convID, CallID: call.ID, Agent: agentLabel, Tool: call.Name, Action: action,
			RawCommand: call.Name + " " + string(call.Args)}}
	if !res.OK {
		rec.Status, rec.Error = "error", res.Error
	}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if err := s.gov.Record(ctx, rec); err != nil {
		s.logf("conversation %s: recording %s in auditd: %v", convID, call.Name, err)
	}
}

// modeChangeType is the event a mode change is recorded as.
const modeChangeType = "mode_change"

// recordMode appends a mode change to auditd's chain (with --url).
func (s *Server) recordMode(convID string, from, to conversation.Mode, generation int, approvalID string) {
	a := s.o.Auditd
	if a == nil {
		return
	}
	data, _ := json.Marshal(map[string]any{"from": from, "to": to, "generation": generation})
	ev := audit.Event{EventType: modeChangeType, SessionID: convID, ApprovalID: approvalID,
		Resource: &audit.Resource{Type: "conversation", Name: convID}, Outcome: &audit.Outcome{Status: string(to)}, Data: data}
	ctx, cancel := context.WithTimeout(context.Background(), recordTimeout)
	defer cancel()
	if _, err := a.Append(ctx, ev); err != nil {
		s.logf("conversation %s: recording the mode change in auditd: %v", convID, err)
	}
}
