package conversation

import "encoding/json"

// The machine's own tools: it handles them itself, never the executor.
const (
	ToolSpawnAgents        = "spawn_agents"
	ToolSubmitResult       = "submit_result"
	ToolRequestModeUpgrade = "request_mode_upgrade"
)

// ToolSpec describes one tool to the LLM. Kind is the session reducer's
// read|write|search|resolve|control.
type ToolSpec struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Kind        string          `json:"kind"`
}

// Tools are the machine's tools, identical in every mode (B-17b).
func Tools() []ToolSpec {
	return []ToolSpec{
		{
			Name: ToolRequestModeUpgrade,
			Description: "Ask the user to switch this conversation from restricted mode (read-only files, no network, no patch) " +
				"to unrestricted mode. Give the reason you need write access. The conversation pauses until the user decides.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"reason":{"type":"string","description":"why write access is needed"}},"required":["reason"],"additionalProperties":false}`),
			Kind:       "control",
		},
		{
			Name: ToolSpawnAgents,
			Description: "Run sub-agents in parallel, one per task, each in its own conversation in this working directory (restricted where available). " +
				"Returns every sub-agent's submitted result, or why it failed or timed out.",
			Parameters: json.RawMessage(`{"type":"object","properties":{"tasks":{"type":"array","minItems":1,"items":{"type":"object","properties":{"task":{"type":"string"}},"required":["task"]}}},"required":["tasks"],"additionalProperties":false}`),
			Kind:       "control",
		},
		{
			Name:        ToolSubmitResult,
			Description: "Finish this sub-agent's task and hand its result to the parent conversation. This is the only way a sub-agent finishes.",
			Parameters:  json.RawMessage(`{"type":"object","properties":{"result":{"type":"string"}},"required":["result"],"additionalProperties":false}`),
			Kind:        "control",
		},
	}
}

// machineTool reports whether the machine handles name itself.
func machineTool(name string) bool {
	return name == ToolSpawnAgents || name == ToolSubmitResult || name == ToolRequestModeUpgrade
}
