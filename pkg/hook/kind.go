package hook

import "strconv"

// EventKind is which moment of an agent's loop a hook event reports: what
// `gate hook` turns into a session reducer event (issue 17, "Events").
type EventKind int

const (
	PreTool      EventKind = iota // a tool is about to run: the zero value, classify hook's only kind
	PostTool                      // the tool ran, or failed (Event.Failed)
	SessionStart                  // a session starts, resumes or is cleared
	SessionEnd                    // the session ends
	Stop                          // the agent wants to end its turn (Claude and Codex Stop, Gemini AfterAgent, Cursor stop, …)
	Prompt                        // a user prompt starts a turn (UserPromptSubmit, BeforeAgent, …)
)

var kindNames = [...]string{"pre_tool", "post_tool", "session_start", "session_end", "stop", "prompt"}

func (k EventKind) String() string {
	if k >= 0 && int(k) < len(kindNames) {
		return kindNames[k]
	}
	return "kind(" + strconv.Itoa(int(k)) + ")"
}

// stopNotes says, per agent, what its end-of-turn hook can do when the gate
// refuses a stop (seed 000 Gate 2: a write never checked must not end the
// turn). The sources are cited in each dialect file.
var stopNotes = map[string]struct {
	blocks bool
	note   string
}{
	"claude":  {true, `Stop answers {"decision":"block","reason":…} (and exit 2): Claude goes on with the reason as its next instruction; stop_hook_active is true on the stop that follows, and Claude Code ends the turn anyway after 8 blocks in a row`},
	"codex":   {true, `Stop answers {"decision":"block","reason":…} (and exit 2 with the reason on stderr): Codex continues the turn with the reason as a new prompt`},
	"gemini":  {true, `AfterAgent answers {"decision":"deny","reason":…} (and exit 2): Gemini CLI rejects the response and retries the turn with the reason as the prompt`},
	"cursor":  {true, `stop cannot refuse the stop itself: it answers {"followup_message":…}, which Cursor submits as the next user message, so the agent goes on; Cursor does this at most loop_limit times (5 by default) and its stop event does not carry the final message`},
	"cline":   {false, `Cline has no hook that can keep a task going: TaskComplete runs after the task is complete and cancel there stops nothing; the gate can only report (errorMessage to the user, contextModification to the model's next request), and attempt_completion is only a tool call that PreToolUse can cancel, which ends the task`},
	"copilot": {true, `agentStop answers {"decision":"block","reason":…}: Copilot forces another turn with the reason as the prompt (the CLI gives up after 8 blocks in a row); its event does not carry the final message, only transcriptPath`},
}

// StopBlocks reports whether agent's stop hook can refuse a stop, and what
// it does (or, when it cannot, what it does instead) — for gate doctor and
// the README. An unknown agent cannot block.
func StopBlocks(agent string) (blocks bool, note string) {
	n, ok := stopNotes[agent]
	if !ok {
		return false, "unknown agent " + strconv.Quote(agent)
	}
	return n.blocks, n.note
}
