package serve_test

import (
	"context"
	"crypto/rand"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/internal/llmfake"
	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/sandbox"
	"github.com/govkit/govkit/pkg/serve"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/token"
)

// governed is a real auditd under a policy that requires an approval for
// every action, with a tokens file: gate serve's identity (an agent that
// is also an approver, so that the self-approval rule is what stops it),
// bob (an approver) and an auditor.
type governed struct {
	d             *auditdtest.Daemon
	serve         *client.Client
	bob, auditor  *client.Client
	consumeAction string
}

func startGoverned(t *testing.T) *governed {
	t.Helper()
	file := filepath.Join(t.TempDir(), "tokens.yaml")
	mk := func(name string, roles ...token.Role) string {
		tok, err := token.Create(file, name, roles, rand.Reader)
		if err != nil {
			t.Fatal(err)
		}
		return tok
	}
	serveTok, bobTok, auditTok := mk("gate-serve", token.Agent, token.Approver), mk("bob", token.Approver), mk("audit", token.Auditor)
	set, err := token.NewSet(file, t.Logf, time.Now)
	if err != nil {
		t.Fatal(err)
	}
	d := auditdtest.Start(t, auditdtest.Options{Policy: auditdtest.RequireApproval(t),
		Config: func(c *auditd.Config) { c.VerifyOnStart = false; c.Tokens = set }})
	g := &governed{d: d}
	for _, x := range []struct {
		c   **client.Client
		tok string
	}{{&g.serve, serveTok}, {&g.bob, bobTok}, {&g.auditor, auditTok}} {
		if *x.c, err = client.New(d.URL, client.WithToken(x.tok)); err != nil {
			t.Fatal(err)
		}
	}
	return g
}

// events are the chain's events of a conversation.
func (g *governed) events(t *testing.T, convID string) []audit.Event {
	t.Helper()
	var out []audit.Event
	for ev, err := range g.auditor.QueryAll(context.Background(), govapi.EventQuery{SessionID: convID}) {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, ev)
	}
	return out
}

func needLandlock(t *testing.T) {
	t.Helper()
	if err := sandbox.Probe().Check(sandbox.Isolated); err != nil {
		t.Skipf("restricted mode needs Landlock, which this host lacks: %v", err)
	}
}

// awaitApproval waits for the conversation's upgrade request to be open
// in auditd and returns its id.
func awaitApproval(t *testing.T, r *rig, id string) string {
	t.Helper()
	r.waitState(id, conversation.AwaitingModeApproval)
	var approvalID string
	waitFor(t, "the approval request in auditd", func() bool {
		approvalID = r.show(id).ApprovalID
		return approvalID != ""
	})
	return approvalID
}

// pendingUpgrade starts a conversation governed by g whose model first
// asks for an upgrade ("write access"), then answers steps, and returns
// once the upgrade's approval request is open in auditd: the rig, the
// conversation and the approval's id.
func pendingUpgrade(t *testing.T, g *governed, steps ...llmfake.Step) (*rig, serve.StateView, string) {
	t.Helper()
	up := llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "up", Name: "request_mode_upgrade", Args: args(map[string]string{"reason": "write access"})}}}
	r := newRigWith(t, func(o *serve.Options) { o.Auditd = g.serve }, append([]llmfake.Step{up}, steps...)...)
	c := r.create("")
	if err := r.send(c.ID, "ask for more"); err != nil {
		t.Fatal(err)
	}
	return r, c, awaitApproval(t, r, c.ID)
}

// awaitWithdrawn waits for auditd to show the approval request id
// withdrawn (cancelled).
func (g *governed) awaitWithdrawn(t *testing.T, id string) {
	t.Helper()
	waitFor(t, "the approval request withdrawn", func() bool {
		req, err := g.bob.Approval(context.Background(), id)
		return err == nil && req.Status == approval.Cancelled
	})
}

func clientCode(err error) string {
	var e *client.Error
	if errors.As(err, &e) {
		return e.Code
	}
	return ""
}

// request_mode_upgrade becomes an approval request in auditd; gate serve
// cannot approve it itself, nor can the API; bob approves it in auditd;
// the conversation goes unrestricted (generation 2) and resumes, the
// approval consumed once. The patch the model asked for in the same turn,
// admitted under the restricted generation, reaches execution after the
// upgrade and is rejected, never run with the new capability; asked for
// again, it runs. The mode change and the tool executions are in the
// chain (B-15a/b, B-16, B-17a, DESIGN §11).
func TestModeUpgradeThroughAuditd(t *testing.T) {
	needLandlock(t)
	g := startGoverned(t)
	r := newRigWith(t, func(o *serve.Options) { o.Auditd = g.serve },
		llmfake.Step{ToolCalls: []llmfake.FakeCall{
			{ID: "up", Name: "request_mode_upgrade", Args: args(map[string]string{"reason": "I need to write out.txt"})},
			{ID: "early", Name: "patch", Args: args(map[string]string{"path": "out.txt", "old_text": "", "new_text": "early\n"})}}},
		// The session gates want a read before a write (seed 000's FSM).
		llmfake.Step{ToolCalls: []llmfake.FakeCall{
			{ID: "look", Name: "read_file", Args: args(map[string]string{"path": "notes.txt"})},
			{ID: "late", Name: "patch", Args: args(map[string]string{"path": "out.txt", "old_text": "", "new_text": "late\n"})}}},
		llmfake.Step{Text: "written"})
	if err := os.WriteFile(filepath.Join(r.dir, "notes.txt"), []byte("write out.txt\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	c := r.create("")
	if c.Mode != conversation.Restricted || c.Generation != 1 {
		t.Fatalf("a new conversation: %+v", c)
	}
	if err := r.send(c.ID, "write out.txt"); err != nil {
		t.Fatal(err)
	}
	id := awaitApproval(t, r, c.ID)
	ctx := context.Background()
	req, err := g.bob.Approval(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if req.Status != approval.Pending || req.RequestedBy != "gate-serve" || req.Resource.Type != "conversation" || req.Resource.Name != c.ID ||
		req.Reason != "I need to write out.txt" {
		t.Fatalf("the approval request: %+v", req)
	}

	// Neither the API nor gate serve's own identity decides it.
	apiError(t, r.post(serve.PathMode, c.ID, serve.ModeInput{Action: "approve"}), http.StatusConflict, "decide_in_auditd")
	if _, err := g.serve.Approve(ctx, id, "self"); clientCode(err) != approval.RefusedSelfApproval {
		t.Fatalf("gate serve approving its own request: %v", err)
	}
	if v := r.show(c.ID); v.State != conversation.AwaitingModeApproval || v.Mode != conversation.Restricted {
		t.Fatalf("after the refused approvals: %s %s", v.State, v.Mode)
	}

	if _, err := g.bob.Approve(ctx, id, "go ahead"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	if v.Mode != conversation.Unrestricted || v.Generation != 2 {
		t.Fatalf("after the approval: mode %s generation %d", v.Mode, v.Generation)
	}
	byCall := map[string]conversation.Message{}
	for _, m := range v.Messages {
		if m.Role == conversation.RoleTool {
			byCall[m.CallID] = m
		}
	}
	if m := byCall["up"]; m.IsError || !strings.Contains(m.Text, "approved") {
		t.Errorf("the upgrade's result: %+v", m)
	}
	if m := byCall["early"]; !m.IsError || !strings.Contains(m.Text, conversation.CodeModeChanged) {
		t.Errorf("the patch admitted under the restricted generation: %+v", m)
	}
	if m := byCall["late"]; m.IsError {
		t.Errorf("the patch asked for after the upgrade: %+v", m)
	}
	if b, err := os.ReadFile(filepath.Join(r.dir, "out.txt")); err != nil || string(b) != "late\n" {
		t.Errorf("out.txt: %q, %v", b, err)
	}
	got := texts(v.Messages)
	if !strings.Contains(got, "system:mode:") || !strings.Contains(got, "The user approved the upgrade. Mode: unrestricted") {
		t.Errorf("no mode notice:\n%s", got)
	}

	// Consumed once: gate serve took the one upgrade it allowed.
	if req, err = g.bob.Approval(ctx, id); err != nil || req.Status != approval.Consumed {
		t.Errorf("the approval after the upgrade: %+v, %v", req, err)
	}
	res, action, tool, raw := "conversation", "write", "request_mode_upgrade", "upgrade conversation "+c.ID+" to unrestricted"
	hash := approval.ActionHash(audit.Resource{Type: res, Name: c.ID}, action, tool, raw)
	if _, err := g.serve.ConsumeApproval(ctx, id, hash); clientCode(err) != approval.RefusedConsumed {
		t.Errorf("consuming the approval again: %v", err)
	}

	// The chain has the mode change (recorded in the background) and
	// the patch's execution.
	var modes, patches []audit.Event
	waitFor(t, "the mode change in auditd", func() bool {
		modes, patches = nil, nil
		for _, ev := range g.events(t, c.ID) {
			switch {
			case ev.EventType == "mode_change":
				modes = append(modes, ev)
			case ev.EventType == audit.TypeToolExecution && ev.Tool != nil && ev.Tool.Name == "patch":
				patches = append(patches, ev)
			}
		}
		return len(modes) > 0
	})
	if len(modes) != 1 || modes[0].ApprovalID != id || modes[0].Outcome == nil || modes[0].Outcome.Status != string(conversation.Unrestricted) {
		t.Errorf("mode changes in the chain: %+v", modes)
	} else {
		var data struct {
			From, To   string
			Generation int
		}
		if json.Unmarshal(modes[0].Data, &data); data.From != "restricted" || data.To != "unrestricted" || data.Generation != 2 {
			t.Errorf("the mode change's data: %s", modes[0].Data)
		}
	}
	if len(patches) != 1 || patches[0].Outcome == nil || patches[0].Outcome.Status != "success" {
		t.Errorf("patch executions in the chain (the refused one never ran): %+v", patches)
	}
}

// Denied in auditd: the conversation stays restricted (generation 1) and
// the agent is told, in its next request (B-15b).
func TestModeUpgradeDenied(t *testing.T) {
	needLandlock(t)
	g := startGoverned(t)
	r, c, id := pendingUpgrade(t, g, llmfake.Step{Text: "staying read-only"})
	if _, err := g.bob.Deny(context.Background(), id, "not today"); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	if v.Mode != conversation.Restricted || v.Generation != 1 {
		t.Fatalf("after the denial: mode %s generation %d", v.Mode, v.Generation)
	}
	m, _ := toolResult(v.Messages, "request_mode_upgrade")
	if !m.IsError || !strings.Contains(m.Text, "denied by bob: not today") {
		t.Errorf("the upgrade's result: %+v", m)
	}
	reqs := r.fake.Requests()
	if len(reqs) != 2 || !strings.Contains(string(reqs[1]), "the user denied the upgrade") || !strings.Contains(string(reqs[1]), "not today") {
		t.Errorf("the agent was not told: %s", reqs[len(reqs)-1])
	}
	for _, ev := range g.events(t, c.ID) {
		if ev.EventType == "mode_change" {
			t.Errorf("a mode change recorded after a denial: %+v", ev)
		}
	}
}

// The executor's last check: an execute_tool admitted under generation 1
// that reaches the executor once the conversation is at generation 2 is
// refused, not run, even when it carries the new mode (the phoenix-ide
// P0: half-upgraded). A stale effect is forced in here, since the
// machine itself never emits one.
func TestExecutorRefusesStaleGeneration(t *testing.T) {
	needLandlock(t)
	r := newRig(t, llmfake.Step{ToolCalls: []llmfake.FakeCall{{ID: "up", Name: "request_mode_upgrade", Args: args(map[string]string{"reason": "write"})}}},
		llmfake.Step{Text: "unrestricted now"})
	c := r.create("")
	if err := r.send(c.ID, "upgrade"); err != nil {
		t.Fatal(err)
	}
	r.waitState(c.ID, conversation.AwaitingModeApproval)
	// Without auditd the API decides.
	if err := r.post(serve.PathMode, c.ID, serve.ModeInput{Action: "approve"}); err != nil {
		t.Fatal(err)
	}
	if v := r.waitState(c.ID, conversation.Idle); v.Generation != 2 || v.Mode != conversation.Unrestricted {
		t.Fatalf("after the approval: %+v", v.StateView)
	}
	frames := r.watch(c.ID)
	if f := next(t, frames); f.Event != "state" { // attached
		t.Fatalf("the stream's first frame: %s %s", f.Event, f.Data)
	}
	stale := conversation.ToolCall{ID: "stale", Name: "bash", Args: args(map[string]string{"command": "touch stale-ran"})}
	if !serve.InjectEffects(r.srv, c.ID, conversation.Effect{Type: conversation.EfExecuteTool, Call: &stale, Generation: 1,
		Mode: conversation.Unrestricted, Cwd: c.Cwd}) {
		t.Fatal("no conversation")
	}
	// The executor answers the refused call at once; the machine finds
	// that answer stale and says so on the stream.
	for {
		f := next(t, frames)
		if f.Event != "error" {
			continue
		}
		var e conversation.Effect
		_ = json.Unmarshal(f.Data, &e)
		if e.Code != conversation.CodeStale || !strings.Contains(e.Detail, "tool_result stale") {
			t.Fatalf("error frame: %s", f.Data)
		}
		break
	}
	if fileExists(filepath.Join(r.dir, "stale-ran")) {
		t.Fatal("a call admitted under generation 1 ran under generation 2")
	}
	if v := r.show(c.ID); v.State != conversation.Idle || v.Generation != 2 || strings.Contains(texts(v.Messages), "stale") {
		t.Errorf("after the stale call: %s generation %d\n%s", v.State, v.Generation, texts(v.Messages))
	}
}

// A cancel while the upgrade waits withdraws the request in auditd; an
// approval that comes later upgrades nothing (B-15c: nothing but a
// decision on a pending request upgrades).
func TestModeUpgradeCancelWithdraws(t *testing.T) {
	needLandlock(t)
	g := startGoverned(t)
	r, c, id := pendingUpgrade(t, g)
	if err := r.post(serve.PathCancel, c.ID, nil); err != nil {
		t.Fatal(err)
	}
	v := r.waitState(c.ID, conversation.Idle)
	g.awaitWithdrawn(t, id)
	if _, err := g.bob.Approve(context.Background(), id, "too late"); clientCode(err) != approval.RefusedNotPending {
		t.Errorf("approving a withdrawn request: %v", err)
	}
	if v = r.show(c.ID); v.Mode != conversation.Restricted || v.Generation != 1 || v.State != conversation.Idle {
		t.Errorf("after the cancel and a late approval: %s %s generation %d", v.State, v.Mode, v.Generation)
	}
	if m, _ := toolResult(v.Messages, "request_mode_upgrade"); !m.IsError || !strings.Contains(m.Text, conversation.CodeCancelled) {
		t.Errorf("the upgrade's result: %+v", m)
	}
}

// TestCreateUnrestricted: a person may start a conversation unrestricted
// where auditd does not govern upgrades; it is honest about why and can be
// downgraded (B-16). Where auditd governs them, asking for unrestricted up
// front is refused: the upgrade is a person's approval there, not a field
// of the create request.
func TestCreateUnrestricted(t *testing.T) {
	needLandlock(t)
	r := newRig(t)
	c := r.create("unrestricted")
	v := r.show(c.ID)
	if v.Mode != conversation.Unrestricted || strings.Contains(texts(v.Messages), "not available") {
		t.Fatalf("created unrestricted: %s\n%s", v.Mode, texts(v.Messages))
	}
	if err := r.post(serve.PathMode, c.ID, serve.ModeInput{Action: "downgrade"}); err != nil {
		t.Fatal(err)
	}
	if v = r.show(c.ID); v.Mode != conversation.Restricted {
		t.Errorf("after a downgrade: %s", v.Mode)
	}

	g := startGoverned(t)
	gr := newRigWith(t, func(o *serve.Options) { o.Auditd = g.serve })
	var out serve.StateView
	err := gr.c.Do(context.Background(), http.MethodPost, serve.PathConversations, serve.CreateInput{Cwd: gr.dir, Mode: "unrestricted"}, &out)
	apiError(t, err, http.StatusForbidden, "approval_required")
}

// TestRestartWithdrawsApproval: a server that died while a conversation
// waited on an upgrade withdraws that approval request when it restores
// the conversation to idle: nothing waits for it any more.
func TestRestartWithdrawsApproval(t *testing.T) {
	needLandlock(t)
	g := startGoverned(t)
	r, c, id := pendingUpgrade(t, g)
	r.stop()
	r.start()
	v := r.waitState(c.ID, conversation.Idle)
	g.awaitWithdrawn(t, id)
	if v.Mode != conversation.Restricted {
		t.Errorf("after the restart: %s", v.Mode)
	}
}
