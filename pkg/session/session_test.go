package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

// step is one event in and the summary of the effects it must give out
// (summary drops metric, receipt, nonce, state and stabilization effects;
// a test that cares about those looks at them itself).
type step struct {
	in   string
	want string
}

// summary renders the effects a scenario checks, in order.
func summary(effs []Effect) string {
	var parts []string
	for _, e := range effs {
		switch e.Type {
		case EfAllow:
			parts = append(parts, "allow "+e.CallID)
		case EfBlock:
			parts = append(parts, "block "+e.CallID+" "+e.Response.Error.Code)
		case EfReject:
			parts = append(parts, "reject "+e.Code)
		case EfForceFinal:
			parts = append(parts, "force_final "+e.Reason)
		case EfError:
			parts = append(parts, "error "+e.Code)
		case EfBlockFinal, EfAllowFinal, EfReplaceAnswer:
			parts = append(parts, e.Type)
		}
	}
	return strings.Join(parts, "; ")
}

// run feeds a scenario's events and checks each step's effects.
func run(t *testing.T, steps []step) *State {
	t.Helper()
	st := New(Options{ReceiptKey: testKey})
	for i, s := range steps {
		_, effs := Transition(st, Decode([]byte(s.in)))
		if got := summary(effs); got != s.want {
			t.Fatalf("step %d: %s\n got: %s\nwant: %s", i+1, s.in, got, s.want)
		}
	}
	return st
}

// start is a session with seed 000's tool shapes under generic names: a
// discovery tool, a read tool and a write tool for commands, a file editor
// that targets a host, and a read tool for metrics.
const start = `{"type":"session_start","schema_version":1,"session_id":"s1","workspace_root":"/w","tools":[
 {"name":"query","kind":"resolve"},
 {"name":"run_read","kind":"read","command_arg":"command"},
 {"name":"run_command","kind":"write","command_arg":"command"},
 {"name":"file_edit","kind":"write","target_args":["target_resource_id","target_host"]},
 {"name":"file_read","kind":"read","target_args":["target_resource_id","target_host"]},
 {"name":"alerts","kind":"read","action_kinds":{"resolve":"write","dismiss":"write"}}],
 "config":{"read":{"max_reads":12}}}`

func line(s string) string { return strings.Join(strings.Fields(s), " ") }

func callEv(id, name, args string) string {
	return fmt.Sprintf(`{"type":"tool_call","call_id":%q,"name":%q,"args":%s}`, id, name, args)
}

func ok(id string) string {
	return fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":"done"}`, id)
}

const discoverHost = `{"type":"tool_result","call_id":"q","ok":true,"resources":[{"kind":"node","provider_uid":"delly","name":"delly"}]}`

// resolved is a session that discovered host delly, so reads and writes on
// it pass strict resolution and the FSM is READING.
func resolvedSession() []step {
	return []step{
		{line(start), ""},
		{callEv("q", "query", `{}`), "allow q"},
		{discoverHost, ""},
	}
}

func TestSeed000Regressions(t *testing.T) {
	grep := `{"command":"grep -i error /var/log/syslog","target_host":"delly"}`
	for name, steps := range map[string][]step{
		// P-39 TestFSM_RegressionJellyfinLogsScenario: a read command via the
		// read tool keeps READING, any number of times; the same command via
		// the write tool enters VERIFYING and the next write is blocked.
		"JellyfinLogs": append(resolvedSession(),
			step{callEv("r1", "run_read", grep), "allow r1"}, step{ok("r1"), ""},
			step{callEv("r2", "run_read", grep), "allow r2"}, step{ok("r2"), ""},
			step{callEv("r3", "run_read", grep), "allow r3"}, step{ok("r3"), ""},
			step{callEv("w1", "run_command", grep), "allow w1"}, step{ok("w1"), ""},
			step{callEv("w2", "run_command", `{"command":"systemctl restart jellyfin","target_host":"delly"}`), "block w2 FSM_BLOCKED"},
		),
		// P-40 TestFSM_RegressionWriteReadWriteSequence.
		"write read write": append(resolvedSession(),
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "allow w1"}, step{ok("w1"), ""},
			step{callEv("r1", "file_read", `{"target_host":"delly"}`), "allow r1"}, step{ok("r1"), ""},
			step{callEv("w2", "file_edit", `{"target_host":"delly"}`), "allow w2"}, step{ok("w2"), ""},
		),
		// P-41 TestFSM_RegressionMultipleReadsAfterWrite.
		"multiple reads after write": append(resolvedSession(),
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "allow w1"}, step{ok("w1"), ""},
			step{callEv("r1", "file_read", `{"target_host":"delly"}`), "allow r1"}, step{ok("r1"), ""},
			step{callEv("r2", "file_read", `{"target_host":"delly"}`), "allow r2"}, step{ok("r2"), ""},
			step{callEv("r3", "file_read", `{"target_host":"delly"}`), "allow r3"}, step{ok("r3"), ""},
			step{`{"type":"final","text":"restarted and verified"}`, "allow_final"},
		),
		// P-29 TestRoutingMismatch_RegressionHomepageScenario: the user
		// mentions the child; an edit on its host is refused with the
		// child's id, and the retry with the child succeeds.
		"homepage routing": append(resolvedSession(),
			step{`{"type":"resolve","resource":{"kind":"lxc","provider_uid":"141","name":"homepage-docker","host_name":"delly"},"explicit":true}`, ""},
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "block w1 ROUTING_MISMATCH"},
			step{callEv("w2", "file_edit", `{"target_resource_id":"lxc:delly:141"}`), "allow w2"},
		),
		// P-27 TestRoutingValidation_BulkDiscoveryShouldNotPoisonRouting.
		"bulk discovery does not poison routing": append(resolvedSession(),
			step{callEv("q2", "query", `{"action":"search"}`), "allow q2"},
			step{`{"type":"tool_result","call_id":"q2","ok":true,"resources":[
				{"kind":"lxc","provider_uid":"141","name":"homepage-docker","host_name":"delly"},
				{"kind":"lxc","provider_uid":"142","name":"jellyfin","host_name":"delly"},
				{"kind":"vm","provider_uid":"203","name":"win","host_name":"delly"}]}`, ""},
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "allow w1"},
		),
		// P-28 TestRoutingValidation_ExplicitGetShouldMarkAccess.
		"explicit get marks access": append(resolvedSession(),
			step{callEv("q2", "query", `{"action":"get"}`), "allow q2"},
			step{`{"type":"tool_result","call_id":"q2","ok":true,"resources":[
				{"kind":"lxc","provider_uid":"141","name":"homepage-docker","host_name":"delly"}]}`, ""},
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "block w1 ROUTING_MISMATCH"},
		),
		// P-30/P-02: nothing discovered yet: a write is refused by the FSM,
		// a read of a named target by strict resolution.
		"discovery before action": {
			{line(start), ""},
			{callEv("w1", "file_edit", `{"target_host":"delly"}`), "block w1 FSM_BLOCKED"},
			{callEv("r1", "file_read", `{"target_host":"delly"}`), "block r1 STRICT_RESOLUTION"},
			{callEv("q", "query", `{}`), "allow q"},
			{discoverHost, ""},
			{callEv("w2", "file_edit", `{"target_host":"pve2"}`), "block w2 STRICT_RESOLUTION"},
			{callEv("r2", "file_read", `{"target_host":"pve2"}`), "allow r2"},
		},
		// P-36: no final answer while VERIFYING, then the read clears it.
		"gate 2": append(resolvedSession(),
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "allow w1"}, step{ok("w1"), ""},
			step{`{"type":"final","text":"done"}`, "block_final"},
			step{callEv("r1", "file_read", `{"target_host":"delly"}`), "allow r1"}, step{ok("r1"), ""},
			step{`{"type":"final","text":"done"}`, "allow_final"},
		),
		// P-33: action-dependent kinds.
		"alerts resolve is a write": append(resolvedSession(),
			step{callEv("a1", "alerts", `{"action":"list"}`), "allow a1"}, step{ok("a1"), ""},
			step{callEv("a2", "alerts", `{"action":"resolve"}`), "allow a2"}, step{ok("a2"), ""},
			step{callEv("a3", "alerts", `{"action":"dismiss"}`), "block a3 FSM_BLOCKED"},
		),
		// P-34: an unknown tool is a write.
		"unknown tool is a write": {
			{line(start), ""},
			{callEv("x", "mystery", `{}`), "block x FSM_BLOCKED"},
		},
		// P-08: an answer that claims results without a tool call.
		"phantom": {
			{line(start), ""},
			{`{"type":"final","text":"The CPU usage is 93% on delly."}`, "replace_answer"},
			{`{"type":"final","text":"I have not checked anything yet."}`, "allow_final"},
		},
		// P-31: a failed tool causes no transition.
		"failed write stays READING": append(resolvedSession(),
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "allow w1"},
			step{`{"type":"tool_result","call_id":"w1","ok":false,"error":"permission denied"}`, ""},
			step{`{"type":"final","text":"it failed"}`, "allow_final"},
		),
		// P-17: clear(keep_pinned) keeps a pinned resource and the FSM's
		// progress with it; clear without it resets both.
		"clear keeps what is pinned": append(resolvedSession(),
			step{`{"type":"resolve","resource":{"kind":"lxc","provider_uid":"141","name":"homepage-docker","host_name":"delly"},"pin":true}`, ""},
			step{`{"type":"clear","keep_pinned":true}`, ""},
			step{callEv("w1", "file_edit", `{"target_resource_id":"lxc:delly:141"}`), "allow w1"},
			step{callEv("w2", "file_edit", `{"target_host":"delly"}`), "block w2 STRICT_RESOLUTION"},
			step{`{"type":"clear","keep_pinned":false}`, ""},
			step{callEv("w3", "file_edit", `{"target_resource_id":"lxc:delly:141"}`), "block w3 FSM_BLOCKED"},
		),
		// P-17: clear resets the FSM with the context.
		"coherent reset": append(resolvedSession(),
			step{`{"type":"clear","keep_pinned":false}`, ""},
			step{callEv("w1", "file_edit", `{"target_host":"delly"}`), "block w1 FSM_BLOCKED"},
		),
	} {
		t.Run(name, func(t *testing.T) { run(t, steps) })
	}
}

// Blocks never wear down (seed 000 §10): the tenth blocked write is still
// blocked.
func TestBlocksNeverWearDown(t *testing.T) {
	steps := append(resolvedSession(),
		step{callEv("w", "file_edit", `{"target_host":"delly"}`), "allow w"}, step{ok("w"), ""})
	for i := 0; i < 10; i++ {
		id := fmt.Sprintf("b%d", i)
		steps = append(steps, step{callEv(id, "file_edit", `{"target_host":"delly"}`), "block " + id + " FSM_BLOCKED"})
	}
	run(t, steps)
}

// The FSM_BLOCKED envelope is seed 000's, with the hint ending the message.
func TestBlockEnvelope(t *testing.T) {
	st := New(Options{ReceiptKey: testKey})
	Transition(st, Decode([]byte(line(start))))
	_, effs := Transition(st, Decode([]byte(callEv("w", "file_edit", `{}`))))
	var blk *Effect
	for i := range effs {
		if effs[i].Type == EfBlock {
			blk = &effs[i]
		}
	}
	if blk == nil {
		t.Fatalf("no block: %+v", effs)
	}
	e := blk.Response.Error
	if blk.Response.OK || !e.Blocked || e.Details["auto_recoverable"] != true || e.Details["recovery_hint"] == "" ||
		!strings.HasSuffix(e.Message, "Use a discovery or read tool first, then retry.") {
		t.Errorf("envelope: %+v", e)
	}
}

// The metric effects of a block: seed 000 §9, at the point of the block.
func TestBlockMetrics(t *testing.T) {
	st := New(Options{ReceiptKey: testKey})
	Transition(st, Decode([]byte(line(start))))
	_, effs := Transition(st, Decode([]byte(callEv("w", "file edit", `{}`))))
	var got []string
	for _, e := range effs {
		if e.Type == EfMetric {
			b, _ := json.Marshal(e.Labels)
			got = append(got, e.Name+string(b))
		}
	}
	want := []string{
		`govkit_session_fsm_tool_block_total{"kind":"write","state":"RESOLVING","tool":"file_edit"}`,
		`govkit_session_auto_recovery_attempt_total{"error_code":"FSM_BLOCKED","tool":"file_edit"}`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("metrics:\n%s\nwant:\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestSanitizeLabel(t *testing.T) {
	for in, want := range map[string]string{
		"": "unknown", "  ": "unknown", "file edit": "file_edit", "gpt-4o": "gpt-4o",
		strings.Repeat("x", 100): strings.Repeat("x", maxLabel),
	} {
		if got := sanitizeLabel(in); got != want {
			t.Errorf("sanitizeLabel(%q) = %q, want %q", in, got, want)
		}
	}
}

// Invalid lines get an error effect and change nothing (DESIGN §13).
func TestInvalidEvents(t *testing.T) {
	run(t, []step{
		{callEv("w", "file_edit", `{}`), "error SESSION_NOT_STARTED"},
		{`{"type":"session_start","schema_version":2}`, "error INVALID_FIELD"},
		{line(start), ""},
		{line(start), "error SESSION_ALREADY_STARTED"},
		{`not json`, "error INVALID_JSON"},
		{`{"type":"tool_call","call_id":"a","name":"query","colour":"red"}`, "error UNKNOWN_FIELD"},
		{`{"type":"tool_call","call_id":"a","name":"query","text":"hi"}`, "error UNKNOWN_FIELD"},
		{`{"type":"dance"}`, "error UNKNOWN_EVENT"},
		{`{"type":"user_message"}`, "error UNSUPPORTED_EVENT"},
		{`{"type":"tool_result","call_id":"nope","ok":true}`, "error UNKNOWN_CALL_ID"},
		{`{"type":"tool_call","call_id":"a","name":"query","args":[]}`, "error INVALID_FIELD"},
		{`{"type":"tool_call","call_id":"a","name":"query"} {}`, "error INVALID_JSON"},
		{`{"type":"tick","now":"yesterday"}`, "error INVALID_FIELD"},
		{callEv("q", "query", `{}`), "allow q"},
		{callEv("q", "query", `{}`), "error DUPLICATE_CALL_ID"},
	})
}

func TestSessionKey(t *testing.T) {
	st := New(Options{ReceiptKey: testKey})
	_, effs := Transition(st, Decode([]byte(`{"type":"session_start","schema_version":1,"session_id":"abc","workspace_realpath":"/home/u/proj","connection_id":"client-chosen"}`)))
	if effs[0].Type != EfState {
		t.Fatalf("first effect %s", effs[0].Type)
	}
	v := effs[0].State
	// sha1("/home/u/proj")[:12]
	if !strings.HasPrefix(v.SessionKey, "ws:") || !strings.HasSuffix(v.SessionKey, ":sid:abc") || len(v.SessionKey) != len("ws:")+12+len(":sid:abc") {
		t.Errorf("session key %q", v.SessionKey)
	}
	if strings.Contains(v.SessionKey, "client-chosen") || v.ConnectionID == "client-chosen" {
		t.Errorf("a client's connection id entered the key: %+v", v)
	}
	st2 := New(Options{})
	_, effs = Transition(st2, Decode([]byte(`{"type":"session_start","schema_version":1,"workspace_realpath":"/home/u/proj","server_connection_id":"c-1"}`)))
	if k := effs[0].State.SessionKey; !strings.HasSuffix(k, ":conn:c-1") || k[:15] != v.SessionKey[:15] {
		t.Errorf("fallback key %q (other %q)", k, v.SessionKey)
	}
	st3 := New(Options{})
	_, effs = Transition(st3, Decode([]byte(`{"type":"session_start","schema_version":1,"config":{"strict_session_id":true}}`)))
	if summary(effs) != "error SESSION_ID_REQUIRED" {
		t.Errorf("strict session id: %s", summary(effs))
	}
}
