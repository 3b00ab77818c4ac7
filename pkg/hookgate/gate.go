// Package hookgate runs the session reducer behind a coding agent's hooks:
// one hook event in, the session's state file loaded, the event turned into
// reducer events, the effects turned into the agent's answer, the state
// saved (DESIGN §14, gate hook).
package hookgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/hook"
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/sessionstore"
	"github.com/govkit/govkit/pkg/toolgov"
)

// Failure is the decision for anything gate hook could not decide: always
// a refusal (of the call, of the stop), never an allow.
func Failure(what string) hook.Decision {
	return hook.Decision{Permission: hook.Deny, Reason: "govkit gate could not decide (" + what + "), so it refuses. Ask the user to run the call themselves, or fix the hook: gate doctor --agent AGENT."}
}

// Gate answers one agent's hook events. Its fields are set once by the
// command; Handle is called once per process.
type Gate struct {
	Agent   string
	Dialect hook.Dialect
	Store   *sessionstore.Store
	Session session.Options
	Config  Config
	// Gov is auditd's policy, approvals and chain; nil without --url.
	Gov toolgov.Governance
	// Policy answers writes when there is no auditd: allow (gate hook's
	// default), ask or deny; and commands that may never end (deny or ask).
	Policy hook.Policy
	// OnDestructive answers a destructive write (rm -rf, a Delete) that
	// Policy would allow, without auditd: ask (the default) or deny.
	OnDestructive hook.Permission
	// Classify classifies a shell command run in cwd (pkg/intent).
	Classify func(command, cwd string) intent.Result
	// Transcript returns the last assistant message of a transcript file
	// (nil: LastAssistantText).
	Transcript func(path string) (string, error)
	Now        func() time.Time
	Rand       io.Reader
	// GovTimeout bounds each call to auditd (default 5s).
	GovTimeout time.Duration
}

// Handle answers one raw hook event. Every failure — a malformed event, a
// locked, damaged or oversized state file, auditd unreachable, a panic —
// is the agent's blocking form for that kind of event (fail closed, as
// classify hook).
func (g *Gate) Handle(ctx context.Context, raw []byte) (ans hook.Answer) {
	kind := hook.PreTool
	defer func() {
		if p := recover(); p != nil {
			ans = g.Dialect.Answer(kind, Failure(fmt.Sprintf("internal error: %v", p)))
		}
	}()
	if len(raw) > hook.MaxEvent {
		return g.Dialect.Encode(Failure(fmt.Sprintf("the event is %d bytes; the limit is %d", len(raw), hook.MaxEvent)))
	}
	ev, err := g.Dialect.Decode(raw)
	if err != nil {
		return g.Dialect.Encode(Failure("malformed event: " + err.Error()))
	}
	kind = ev.Kind
	return hook.Reply(g.Dialect, ev, g.handle(ctx, ev))
}

func (g *Gate) handle(ctx context.Context, ev hook.Event) hook.Decision {
	if ev.Kind == hook.Prompt {
		return hook.Decision{Permission: hook.Allow, Reason: "govkit gate: a new prompt"}
	}
	if ev.SessionID == "" {
		return Failure("the event has no session id, and gate hook keeps each session's state by its id")
	}
	entry, err := g.Store.Lock(ctx, ev.SessionID)
	if err != nil {
		if errors.Is(err, sessionstore.ErrLocked) {
			return Failure("another hook of this session holds its state file for too long")
		}
		return Failure("opening the session's state file: " + err.Error())
	}
	defer entry.Close()

	switch ev.Kind {
	case hook.SessionEnd:
		// The file is the session's memory (seed 000 Invariant 5): it
		// ends with the session.
		if err := entry.Delete(); err != nil {
			return Failure("deleting the session's state file: " + err.Error())
		}
		return hook.Decision{Permission: hook.Allow, Reason: "govkit gate: session ended; its state is deleted"}
	case hook.SessionStart:
		// Other sessions' expired files; failing to remove them is not
		// this session's problem.
		_, _ = g.Store.Sweep(20)
	}

	s, err := g.load(entry, ev)
	if err != nil {
		return Failure(err.Error())
	}
	var d hook.Decision
	switch ev.Kind {
	case hook.SessionStart:
		d = hook.Decision{Permission: hook.Allow, Reason: "govkit gate: session started",
			Context: "govkit gate governs this session: edit a file only after reading or listing it, and check each change (read the file, run its test) before you finish."}
	case hook.PreTool:
		d = s.preTool(ctx, ev)
	case hook.PostTool:
		d = s.postTool(ctx, ev)
	case hook.Stop:
		d = s.stop(ctx, ev)
	default:
		return Failure("gate hook does not handle " + ev.Kind.String() + " events")
	}
	if err := s.save(entry); err != nil {
		if d.Permission == hook.Allow && ev.Kind == hook.PostTool {
			// The tool ran; refusing now changes nothing but hides it.
			d.Context = strings.TrimSpace(d.Context + " govkit gate could not save the session: " + err.Error())
			return d
		}
		return Failure("saving the session's state file: " + err.Error())
	}
	return d
}

// run is one event's work on a loaded session.
type run struct {
	g   *Gate
	st  *session.State
	mem *memory
	now time.Time
	ev  hook.Event
}

// load restores the session, or starts one: at the first event of a
// session id, after the file expired (the ResolvedContext's TTL), or at a
// SessionStart that begins afresh.
func (g *Gate) load(entry *sessionstore.Entry, ev hook.Event) (*run, error) {
	now := g.now()
	r := &run{g: g, now: now, ev: ev}
	data := entry.Data()
	fresh := data == nil || (ev.Kind == hook.SessionStart && (ev.Source == "" || ev.Source == "startup" || ev.Source == "clear"))
	if !fresh {
		mem, err := decodeMemory(data)
		if err == nil && mem.Agent != g.Agent {
			err = fmt.Errorf("the state file belongs to agent %q, not %q", mem.Agent, g.Agent)
		}
		var st *session.State
		if err == nil {
			st, err = session.Restore(g.Session, mem.Session)
		}
		if err != nil {
			return nil, fmt.Errorf("the session's state file is damaged (%v); it is replaced at the next SessionStart, or delete it (gate hook reset --session %s)", err, ev.SessionID)
		}
		r.st, r.mem = st, mem
		return r, nil
	}
	seed := make([]byte, 32)
	if _, err := io.ReadFull(g.rand(), seed); err != nil {
		return nil, fmt.Errorf("drawing the session's seed: %v", err)
	}
	r.st = session.New(g.Session)
	r.mem = &memory{V: memoryVersion, Agent: g.Agent}
	_, effects := session.Transition(r.st, session.Event{
		Type: session.EvSessionStart, At: r.at(), SchemaVersion: session.SchemaVersion,
		SessionID: ev.SessionID, WorkspaceRoot: ev.Cwd, Tools: sessionTools(),
		Config: g.Config.sessionConfig(g.Agent), Seed: hex.EncodeToString(seed),
	})
	for _, e := range effects {
		if e.Type == session.EfError {
			return nil, fmt.Errorf("starting the session: %s: %s", e.Code, e.Detail)
		}
	}
	return r, nil
}

func (r *run) save(entry *sessionstore.Entry) error {
	snap, err := r.st.Snapshot()
	if err != nil {
		return err
	}
	r.mem.Session = snap
	data, err := r.mem.encode()
	if err != nil {
		return err
	}
	return entry.Save(data)
}

func (r *run) at() string { return r.now.UTC().Format(time.RFC3339Nano) }

// transition applies one reducer event stamped with this event's time.
func (r *run) transition(ev session.Event) []session.Effect {
	ev.At = r.at()
	_, effects := session.Transition(r.st, ev)
	return effects
}

func (g *Gate) now() time.Time {
	if g.Now != nil {
		return g.Now()
	}
	return time.Now()
}

func (g *Gate) rand() io.Reader {
	if g.Rand != nil {
		return g.Rand
	}
	return rand.Reader
}

func (g *Gate) govContext(ctx context.Context) (context.Context, context.CancelFunc) {
	t := g.GovTimeout
	if t <= 0 {
		t = 5 * time.Second
	}
	return context.WithTimeout(ctx, t)
}

// callKey identifies a call by its tool and input, to match a post-tool
// event of an agent that gives no call id, and to hold an approval for
// exactly one call.
func callKey(ev hook.Event) string {
	input := ev.Input
	if ev.Shell {
		input, _ = json.Marshal(ev.Command)
	}
	return ev.Tool + "\x00" + string(compactJSON(input))
}

func compactJSON(raw json.RawMessage) []byte {
	var v any
	if json.Unmarshal(raw, &v) != nil {
		return raw
	}
	b, _ := json.Marshal(v) // map keys sorted: one key per input
	return b
}
