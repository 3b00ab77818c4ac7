package workflow

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/response"
)

// TestGate1 is P-30 and P-35: which kinds run in which state, and the
// FSM_BLOCKED envelope of a refusal.
func TestGate1(t *testing.T) {
	allowed := map[State][]Kind{
		Resolving: {KindResolve, KindRead, KindSearch},
		Reading:   {KindResolve, KindRead, KindSearch, KindWrite, 0, 9}, // unknown kinds are writes
		Verifying: {KindResolve, KindRead, KindSearch},
	}
	for _, state := range []State{Resolving, Reading, Verifying} {
		for _, kind := range []Kind{0, KindResolve, KindRead, KindWrite, KindSearch, 9} {
			f := FSM{State: state, LastWriteTool: "pulse_control"}
			r := f.CanExecuteTool(kind, "tool_x")
			want := contains(allowed[state], kind)
			if (r == nil) != want {
				t.Errorf("%v: CanExecuteTool(%v) blocked=%v, want allowed=%v", state, kind, r != nil, want)
				continue
			}
			if f.State != state {
				t.Errorf("%v: CanExecuteTool changed the state to %v", state, f.State)
			}
			if r == nil {
				continue
			}
			e := r.Error
			if r.OK || e == nil || e.Code != response.FSMBlocked || !e.Blocked {
				t.Fatalf("%v %v: envelope %+v", state, kind, r)
			}
			if !strings.HasSuffix(e.Message, "Use a discovery or read tool first, then retry.") {
				t.Errorf("%v: message %q lacks the seed's tail", state, e.Message)
			}
			if verifying := strings.Contains(e.Message, "Must verify the previous write operation"); verifying != (state == Verifying) {
				t.Errorf("%v: message %q: verify reason present=%v", state, e.Message, verifying)
			}
			d := e.Details
			if d["state"] != state.String() || d["tool"] != "tool_x" || d["tool_kind"] != kind.String() ||
				d["auto_recoverable"] != true || !strings.Contains(d["recovery_hint"].(string), "tool_x") {
				t.Errorf("%v %v: details %v", state, kind, d)
			}
		}
	}
}

func contains(ks []Kind, k Kind) bool {
	for _, x := range ks {
		if x == k {
			return true
		}
	}
	return false
}

func TestGate1Envelope(t *testing.T) {
	for _, tc := range []struct {
		f    FSM
		want string
	}{
		{FSM{State: Verifying, LastWriteTool: "pulse_control"},
			`{"ok":false,"error":{"code":"FSM_BLOCKED","message":"FSM blocked write tool 'pulse_docker' in state VERIFYING: Must verify the previous write operation ('pulse_control') before another write. Use a discovery or read tool first, then retry.","blocked":true,"details":{"auto_recoverable":true,"last_write_tool":"pulse_control","recovery_hint":"Call a read or resolve tool to check the result of pulse_control, then retry pulse_docker.","state":"VERIFYING","tool":"pulse_docker","tool_kind":"write"}}}`},
		{NewFSM(),
			`{"ok":false,"error":{"code":"FSM_BLOCKED","message":"FSM blocked write tool 'pulse_docker' in state RESOLVING: no resource has been discovered or read in this session yet. Use a discovery or read tool first, then retry.","blocked":true,"details":{"auto_recoverable":true,"recovery_hint":"Call a resolve or read tool to discover the target resource, then retry pulse_docker.","state":"RESOLVING","tool":"pulse_docker","tool_kind":"write"}}}`},
	} {
		b, err := json.Marshal(tc.f.CanExecuteTool(KindWrite, "pulse_docker"))
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("\n got %s\nwant %s", b, tc.want)
		}
	}
}

func TestGate1ClipsLongNames(t *testing.T) {
	f := NewFSM()
	long := strings.Repeat("é", 200)
	r := f.CanExecuteTool(KindWrite, long)
	tool := r.Error.Details["tool"].(string)
	if len(tool) > maxNameInBlock+len("…") || !strings.HasSuffix(tool, "…") || strings.Contains(tool, "\uFFFD") {
		t.Errorf("clipped name %q (%d bytes)", tool, len(tool))
	}
	if strings.Contains(r.Error.Message, long) {
		t.Error("the whole name is echoed")
	}
}

// TestBlocksNeverWearDown: the tenth blocked write in VERIFYING is refused
// like the first (issue 16; DESIGN §13), and so is the tenth final answer.
func TestBlocksNeverWearDown(t *testing.T) {
	f := NewFSM()
	f.OnToolSuccess(KindResolve, "pulse_query")
	f.OnToolSuccess(KindWrite, "pulse_control")
	for i := 1; i <= 10; i++ {
		if f.CanExecuteTool(KindWrite, "pulse_control") == nil {
			t.Fatalf("write %d allowed in VERIFYING", i)
		}
		if _, blocked := f.CanFinalAnswer(); !blocked {
			t.Fatalf("final answer %d allowed in VERIFYING", i)
		}
		if f.State != Verifying {
			t.Fatalf("after block %d: %v", i, f.State)
		}
	}
	r := NewFSM()
	for i := 1; i <= 10; i++ {
		if r.CanExecuteTool(KindWrite, "pulse_control") == nil {
			t.Fatalf("write %d allowed in RESOLVING", i)
		}
	}
}

// TestGate2 is P-03 and P-36: no final answer in VERIFYING, with the
// seed's factual injection naming the write.
func TestGate2(t *testing.T) {
	for _, tc := range []struct {
		f       FSM
		inject  string
		blocked bool
	}{
		{NewFSM(), "", false},
		{FSM{State: Reading}, "", false},
		{FSM{State: Verifying, LastWriteTool: "pulse_control"}, "Verification required: perform a read or status check on pulse_control before responding.", true},
		{FSM{State: Verifying}, "Verification required: perform a read or status check on the last write before responding.", true},
		{FSM{State: Verifying, ReadAfterWrite: true, LastWriteTool: "pulse_control"}, "", false},
	} {
		inject, blocked := tc.f.CanFinalAnswer()
		if inject != tc.inject || blocked != tc.blocked {
			t.Errorf("%+v: CanFinalAnswer = %q, %v; want %q, %v", tc.f, inject, blocked, tc.inject, tc.blocked)
		}
	}
}

// TestTransitions is P-31 and P-37: the state after a successful call of
// each kind from each state, verification completing at once.
func TestTransitions(t *testing.T) {
	for _, tc := range []struct {
		from State
		kind Kind
		to   State
	}{
		{Resolving, KindResolve, Reading},
		{Resolving, KindRead, Reading},
		{Resolving, KindSearch, Reading},
		{Resolving, KindWrite, Verifying}, // only if the caller ran a blocked write anyway
		{Reading, KindResolve, Reading},
		{Reading, KindRead, Reading},
		{Reading, KindSearch, Reading},
		{Reading, KindWrite, Verifying},
		{Reading, 0, Verifying}, // a kind the FSM does not know is a write
		{Verifying, KindResolve, Reading},
		{Verifying, KindRead, Reading},
		{Verifying, KindSearch, Reading},
		{Verifying, KindWrite, Verifying},
	} {
		f := FSM{State: tc.from, LastWriteTool: "w0"}
		f.OnToolSuccess(tc.kind, "t")
		if f.State != tc.to {
			t.Errorf("%v --%v--> %v, want %v", tc.from, tc.kind, f.State, tc.to)
		}
		if f.ReadAfterWrite {
			t.Errorf("%v --%v-->: ReadAfterWrite left set", tc.from, tc.kind)
		}
		if tc.to == Verifying && f.LastWriteTool != "t" && tc.kind != KindResolve {
			t.Errorf("%v --%v-->: LastWriteTool %q", tc.from, tc.kind, f.LastWriteTool)
		}
	}
}

// TestCompleteVerification is P-37 and P-38 (App. A Failure Modes 2, 4).
func TestCompleteVerification(t *testing.T) {
	for _, tc := range []struct {
		f    FSM
		want FSM
	}{
		{FSM{State: Verifying, ReadAfterWrite: true, LastWriteTool: "w"}, FSM{State: Reading}},
		{FSM{State: Verifying, LastWriteTool: "w"}, FSM{State: Verifying, LastWriteTool: "w"}}, // no read yet
		{FSM{State: Reading}, FSM{State: Reading}},
		{FSM{State: Resolving}, FSM{State: Resolving}},
	} {
		f := tc.f
		f.CompleteVerification()
		if f.State != tc.want.State || f.ReadAfterWrite != tc.want.ReadAfterWrite || f.LastWriteTool != tc.want.LastWriteTool {
			t.Errorf("CompleteVerification(%+v) = %+v, want %+v", tc.f, f, tc.want)
		}
	}
	// The second write needs its own read (Failure Mode 4).
	f := FSM{State: Reading}
	f.OnToolSuccess(KindWrite, "w1")
	f.OnToolSuccess(KindRead, "r")
	f.OnToolSuccess(KindWrite, "w2")
	if inject, blocked := f.CanFinalAnswer(); !blocked || !strings.Contains(inject, " w2 ") {
		t.Errorf("second write verified by the first read: %q, %v", inject, blocked)
	}
}

// TestReset is P-17's FSM half (seed 000 §5 Coherent Reset).
func TestReset(t *testing.T) {
	for _, from := range []FSM{
		NewFSM(), {State: Reading}, {State: Verifying, LastWriteTool: "w"},
		{State: Verifying, ReadAfterWrite: true, LastWriteTool: "w"},
	} {
		f := from
		f.Reset()
		if f.State != Resolving || f.ReadAfterWrite || f.LastWriteTool != "" {
			t.Errorf("Reset(%+v) = %+v", from, f)
		}
		f = from
		f.ResetKeepProgress()
		if f.State != Reading || f.ReadAfterWrite || f.LastWriteTool != "" {
			t.Errorf("ResetKeepProgress(%+v) = %+v", from, f)
		}
		if f.CanExecuteTool(KindWrite, "w") != nil {
			t.Errorf("after ResetKeepProgress(%+v) a write is blocked", from)
		}
	}
}

// step is one call of a scenario: run through Gate 1 and, when allowed,
// reported as a success (ok) or failure, as the reducer does (seed 000 §8).
type step struct {
	tool    string
	args    map[string]any
	failed  bool  // the tool ran and failed
	final   bool  // a final answer instead of a tool call
	blocked bool  // want Gate 1 (or Gate 2 for final) to refuse
	state   State // want after the step
}

func runScenario(t *testing.T, steps []step) {
	t.Helper()
	tab := seedTable(t)
	f := NewFSM()
	for i, s := range steps {
		var blocked bool
		if s.final {
			_, blocked = f.CanFinalAnswer()
		} else {
			kind, _ := tab.Classify(s.tool, s.args)
			blocked = f.CanExecuteTool(kind, s.tool) != nil
			if !blocked && !s.failed {
				f.OnToolSuccess(kind, s.tool)
			}
		}
		if blocked != s.blocked || f.State != s.state {
			t.Fatalf("step %d (%s %v): blocked=%v state=%v; want blocked=%v state=%v", i+1, s.tool, s.args, blocked, f.State, s.blocked, s.state)
		}
	}
}

var grep = map[string]any{"action": "exec", "command": "grep -i error /var/log/*.log", "target_host": "jellyfin"}

// The seed's regression tests (App. A Failure Modes 1, 2; P-39..P-41),
// at the FSM level over the seed's tool table.
func TestFSM_RegressionJellyfinLogsScenario(t *testing.T) {
	t.Run("read tool stays READING", func(t *testing.T) {
		steps := []step{{tool: "pulse_query", args: map[string]any{"action": "search", "query": "jellyfin"}, state: Reading}}
		for i := 0; i < 20; i++ {
			steps = append(steps, step{tool: "pulse_read", args: grep, state: Reading})
		}
		steps = append(steps, step{final: true, state: Reading})
		runScenario(t, steps)
	})
	t.Run("write tool enters VERIFYING", func(t *testing.T) { // P-32: kind, not command content
		runScenario(t, []step{
			{tool: "pulse_query", args: map[string]any{"action": "search", "query": "jellyfin"}, state: Reading},
			{tool: "pulse_control", args: grep, state: Verifying},
			{tool: "pulse_control", args: grep, blocked: true, state: Verifying},
			{final: true, blocked: true, state: Verifying},
			{tool: "pulse_read", args: grep, state: Reading},
			{final: true, state: Reading},
		})
	})
}

func TestFSM_RegressionWriteReadWriteSequence(t *testing.T) {
	runScenario(t, []step{
		{tool: "pulse_query", state: Reading},
		{tool: "pulse_control", args: map[string]any{"action": "restart"}, state: Verifying},
		{tool: "pulse_read", args: grep, state: Reading},
		{tool: "pulse_control", args: map[string]any{"action": "restart"}, state: Verifying},
		{tool: "pulse_metrics", state: Reading},
		{tool: "pulse_file_edit", args: map[string]any{"action": "write"}, state: Verifying},
		{tool: "pulse_file_edit", args: map[string]any{"action": "read"}, state: Reading},
		{final: true, state: Reading},
	})
}

func TestFSM_RegressionMultipleReadsAfterWrite(t *testing.T) {
	runScenario(t, []step{
		{tool: "pulse_discovery", state: Reading},
		{tool: "pulse_docker", args: map[string]any{"action": "control"}, state: Verifying},
		{tool: "pulse_read", args: grep, state: Reading},
		{tool: "pulse_read", args: grep, state: Reading},
		{tool: "pulse_read", args: grep, state: Reading},
		{final: true, state: Reading},
	})
}

// P-31: failed and blocked calls move nothing; P-34: an unknown tool is
// gated as a write.
func TestFSM_FailuresAndUnknownTools(t *testing.T) {
	runScenario(t, []step{
		{tool: "pulse_new_tool", blocked: true, state: Resolving},
		{tool: "pulse_query", failed: true, state: Resolving},
		{tool: "pulse_alerts", args: map[string]any{"action": "dismiss"}, blocked: true, state: Resolving},
		{tool: "pulse_alerts", args: map[string]any{"action": "list"}, state: Reading},
		{tool: "pulse_new_tool", state: Verifying},
		{tool: "pulse_read", failed: true, state: Verifying},
		{final: true, blocked: true, state: Verifying},
		{tool: "pulse_alerts", args: map[string]any{"action": "resolve"}, blocked: true, state: Verifying},
		{tool: "code_search", state: Reading},
		{tool: "pulse_alerts", args: map[string]any{"action": "resolve"}, state: Verifying},
		{tool: "pulse_query", state: Reading},
	})
}

// A copy of an FSM is independent of the original, recoveries included:
// the reducer may keep the state from before a transition.
func TestFSMCopyIsIndependent(t *testing.T) {
	a := NewFSM()
	a.TrackPendingRecovery(response.FSMBlocked, "w", t0)
	b := a
	b.TrackPendingRecovery(response.FSMBlocked, "w", t0)
	b.TrackPendingRecovery(response.StrictResolution, "x", t0)
	b.OnToolSuccess(KindRead, "r")
	if a.State != Resolving {
		t.Errorf("original state %v", a.State)
	}
	if got := a.PendingRecoveries(t0); len(got) != 1 || got[0].Attempts != 1 {
		t.Errorf("original recoveries changed: %+v", got)
	}
	if b.CheckRecoverySuccess("w", t0) == nil || a.CheckRecoverySuccess("w", t0) == nil {
		t.Error("each copy resolves its own recovery")
	}
}

func TestFSMJSON(t *testing.T) {
	f := FSM{State: Verifying, LastWriteTool: "pulse_control"}
	b, err := json.Marshal(f)
	if err != nil || string(b) != `{"state":"VERIFYING","read_after_write":false,"last_write_tool":"pulse_control"}` {
		t.Fatalf("%s, %v", b, err)
	}
	var back FSM
	if err := json.Unmarshal(b, &back); err != nil || back.State != Verifying || back.LastWriteTool != "pulse_control" {
		t.Errorf("round trip: %+v, %v", back, err)
	}
	if err := json.Unmarshal([]byte(`{"state":"DONE"}`), &back); err == nil {
		t.Error("unknown state accepted")
	}
}
