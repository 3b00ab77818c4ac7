package session

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session/receipt"
)

const envelopeStart = `{"type":"session_start","schema_version":1,"session_id":"g1","tools":[
 {"name":"read_file","kind":"read","args":{"path":{"type":"string","required":true}}}],
 "config":{"protocol":"envelope","agent_id":"writer"}}`

// envelopeSession drives a seed 002 session and remembers the turn's nonce
// and the receipts it was given, as a runtime would.
type envelopeSession struct {
	t        *testing.T
	st       *State
	nonce    string
	receipts []receipt.Receipt
}

func newEnvelopeSession(t *testing.T) *envelopeSession {
	s := &envelopeSession{t: t, st: New(Options{ReceiptKey: testKey})}
	s.send(line(envelopeStart))
	if s.nonce == "" {
		t.Fatal("session_start announced no nonce")
	}
	return s
}

func (s *envelopeSession) send(ev string) []Effect {
	s.t.Helper()
	_, effs := Transition(s.st, Decode([]byte(ev)))
	for _, e := range effs {
		switch e.Type {
		case EfNonce:
			s.nonce = e.Nonce
		case EfReceipt:
			s.receipts = append(s.receipts, *e.Receipt)
		}
	}
	return effs
}

func (s *envelopeSession) text(raw string) []Effect {
	s.t.Helper()
	b, _ := json.Marshal(raw)
	return s.send(`{"type":"llm_text","raw":` + string(b) + `}`)
}

func (s *envelopeSession) expect(effs []Effect, want string) {
	s.t.Helper()
	if got := summary(effs); got != want {
		s.t.Fatalf("got %q, want %q", got, want)
	}
}

func (s *envelopeSession) readCall(path string) string {
	return fmt.Sprintf(`{"tool":"read_file","args":{"path":%q},"nonce":%q}`, path, s.nonce)
}

// G-28: a JSON-only call is accepted on the first try, executes, mints a
// signed receipt, and that receipt id resolves in the Evidence line.
func TestEnvelopeEndToEnd(t *testing.T) {
	s := newEnvelopeSession(t)
	effs := s.text(s.readCall("Story/SCN-01.md"))
	s.expect(effs, "allow t1-c1")
	if a := effs[0]; a.Name != "read_file" || a.Args["path"] != "Story/SCN-01.md" {
		t.Fatalf("allow does not say what to run: %+v", a)
	}
	s.expect(s.send(`{"type":"tool_result","call_id":"t1-c1","ok":true,"data":"The door was locked.\nNobody came.\n"}`), "")
	if len(s.receipts) != 1 {
		t.Fatalf("receipts: %d", len(s.receipts))
	}
	r := s.receipts[0]
	if err := receipt.Verify(r, testKey); err != nil || r.ToolID != "read_file" || r.TurnID != "t1" || r.SessionID != "g1" || r.AgentID != "writer" {
		t.Fatalf("receipt %+v: %v", r, err)
	}
	s.expect(s.text(fmt.Sprintf(`{"action":"final","nonce":%q}`, s.nonce)), "force_final DECISION_FINAL")

	// Rejected answers keep the turn open.
	s.expect(s.text("The door was open.\nEvidence: \"The door was open.\" (Story/SCN-01.md:L1)"), "reject quote_not_found")
	s.expect(s.text("It was locked."), "reject evidence_invalid")
	s.expect(s.text("It was locked.\nEvidence: read_file ran (receipt rcpt_0000000000000000)"), "reject evidence_invalid")

	s.expect(s.text(fmt.Sprintf("The door was locked.\nEvidence: \"The door was locked.\" (Story/SCN-01.md:L1); tool: read_file (receipt %s)", r.ReceiptID)), "allow_final")
}

// DESIGN §13: seed 002 governs what a model writes as llm_text in any
// session, so a prose answer there needs its Evidence line even when the
// session's native tool calls do not.
func TestLLMTextAnswerNeedsEvidence(t *testing.T) {
	st := New(Options{ReceiptKey: testKey})
	Transition(st, Decode([]byte(line(start))))
	_, effs := Transition(st, Decode([]byte(`{"type":"llm_text","raw":"Nothing to do here."}`)))
	if got := summary(effs); got != "reject evidence_invalid" {
		t.Errorf("llm_text answer: %s", got)
	}
	_, effs = Transition(st, Decode([]byte(`{"type":"final","text":"Nothing to do here."}`)))
	if got := summary(effs); got != "allow_final" {
		t.Errorf("native final: %s", got)
	}
}

// Seed 002's acceptance tests 4–6 and the turn they end: nothing runs, and
// the next turn has a new nonce.
func TestEnvelopeRejections(t *testing.T) {
	s := newEnvelopeSession(t)
	first := s.nonce
	s.expect(s.text("Sure! "+s.readCall("a.md")), "reject tool_call_invalid_format")
	if s.nonce == first {
		t.Fatal("a rejected turn kept its nonce")
	}
	s.expect(s.text(`read_file({"path":"a.md"})`), "reject tool_call_invalid_format")
	stale := s.nonce
	s.expect(s.text(s.readCall("a.md")+s.readCall("b.md")), "reject tool_call_multiple")
	s.expect(s.text(fmt.Sprintf(`{"tool":"read_file","args":{"path":"a.md"},"nonce":%q}`, stale)), "reject tool_call_nonce_invalid")
	s.expect(s.text(fmt.Sprintf(`{"tool":"rm","args":{},"nonce":%q}`, s.nonce)), "reject tool_call_unknown_tool")
	s.expect(s.text(fmt.Sprintf(`{"tool":"read_file","args":{"path":3},"nonce":%q}`, s.nonce)), "reject tool_call_invalid_args")
	s.expect(s.text("<think>I should read it</think>"+s.readCall("a.md")), "allow t7-c1")
	for _, r := range s.receipts {
		if r.ToolID == "rm" && r.OK {
			t.Errorf("the unknown tool's receipt says ok: %+v", r)
		}
	}
}

// G-11, G-12: three tool steps per turn, then the final answer is forced
// and no further tool runs; output fed back is cut at 2000 bytes a step.
func TestEnvelopeToolBudget(t *testing.T) {
	s := newEnvelopeSession(t)
	big := strings.Repeat("x", 5000)
	for i := 1; i <= 3; i++ {
		raw := s.readCall(fmt.Sprintf("f%d.md", i))
		if i > 1 {
			raw = fmt.Sprintf(`{"action":"tool","tool":"read_file","args":{"path":"f%d.md"},"nonce":%q}`, i, s.nonce)
		}
		id := fmt.Sprintf("t1-c%d", i)
		s.expect(s.text(raw), "allow "+id)
		want := ""
		if i == 3 {
			want = "force_final MAX_TOOL_STEPS"
		}
		s.expect(s.send(fmt.Sprintf(`{"type":"tool_result","call_id":%q,"ok":true,"data":%q}`, id, big)), want)
	}
	s.expect(s.text(s.readCall("f4.md")), "reject tool_call_output_limit")
	for i, r := range s.receipts[:3] {
		if !r.Truncated || len(r.Excerpt) != 2000 || r.FullSize != 5000 {
			t.Errorf("receipt %d: truncated=%v excerpt=%d full=%d", i, r.Truncated, len(r.Excerpt), r.FullSize)
		}
	}
}
