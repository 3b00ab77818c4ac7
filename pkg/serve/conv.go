package serve

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/conversation"
)

// stored is a conversation's snapshot in the store: the machine as JSON
// and the session gates' own snapshot.
type stored struct {
	Machine *conversation.Conversation `json:"machine"`
	Gates   []byte                     `json:"gates"`
}

// gateTools are the executor's tools as the session gates see them:
// bash's commands are classified (a read-only command is a read), patch
// acts on its path (DESIGN §13).
var gateTools = []session.ToolDecl{
	{Name: "bash", Kind: "write", CommandArg: "command"},
	{Name: "read_file", Kind: "read"},
	{Name: "search", Kind: "search"},
	{Name: "patch", Kind: "write", TargetArgs: []string{"path"}},
}

// newConversation starts the machine and its gates.
func (s *Server) newConversation(cfg conversation.Config) (*session.Conversation, []conversation.Effect, error) {
	cfg.ContextWindows = s.o.ContextWindows
	if cfg.At == "" {
		cfg.At = s.at()
	}
	m, effs := conversation.New(cfg)
	gates := session.New(s.o.Session)
	seed := make([]byte, 32)
	if _, err := rand.Read(seed); err != nil {
		return nil, nil, err
	}
	off, yes := false, true
	// Strict resolution needs resources that the tools' results register;
	// gate serve's tools do not register them yet, so it would refuse
	// every patch. The workflow FSM, receipts and classification apply.
	// The read guard warns; search → ref → read is not enforced, since
	// read_file also takes plain paths.
	_, out := session.Transition(gates, session.Event{Type: session.EvSessionStart, SchemaVersion: session.SchemaVersion,
		At: cfg.At, SessionID: m.ID, WorkspaceRoot: m.Cwd, WorkspaceRealpath: m.Cwd, Seed: hex.EncodeToString(seed),
		Tools: gateTools, Config: &session.Config{StrictResolution: &off, ClassifyCommands: yes, Provider: "gate-serve", AgentID: agentLabel,
			Read: &session.ReadConfig{Mode: "off", Budget: "warn"}}})
	for _, e := range out {
		if e.Type == session.EfError {
			return nil, nil, fmt.Errorf("starting the session gates: %s: %s", e.Code, e.Detail)
		}
	}
	return &session.Conversation{Machine: m, Gates: gates}, effs, nil
}

func (s *Server) snapshot(c *session.Conversation) ([]byte, error) {
	g, err := c.Gates.Snapshot()
	if err != nil {
		return nil, err
	}
	return json.Marshal(stored{Machine: c.Machine, Gates: g})
}

func (s *Server) restoreConversation(data []byte) (*session.Conversation, error) {
	var st stored
	if err := json.Unmarshal(data, &st); err != nil {
		return nil, err
	}
	if st.Machine == nil {
		return nil, fmt.Errorf("no conversation in the snapshot")
	}
	g, err := session.Restore(s.o.Session, st.Gates)
	if err != nil {
		return nil, fmt.Errorf("the session gates: %w", err)
	}
	return &session.Conversation{Machine: st.Machine, Gates: g}, nil
}
