package hookgate

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// memoryVersion is the state file's format version.
const memoryVersion = 1

// maxPending bounds the calls a session remembers between a pre-tool and
// a post-tool event: a call the user declined never gets its post-tool
// event, so the oldest are dropped past this.
const maxPending = 128

// memory is one session's state file: the reducer's snapshot and what the
// front-end needs between two hook processes.
type memory struct {
	V     int    `json:"v"`
	Agent string `json:"agent"`
	// Session is the reducer's snapshot (session.State.Snapshot), stored
	// after the header line.
	Session []byte `json:"-"`
	// Calls are the allowed calls awaiting their post-tool event, in the
	// order they were allowed.
	Calls []pending `json:"calls,omitempty"`
	// Approvals are auditd approval ids this session was given, by the
	// call they were requested for (callKey): a retried call presents its
	// approval, and consumes it once approved (DESIGN §11).
	Approvals map[string]string `json:"approvals,omitempty"`
	// Next numbers the calls of agents that give no call id.
	Next int `json:"next"`
}

// pending is an allowed call awaiting its result.
type pending struct {
	ID      string `json:"id"`       // the reducer's call id
	AgentID string `json:"agent_id"` // the agent's call id, "" when it gives none
	Key     string `json:"key"`      // callKey: tool and input, to match a post-tool event without an id
	Tool    string `json:"tool"`
	Role    role   `json:"role"`
	Path    string `json:"path,omitempty"`   // the file read or written, or the directory searched
	Action  string `json:"action,omitempty"` // read | write | destructive
	// Governed: auditd's policy was asked (with --url); ApprovalID is the
	// approval it consumed, or the one the user was asked about.
	Governed   bool   `json:"governed,omitempty"`
	ApprovalID string `json:"approval_id,omitempty"`
	Raw        string `json:"raw,omitempty"` // the command or input, for the outcome event
}

// The file is the memory's header (JSON, one line) then the reducer's
// snapshot as it is: the snapshot is most of the file, and embedding it in
// the header's JSON would make every hook process scan it twice more.
func decodeMemory(data []byte) (*memory, error) {
	head, snap, ok := bytes.Cut(data, []byte("\n"))
	if !ok || len(snap) == 0 {
		return nil, fmt.Errorf("the state file has no session")
	}
	var m memory
	if err := json.Unmarshal(head, &m); err != nil {
		return nil, fmt.Errorf("the state file's header is not valid JSON: %v", err)
	}
	if m.V != memoryVersion {
		return nil, fmt.Errorf("the state file has format %d; this gate reads %d", m.V, memoryVersion)
	}
	if len(m.Calls) > maxPending {
		return nil, fmt.Errorf("the state file holds %d pending calls; the limit is %d", len(m.Calls), maxPending)
	}
	m.Session = snap
	return &m, nil
}

func (m *memory) encode() ([]byte, error) {
	head, err := json.Marshal(m)
	if err != nil {
		return nil, err
	}
	out := make([]byte, 0, len(head)+1+len(m.Session))
	out = append(out, head...)
	out = append(out, '\n')
	out = append(out, m.Session...)
	return out, nil
}

// take removes and returns the pending call a post-tool event reports: by
// the agent's call id, else the oldest with the same tool and input.
func (m *memory) take(agentID, key string) (pending, bool) {
	for i, c := range m.Calls {
		if (agentID != "" && c.AgentID == agentID) || (agentID == "" && c.Key == key) {
			m.Calls = append(m.Calls[:i], m.Calls[i+1:]...)
			return c, true
		}
	}
	return pending{}, false
}

// add remembers an allowed call, dropping the oldest past maxPending.
func (m *memory) add(c pending) (dropped []pending) {
	m.Calls = append(m.Calls, c)
	if n := len(m.Calls) - maxPending; n > 0 {
		dropped = append(dropped, m.Calls[:n]...)
		m.Calls = append(m.Calls[:0], m.Calls[n:]...)
	}
	return dropped
}
