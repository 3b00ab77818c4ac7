package session

import (
	"encoding/json"

	"github.com/govkit/govkit/pkg/session/aggregate"
	"github.com/govkit/govkit/pkg/session/readguard"
	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/session/response"
)

// Effect types (out), DESIGN §13.
const (
	EfAllow         = "allow"
	EfBlock         = "block"
	EfAllowFinal    = "allow_final"
	EfBlockFinal    = "block_final"
	EfReplaceAnswer = "replace_answer"
	EfStabilization = "stabilization"
	EfReceipt       = "receipt"
	EfReject        = "reject"
	EfNonce         = "nonce"
	EfForceFinal    = "force_final"
	EfState         = "state"
	EfMetric        = "metric"
	EfError         = "error"
)

// Effect is one line out: what the driver must do or know. Like Event, one
// struct carries every type; empty fields are omitted.
type Effect struct {
	Type string `json:"type"`
	Seq  int64  `json:"seq"`

	CallID   string                 `json:"call_id,omitempty"`
	Name     string                 `json:"name,omitempty"` // allow (the tool), metric (the counter)
	Kind     string                 `json:"kind,omitempty"` // allow: resolve|read|write|search
	Args     map[string]any         `json:"args,omitempty"` // allow of an envelope call: what to run
	Warnings []string               `json:"warnings,omitempty"`
	Response *response.ToolResponse `json:"response,omitempty"`
	Code     string                 `json:"code,omitempty"`
	Bucket   string                 `json:"bucket,omitempty"`
	StopHook string                 `json:"stop_hook,omitempty"`
	Detail   string                 `json:"detail,omitempty"`
	Inject   string                 `json:"inject,omitempty"`
	Text     string                 `json:"text,omitempty"`
	Reason   string                 `json:"reason,omitempty"`
	Meta     *StabilizationMeta     `json:"meta,omitempty"`
	Receipt  *receipt.Receipt       `json:"receipt,omitempty"`
	Labels   map[string]string      `json:"labels,omitempty"`
	TurnID   string                 `json:"turn_id,omitempty"`
	Nonce    string                 `json:"nonce,omitempty"`
	State    *StateView             `json:"state,omitempty"`
}

// StabilizationMeta is seed 004's meta.stabilization, with the aggregated
// read output when the result carried text.
type StabilizationMeta struct {
	readguard.Meta
	Aggregated *aggregate.Output `json:"aggregated,omitempty"`
}

// MarshalJSON writes the guard's meta and the aggregated output in one
// object: readguard.Meta's own MarshalJSON would otherwise be promoted and
// drop Aggregated.
func (m StabilizationMeta) MarshalJSON() ([]byte, error) {
	b, err := json.Marshal(m.Meta)
	if err != nil || m.Aggregated == nil {
		return b, err
	}
	agg, err := json.Marshal(m.Aggregated)
	if err != nil {
		return nil, err
	}
	b = b[:len(b)-1]
	if len(b) > 1 {
		b = append(b, ',')
	}
	b = append(b, `"aggregated":`...)
	b = append(b, agg...)
	return append(b, '}'), nil
}

// StateView is what the state effect reports: enough for a runtime to show
// where the session stands and to key it, never the resolved context's
// contents (seed 000 Invariant 5: the context is not persisted).
type StateView struct {
	SchemaVersion      int    `json:"schema_version"`
	SessionKey         string `json:"session_key"`
	SessionID          string `json:"session_id,omitempty"`
	ConnectionID       string `json:"connection_id"`
	ClientConnectionID string `json:"client_connection_id,omitempty"`
	FSMState           string `json:"fsm_state"`
	Resources          int    `json:"resources"`
	TurnID             string `json:"turn_id"`
	Protocol           string `json:"protocol"`
	StrictResolution   bool   `json:"strict_resolution"`
}
