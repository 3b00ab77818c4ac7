// Package convtools runs a conversation's tools in its fixed working directory, under the sandbox its mode allows.
package convtools

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/session/response"
)

// The tools' names.
const (
	Bash     = "bash"
	ReadFile = "read_file"
	Search   = "search"
	Patch    = "patch"
)

// DefaultMaxOutput bounds what one call returns when Runner.MaxOutput is 0:
// the text goes back to the LLM, whose context is the scarce resource.
const DefaultMaxOutput = 64 << 10

// Definition is one tool as the LLM and the session reducer see it. Kind is
// the session reducer's: bash "write" (pkg/intent classifies each command),
// read_file "read", search "search", patch "write".
type Definition struct {
	Name        string          `json:"name"`
	Description string          `json:"description"`
	Parameters  json.RawMessage `json:"parameters"`
	Kind        string          `json:"kind"`
}

// Definitions are the four tools. They take no mode: a tool's description
// never changes with the conversation's mode (REQ-BED-017, B-17b); what a
// mode forbids is refused at call time with an error naming
// request_mode_upgrade (B-17c).
func Definitions() []Definition {
	return []Definition{
		{Name: Bash, Kind: "write", Parameters: json.RawMessage(bashSchema), Description: "Run a bash command in the conversation's working directory and return its output (stdout and stderr, bounded) and exit code. " +
			"Every call starts a new shell in the working directory: a cd does not carry over to the next call. " +
			"In restricted mode the command runs with a read-only filesystem (except its TMPDIR) and no network; ask for request_mode_upgrade to write."},
		{Name: ReadFile, Kind: "read", Parameters: json.RawMessage(readSchema), Description: "Read a text file under the working directory, optionally only lines start_line..end_line (1-based, inclusive). " +
			"Give a path, or the candidate_id a search returned. Paths outside the working directory are refused."},
		{Name: Search, Kind: "search", Parameters: json.RawMessage(searchSchema), Description: "Search the files under the working directory (or under path) for a literal string. " +
			"Returns matching lines as path:line: text, bounded in count and size, and refs to read the files."},
		{Name: Patch, Kind: "write", Parameters: json.RawMessage(patchSchema), Description: "Edit a file under the working directory: replace old_text, which must occur exactly once, with new_text. " +
			"With an empty old_text, create a new file containing new_text (refused if it exists). Not available in restricted mode: ask for request_mode_upgrade."},
	}
}

// The parameter schemas: closed objects (additionalProperties false), so a
// model's misspelled argument is an error instead of being ignored.
const (
	bashSchema = `{"type":"object","properties":{` +
		`"command":{"type":"string","description":"the bash command line to run"}},` +
		`"required":["command"],"additionalProperties":false}`
	readSchema = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"file path, relative to the working directory"},` +
		`"start_line":{"type":"integer","minimum":1,"description":"first line to read (1-based)"},` +
		`"end_line":{"type":"integer","minimum":1,"description":"last line to read (inclusive)"},` +
		`"candidate_id":{"type":"string","description":"a ref from a search result, instead of a path"},` +
		`"bundle_id":{"type":"string","description":"a bundle ref from a search result; give path too"}},` +
		`"additionalProperties":false}`
	searchSchema = `{"type":"object","properties":{` +
		`"query":{"type":"string","minLength":1,"description":"the literal text to find (case-sensitive, one line)"},` +
		`"path":{"type":"string","description":"a file or directory under the working directory to search (default: all of it)"}},` +
		`"required":["query"],"additionalProperties":false}`
	patchSchema = `{"type":"object","properties":{` +
		`"path":{"type":"string","description":"file path, relative to the working directory"},` +
		`"old_text":{"type":"string","description":"the exact text to replace; it must occur exactly once; empty to create a new file"},` +
		`"new_text":{"type":"string","description":"the replacement text, or the new file's content"}},` +
		`"required":["path","old_text","new_text"],"additionalProperties":false}`
)

// Call is one tool call to run. Cwd is the conversation's fixed working
// directory (REQ-BED-010); Restricted is its mode at admission. RefPath is
// the path the session's read guard resolved a read_file candidate_id to
// (seed 004 refs are hashes this package cannot invert).
type Call struct {
	ID         string
	Name       string
	Args       json.RawMessage
	Cwd        string
	Restricted bool
	Session    string
	RefPath    string
}

// Result is what a call did. OK is false for an error (Error and Code say
// which, Code from pkg/session/response) and for a command that exited
// non-zero. Sandbox says what was enforced on a bash command ("off", or
// sandbox.Report's line). Lines and Chars count read_file's text for seed
// 004's read budgets; Paths are search's matching files, best first, for
// its refs.
type Result struct {
	OK        bool     `json:"ok"`
	Output    string   `json:"output,omitempty"`
	Error     string   `json:"error,omitempty"`
	Code      string   `json:"code,omitempty"`
	ExitCode  int      `json:"exit_code"`
	Sandbox   string   `json:"sandbox,omitempty"`
	Lines     int      `json:"lines,omitempty"`
	Chars     int      `json:"chars,omitempty"`
	Paths     []string `json:"paths,omitempty"`
	Truncated bool     `json:"truncated,omitempty"`
	Cancelled bool     `json:"cancelled,omitempty"`
	Receipt   string   `json:"receipt,omitempty"` // the tool_execution event gate recorded (unrestricted bash with auditd)
}

// Response is the result as seed 000's ToolResponse envelope.
func (r Result) Response() response.ToolResponse {
	if r.OK {
		data := map[string]any{"output": r.Output}
		if r.Paths != nil {
			data["paths"] = r.Paths
		}
		return response.Success(data)
	}
	code := r.Code
	if code == "" {
		code = response.ExecutionFailed
	}
	msg := r.Error
	if r.Output != "" {
		msg += "\n" + r.Output
	}
	return response.ToolResponse{Error: &response.ToolError{
		Code: code, Message: msg, Failed: code == response.ExecutionFailed,
		Blocked: code != response.ExecutionFailed,
	}}
}

// Runner runs calls. The zero value works: no auditd (unrestricted bash
// runs unconfined), DefaultMaxOutput, no timeout, temp dirs in os.TempDir.
type Runner struct {
	// Client reaches auditd: unrestricted bash then goes through gate
	// run's pipeline in fix mode (policy, approvals, receipts).
	Client *client.Client
	// MaxOutput bounds each call's output in bytes (0: DefaultMaxOutput).
	MaxOutput int64
	// Timeout bounds each bash command (0: none; cancellation still
	// applies).
	Timeout time.Duration
	// TempRoot holds the private temp dirs of sandboxed commands ("" is
	// os.TempDir()).
	TempRoot string
	// ApprovalWait is how long gate waits for an approval its policy
	// requires (0: refuse with APPROVAL_REQUIRED and the approval's id).
	ApprovalWait time.Duration
	// Spool is gate's incident spool ("" is gate.DefaultSpoolDir()).
	Spool string
	// Mark, when set, is put in every command's environment as
	// MarkEnv=Mark, so that a server restarted after a kill -9 finds what
	// the dead one's commands left running (KillMarked): bash itself dies
	// with the server (Pdeathsig), its children do not.
	Mark string
}

// Run runs call; every failure is in the Result. ctx's cancellation kills
// a running command's process group (REQ-BED-005, B-05b).
func (r *Runner) Run(ctx context.Context, call Call) Result {
	cwd, err := workdir(call.Cwd)
	if err != nil {
		return refusal(response.InvalidInput, err.Error())
	}
	call.Cwd = cwd
	switch call.Name {
	case Bash:
		var a bashArgs
		if err := decodeArgs(call.Args, &a); err != nil {
			return refusal(response.InvalidInput, "bash: "+err.Error())
		}
		return r.bash(ctx, call, a)
	case ReadFile:
		var a readArgs
		if err := decodeArgs(call.Args, &a); err != nil {
			return refusal(response.InvalidInput, "read_file: "+err.Error())
		}
		return r.readFile(call, a)
	case Search:
		var a searchArgs
		if err := decodeArgs(call.Args, &a); err != nil {
			return refusal(response.InvalidInput, "search: "+err.Error())
		}
		return r.search(ctx, call, a)
	case Patch:
		var a patchArgs
		if err := decodeArgs(call.Args, &a); err != nil {
			return refusal(response.InvalidInput, "patch: "+err.Error())
		}
		if call.Restricted {
			// The machine refuses patch in restricted mode already
			// (B-17c); this is the second lock on the same door.
			return refusal(response.ActionNotAllowed, "patch is disabled in restricted mode: the filesystem is read-only. Call request_mode_upgrade with your reason to ask the user for unrestricted mode.")
		}
		return r.patch(call, a)
	}
	return refusal(response.NotFound, fmt.Sprintf("unknown tool %q (tools: bash, read_file, search, patch)", call.Name))
}

func (r *Runner) maxOutput() int64 {
	if r.MaxOutput > 0 {
		return r.MaxOutput
	}
	return DefaultMaxOutput
}

func refusal(code, msg string) Result {
	return Result{Code: code, Error: msg, ExitCode: -1}
}

// workdir checks the conversation's directory: absolute, existing, a
// directory. It is cleaned but not resolved, so the messages name it as
// the conversation does.
func workdir(dir string) (string, error) {
	if dir == "" || !filepath.IsAbs(dir) {
		return "", fmt.Errorf("the conversation's working directory %q is not an absolute path", dir)
	}
	dir = filepath.Clean(dir)
	fi, err := os.Stat(dir)
	if err != nil {
		return "", fmt.Errorf("the conversation's working directory: %w", err)
	}
	if !fi.IsDir() {
		return "", fmt.Errorf("the conversation's working directory %s is not a directory", dir)
	}
	return dir, nil
}

// The tools' arguments, as the LLM sends them.
type (
	bashArgs struct {
		Command *string `json:"command"`
	}
	readArgs struct {
		Path        string `json:"path"`
		StartLine   *int   `json:"start_line"`
		EndLine     *int   `json:"end_line"`
		CandidateID string `json:"candidate_id"`
		BundleID    string `json:"bundle_id"`
	}
	searchArgs struct {
		Query *string `json:"query"`
		Path  string  `json:"path"`
	}
	patchArgs struct {
		Path    *string `json:"path"`
		OldText *string `json:"old_text"`
		NewText *string `json:"new_text"`
	}
)

// maxArgs bounds a call's arguments: a patch carries file content, nothing
// sensible is bigger.
const maxArgs = 8 << 20

// decodeArgs reads a call's arguments strictly, as the schemas say: one
// JSON object, no unknown member, required members present. The error
// names the member.
func decodeArgs(raw json.RawMessage, into any) error {
	raw = bytes.TrimSpace(raw)
	if len(raw) > maxArgs {
		return fmt.Errorf("arguments are %d bytes, more than %d", len(raw), maxArgs)
	}
	if len(raw) == 0 || raw[0] != '{' {
		return errors.New("arguments must be a JSON object")
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	if err := dec.Decode(into); err != nil {
		return fmt.Errorf("bad arguments: %s", strings.TrimPrefix(err.Error(), "json: "))
	}
	if dec.More() {
		return errors.New("bad arguments: data after the JSON object")
	}
	var missing string
	switch a := into.(type) {
	case *bashArgs:
		switch {
		case a.Command == nil:
			missing = "command"
		case strings.TrimSpace(*a.Command) == "":
			return errors.New("command is empty")
		}
	case *readArgs:
		if a.Path == "" && a.CandidateID == "" {
			return errors.New("give path (or a candidate_id from a search)")
		}
		if a.StartLine != nil && *a.StartLine < 1 || a.EndLine != nil && *a.EndLine < 1 {
			return errors.New("start_line and end_line count from 1")
		}
		if a.StartLine != nil && a.EndLine != nil && *a.EndLine < *a.StartLine {
			return fmt.Errorf("end_line %d is before start_line %d", *a.EndLine, *a.StartLine)
		}
	case *searchArgs:
		switch {
		case a.Query == nil:
			missing = "query"
		case *a.Query == "":
			return errors.New("query is empty")
		case strings.ContainsAny(*a.Query, "\n\r"):
			return errors.New("query spans lines; search matches within one line")
		}
	case *patchArgs:
		switch {
		case a.Path == nil:
			missing = "path"
		case a.OldText == nil:
			missing = "old_text"
		case a.NewText == nil:
			missing = "new_text"
		}
	}
	if missing != "" {
		return fmt.Errorf("missing required argument %q", missing)
	}
	return nil
}
