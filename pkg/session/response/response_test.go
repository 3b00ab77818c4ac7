package response

import (
	"encoding/json"
	"testing"
)

func TestAutoRecoverable(t *testing.T) {
	// Seed 000 §3's table, row by row, plus ROUTING_MISMATCH.
	for code, want := range map[string]bool{
		StrictResolution: true, FSMBlocked: true, NotFound: false, ActionNotAllowed: false,
		PolicyBlocked: false, ApprovalRequired: true, InvalidInput: false, RoutingMismatch: true,
		"NO_SUCH_CODE": false,
	} {
		if got := AutoRecoverable(code); got != want {
			t.Errorf("AutoRecoverable(%s) = %v, want %v", code, got, want)
		}
	}
}

func TestEnvelopeShape(t *testing.T) {
	for _, tc := range []struct {
		name string
		resp ToolResponse
		want string
	}{
		{"success", Success(map[string]int{"n": 1}), `{"ok":true,"data":{"n":1}}`},
		{"blocked", Blocked(FSMBlocked, "m", map[string]any{"recovery_hint": "h"}),
			`{"ok":false,"error":{"code":"FSM_BLOCKED","message":"m","blocked":true,"details":{"auto_recoverable":true,"recovery_hint":"h"}}}`},
		{"blocked keeps the caller's auto_recoverable", Blocked(NotFound, "m", map[string]any{"auto_recoverable": true}),
			`{"ok":false,"error":{"code":"NOT_FOUND","message":"m","blocked":true,"details":{"auto_recoverable":true}}}`},
		{"failed", Failed(ExecutionFailed, "m", true, nil),
			`{"ok":false,"error":{"code":"EXECUTION_FAILED","message":"m","failed":true,"retryable":true,"details":{"auto_recoverable":true}}}`},
	} {
		b, err := json.Marshal(tc.resp)
		if err != nil {
			t.Fatal(err)
		}
		if string(b) != tc.want {
			t.Errorf("%s:\n got %s\nwant %s", tc.name, b, tc.want)
		}
	}
}
