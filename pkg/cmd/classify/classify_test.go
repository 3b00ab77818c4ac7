package classify

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/gitconfig"
	"github.com/govkit/govkit/pkg/intent"
)

// exitCode mirrors cli.Main's mapping for errors returned by a run.
func exitCode(t *testing.T, err error) int {
	t.Helper()
	if err == nil {
		return 0
	}
	var ee *cli.ExitError
	if !errors.As(err, &ee) {
		t.Fatalf("run returned %T (%v), want nil or *cli.ExitError", err, err)
	}
	return ee.Code
}

func TestNewCmdClassify(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "file")
	if err := os.WriteFile(file, nil, 0o600); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name     string
		argv     []string
		stdinTTY bool
		want     ClassifyOptions // only the parsed fields are compared
		wantErr  string
		wantHint string
	}{
		{name: "one word", argv: []string{"ls"}, want: ClassifyOptions{Args: []string{"ls"}}},
		{name: "flags after the command belong to it", argv: []string{"ls", "-la", "-o", "json"},
			want: ClassifyOptions{Args: []string{"ls", "-la", "-o", "json"}}},
		{name: "output before the command", argv: []string{"-o", "json", "rm", "-rf", "/tmp/x"},
			want: ClassifyOptions{Output: cli.FormatJSON, Args: []string{"rm", "-rf", "/tmp/x"}}},
		{name: "long output", argv: []string{"--output=text", "--", "-rf"},
			want: ClassifyOptions{Output: cli.FormatText, Args: []string{"-rf"}}},
		{name: "double dash", argv: []string{"--", "completion", "bash"},
			want: ClassifyOptions{Args: []string{"completion", "bash"}}},
		{name: "cwd", argv: []string{"--cwd", dir, "git", "status"},
			want: ClassifyOptions{Cwd: dir, Args: []string{"git", "status"}}},
		{name: "batch", argv: nil, want: ClassifyOptions{}},
		{name: "batch null", argv: []string{"-0"}, want: ClassifyOptions{Null: true}},
		{name: "batch null long", argv: []string{"--null", "-o", "text"}, want: ClassifyOptions{Null: true, Output: cli.FormatText}},
		{
			name:     "cwd missing",
			argv:     []string{"--cwd", filepath.Join(dir, "nope"), "ls"},
			wantErr:  "--cwd " + filepath.Join(dir, "nope") + ": no such directory",
			wantHint: "pass an existing directory to --cwd",
		},
		{
			name:     "cwd is a file",
			argv:     []string{"--cwd", file, "ls"},
			wantErr:  "--cwd " + file + ": not a directory",
			wantHint: "pass an existing directory to --cwd",
		},
		{
			name:     "null with a command",
			argv:     []string{"-0", "ls"},
			wantErr:  "--null applies to commands read from standard input, not to a command given as arguments",
			wantHint: "drop --null, or pipe the commands to classify --null",
		},
		{
			name:     "empty command",
			argv:     []string{"--", " "},
			wantErr:  "the command is empty",
			wantHint: "pass the command to classify after the flags, e.g. classify -- ls -la",
		},
		{
			name:    "invalid utf-8 argument",
			argv:    []string{"ls", "\xff"},
			wantErr: "the command is not valid utf-8",
		},
		{
			name:     "no command and a terminal on stdin",
			argv:     nil,
			stdinTTY: true,
			wantErr:  "no command given and standard input is a terminal",
			wantHint: "pass a command as arguments (classify -- ls -la), or pipe commands to standard input, one per line or NUL-separated with --null",
		},
		{
			name:     "a terminal on stdin is fine with a command",
			argv:     []string{"ls"},
			stdinTTY: true,
			want:     ClassifyOptions{Args: []string{"ls"}},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, _, _ := cli.Test()
			streams.SetStdinTTY(tt.stdinTTY)
			var got *ClassifyOptions
			cmd := NewCmdClassify(streams, func(o *ClassifyOptions) error {
				got = o
				return nil
			})
			cmd.SetArgs(tt.argv)
			cmd.SetOut(io.Discard)
			cmd.SetErr(io.Discard)
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil {
					t.Fatalf("no error, want %q", tt.wantErr)
				}
				if err.Error() != tt.wantErr {
					t.Errorf("error = %q, want %q", err, tt.wantErr)
				}
				var ee *cli.ExitError
				if !errors.As(err, &ee) || ee.Code != cli.ExitFailure {
					t.Errorf("error %v is not an exit-3 error", err)
				} else if ee.Hint != tt.wantHint {
					t.Errorf("hint = %q, want %q", ee.Hint, tt.wantHint)
				}
				if got != nil {
					t.Error("run function called despite the error")
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if got == nil {
				t.Fatal("run function not called")
			}
			if got.IO != streams || got.RepoConfig == nil {
				t.Error("dependencies not wired: want the given streams and a RepoConfig")
			}
			parsed := ClassifyOptions{Output: got.Output, Cwd: got.Cwd, Null: got.Null, Args: got.Args}
			if len(parsed.Args) == 0 {
				parsed.Args = nil
			}
			if !reflect.DeepEqual(parsed, tt.want) {
				t.Errorf("options = %+v, want %+v", parsed, tt.want)
			}
		})
	}
}

func TestIntentOptions(t *testing.T) {
	opts := &ClassifyOptions{RepoConfig: gitconfig.IntentRisks}
	if o := opts.intentOptions(); o.Dir != "" || o.RepoConfig != nil {
		t.Errorf("without --cwd: %+v, want no repository check", o)
	}
	opts.Cwd = "/srv/repo"
	if o := opts.intentOptions(); o.Dir != "/srv/repo" || o.RepoConfig == nil {
		t.Errorf("with --cwd: Dir=%q RepoConfig set=%v, want the dir and the repository check", o.Dir, o.RepoConfig != nil)
	}
}

// Results whose printing is pinned exactly; the real classifier's details
// may be reworded, these may not.
var fakeResults = map[string]intent.Result{
	"ls": {Command: "ls", Intent: intent.ReadOnlyCertain, Bounded: true, Risk: intent.RiskReadOnly,
		ActionClass: intent.ActionRead},
	"git log": {Command: "git log", Intent: intent.ReadOnlyConditional, Bounded: true, Risk: intent.RiskReadOnly,
		ActionClass: intent.ActionRead,
		Reasons:     []intent.Reason{{Code: intent.CodeGitConfigDependent, Detail: "repository config can run programs"}}},
	"rm -rf /tmp/x": {Command: "rm -rf /tmp/x", Intent: intent.WriteOrUnknown, Bounded: true, Risk: intent.RiskHighWrite,
		ActionClass: intent.ActionDestructive,
		Reasons: []intent.Reason{
			{Code: intent.CodeWriteCommand, Detail: "rm removes files"},
			{Code: intent.CodeDestructive, Detail: "deletes data"},
		}},
	"tail -f /var/log/syslog": {Command: "tail -f /var/log/syslog", Intent: intent.ReadOnlyCertain, Bounded: false,
		Interactive: intent.UnboundedStream, Risk: intent.RiskReadOnly, ActionClass: intent.ActionRead,
		Reasons:          []intent.Reason{{Code: intent.CodeUnboundedStream, Detail: "-f follows forever"}},
		SuggestedRewrite: "tail -n 200 /var/log/syslog", AutoRecoverable: true},
}

func fakeClassify(command string) intent.Result {
	if r, ok := fakeResults[command]; ok {
		return r
	}
	return intent.Result{Command: command, Intent: intent.WriteOrUnknown, Risk: intent.RiskHighWrite,
		ActionClass: intent.ActionWrite,
		Reasons:     []intent.Reason{{Code: intent.CodeUnknownCommand, Detail: "unknown program"}}}
}

func TestClassifyRun_Output(t *testing.T) {
	const (
		jsonLS   = `{"schema_version":1,"command":"ls","intent":"read_only_certain","bounded":true,"interactive":"","risk":"read_only","action_class":"read","reasons":[],"suggested_rewrite":"","auto_recoverable":false}` + "\n"
		jsonTail = `{"schema_version":1,"command":"tail -f /var/log/syslog","intent":"read_only_certain","bounded":false,"interactive":"unbounded_stream","risk":"read_only","action_class":"read","reasons":[{"code":"UNBOUNDED_STREAM","detail":"-f follows forever"}],"suggested_rewrite":"tail -n 200 /var/log/syslog","auto_recoverable":true}` + "\n"
		jsonRM   = `{"schema_version":1,"command":"rm -rf /tmp/x","intent":"write_or_unknown","bounded":true,"interactive":"","risk":"high_write","action_class":"destructive","reasons":[{"code":"WRITE_COMMAND","detail":"rm removes files"},{"code":"DESTRUCTIVE","detail":"deletes data"}],"suggested_rewrite":"","auto_recoverable":false}` + "\n"
		textLS   = "read-only  ls\n"
		textGit  = "read-only  git log\n" +
			"           GIT_CONFIG_DEPENDENT  repository config can run programs\n"
		textRM = "write      rm -rf /tmp/x\n" +
			"           WRITE_COMMAND  rm removes files\n" +
			"           DESTRUCTIVE    deletes data\n" +
			"           risk: high_write, action: destructive\n"
		textTail = "unbounded  tail -f /var/log/syslog\n" +
			"           UNBOUNDED_STREAM  -f follows forever\n" +
			"           rewrite: tail -n 200 /var/log/syslog\n"
	)
	tests := []struct {
		name      string
		args      []string
		stdin     string
		null      bool
		output    cli.Format
		stdoutTTY bool
		wantOut   string
		wantCode  int
	}{
		{name: "args json", args: []string{"ls"}, output: cli.FormatJSON, wantOut: jsonLS},
		{name: "args json by default when piped", args: []string{"ls"}, wantOut: jsonLS},
		{name: "args text by default on a terminal", args: []string{"ls"}, stdoutTTY: true, wantOut: textLS},
		{name: "args json on a terminal when asked", args: []string{"ls"}, stdoutTTY: true, output: cli.FormatJSON, wantOut: jsonLS},
		{name: "args joined with single spaces", args: []string{"rm", "-rf", "/tmp/x"}, output: cli.FormatText, wantOut: textRM, wantCode: 1},
		{name: "unbounded text", args: []string{"tail -f /var/log/syslog"}, output: cli.FormatText, wantOut: textTail, wantCode: 2},
		{name: "unbounded json", args: []string{"tail", "-f", "/var/log/syslog"}, output: cli.FormatJSON, wantOut: jsonTail, wantCode: 2},
		{name: "conditional read-only", args: []string{"git", "log"}, output: cli.FormatText, wantOut: textGit},
		{name: "html characters are not escaped", args: []string{"a", "<b", ">", "c&d"}, output: cli.FormatJSON,
			wantOut:  `{"schema_version":1,"command":"a <b > c&d","intent":"write_or_unknown","bounded":false,"interactive":"","risk":"high_write","action_class":"write","reasons":[{"code":"UNKNOWN_COMMAND","detail":"unknown program"}],"suggested_rewrite":"","auto_recoverable":false}` + "\n",
			wantCode: 1},
		{name: "batch text, worst is write", stdin: "ls\ntail -f /var/log/syslog\nrm -rf /tmp/x\nls\n", output: cli.FormatText,
			wantOut: textLS + textTail + textRM + textLS, wantCode: 1},
		{name: "batch json, worst is unbounded", stdin: "ls\ntail -f /var/log/syslog\n", output: cli.FormatJSON,
			wantOut: jsonLS + jsonTail, wantCode: 2},
		{name: "write beats a later unbounded", stdin: "rm -rf /tmp/x\ntail -f /var/log/syslog\n", output: cli.FormatJSON,
			wantOut: jsonRM + jsonTail, wantCode: 1},
		{name: "batch all read-only, blank lines skipped", stdin: "\nls\n  \t\nls", output: cli.FormatText,
			wantOut: textLS + textLS},
		{name: "batch null-separated", stdin: "ls\x00rm -rf /tmp/x\x00\x00", null: true, output: cli.FormatJSON,
			wantOut: jsonLS + jsonRM, wantCode: 1},
		{name: "null-separated command spanning lines, quoted in text", stdin: "for f in *; do\n  wc -l \"$f\"\ndone\x00", null: true, output: cli.FormatText,
			wantOut: "write      \"for f in *; do\\n  wc -l \\\"$f\\\"\\ndone\"\n" +
				"           UNKNOWN_COMMAND  unknown program\n" +
				"           risk: high_write, action: write\n",
			wantCode: 1},
		{name: "a carriage return stays in the command", stdin: "ls\r\n", output: cli.FormatText,
			wantOut: "write      \"ls\\r\"\n" +
				"           UNKNOWN_COMMAND  unknown program\n" +
				"           risk: high_write, action: write\n",
			wantCode: 1},
		{name: "escape sequences are quoted in text", args: []string{"echo \x1b[2J"}, output: cli.FormatText,
			wantOut: "write      \"echo \\x1b[2J\"\n" +
				"           UNKNOWN_COMMAND  unknown program\n" +
				"           risk: high_write, action: write\n",
			wantCode: 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, in, out, errOut := cli.Test()
			streams.SetStdoutTTY(tt.stdoutTTY)
			in.WriteString(tt.stdin)
			err := classifyRun(&ClassifyOptions{
				IO: streams, Classify: fakeClassify, Output: tt.output, Null: tt.null, Args: tt.args,
			})
			if code := exitCode(t, err); code != tt.wantCode {
				t.Errorf("exit code = %d (%v), want %d", code, err, tt.wantCode)
			}
			if out.String() != tt.wantOut {
				t.Errorf("stdout =\n%s\nwant\n%s", out, tt.wantOut)
			}
			if errOut.Len() != 0 {
				t.Errorf("stderr = %q, want nothing: the run does not print errors itself", errOut)
			}
		})
	}
}

func TestClassifyRun_BadInput(t *testing.T) {
	long := strings.Repeat("a", MaxRecordBytes)
	tests := []struct {
		name     string
		stdin    string
		null     bool
		wantOut  string // results printed before the error stay printed
		wantErr  string
		wantCode int
	}{
		{name: "line over 1 MiB", stdin: "ls\n" + long + "b\nls\n",
			wantOut: "read-only  ls\n", wantErr: "line 2: longer than 1048576 bytes (1 MiB)", wantCode: 3},
		{name: "last line over 1 MiB without newline", stdin: long + "b",
			wantErr: "line 1: longer than 1048576 bytes (1 MiB)", wantCode: 3},
		{name: "record over 1 MiB", stdin: "ls\x00" + long + "\nb\x00", null: true,
			wantOut: "read-only  ls\n", wantErr: "record 2: longer than 1048576 bytes (1 MiB)", wantCode: 3},
		{name: "a line of exactly 1 MiB is fine", stdin: long + "\n",
			wantOut:  "write      " + long[:maxShown] + "… (1048576 bytes)\n           UNKNOWN_COMMAND  unknown program\n           risk: high_write, action: write\n",
			wantCode: 1},
		{name: "invalid utf-8, counting blank lines", stdin: "ls\n\nls \xff\xfe\n",
			wantOut: "read-only  ls\n", wantErr: "line 3: invalid utf-8 at byte 4", wantCode: 3},
		{name: "truncated utf-8 at the end", stdin: "ls\ncat caf\xc3",
			wantOut: "read-only  ls\n", wantErr: "line 2: invalid utf-8 at byte 8", wantCode: 3},
		{name: "empty input", stdin: "", wantErr: "standard input holds no command", wantCode: 3},
		{name: "only blank lines", stdin: "\n \n\t\n", wantErr: "standard input holds no command", wantCode: 3},
		{name: "only NULs", stdin: "\x00\x00", null: true, wantErr: "standard input holds no command", wantCode: 3},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, in, out, _ := cli.Test()
			in.WriteString(tt.stdin)
			err := classifyRun(&ClassifyOptions{IO: streams, Classify: fakeClassify, Output: cli.FormatText, Null: tt.null})
			if code := exitCode(t, err); code != tt.wantCode {
				t.Errorf("exit code = %d (%v), want %d", code, err, tt.wantCode)
			}
			if tt.wantErr != "" && (err == nil || err.Error() != tt.wantErr) {
				t.Errorf("error = %v, want %q", err, tt.wantErr)
			}
			if out.String() != tt.wantOut {
				t.Errorf("stdout =\n%.300s\nwant\n%.300s", out, tt.wantOut)
			}
		})
	}
}

// TestClassifyRun_Streams checks that each result is written before the next
// command is read: a caller may feed commands one at a time and wait for each
// answer.
func TestClassifyRun_Streams(t *testing.T) {
	pr, pw := io.Pipe()
	out := &syncBuffer{}
	streams := &cli.IOStreams{In: pr, Out: out, ErrOut: io.Discard}
	done := make(chan error, 1)
	go func() {
		done <- classifyRun(&ClassifyOptions{IO: streams, Classify: fakeClassify, Output: cli.FormatJSON})
	}()
	for i, cmd := range []string{"ls", "tail -f /var/log/syslog", "ls"} {
		if _, err := io.WriteString(pw, cmd+"\n"); err != nil {
			t.Fatal(err)
		}
		deadline := time.Now().Add(5 * time.Second)
		for strings.Count(out.String(), "\n") < i+1 {
			if time.Now().After(deadline) {
				t.Fatalf("no result for %q before the next command was written; stdout so far: %q", cmd, out.String())
			}
			time.Sleep(time.Millisecond)
		}
	}
	pw.Close()
	if code := exitCode(t, <-done); code != 2 {
		t.Errorf("exit code = %d, want 2", code)
	}
}

// syncBuffer is a bytes.Buffer safe to write from the run's goroutine while
// the test reads it.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// TestClassifyRun_Classifier runs the real classifier on commands whose
// verdict is settled by DESIGN §4.
func TestClassifyRun_Classifier(t *testing.T) {
	tests := []struct {
		name       string
		args       []string
		stdin      string
		wantCode   int
		wantFirst  string   // first line of text output
		wantFields []string // substrings of the JSON output
	}{
		{name: "ls", args: []string{"ls"}, wantCode: 0, wantFirst: "read-only  ls",
			wantFields: []string{`"intent":"read_only_certain"`, `"bounded":true`, `"risk":"read_only"`, `"action_class":"read"`}},
		{name: "rm", args: []string{"rm", "-rf", "/tmp/x"}, wantCode: 1, wantFirst: "write      rm -rf /tmp/x",
			wantFields: []string{`"intent":"write_or_unknown"`, `"action_class":"destructive"`, `"code":"DESTRUCTIVE"`}},
		{name: "tail -f", args: []string{"tail -f /var/log/syslog"}, wantCode: 2, wantFirst: "unbounded  tail -f /var/log/syslog",
			wantFields: []string{`"bounded":false`, `"interactive":"unbounded_stream"`, `"code":"UNBOUNDED_STREAM"`, `"suggested_rewrite":"tail -n 200 /var/log/syslog"`}},
		{name: "parse error is a verdict, not an error", args: []string{"ls &&"}, wantCode: 1, wantFirst: "write      ls &&",
			wantFields: []string{`"intent":"write_or_unknown"`, `"code":"PARSE_ERROR"`}},
		{name: "batch worst is write", stdin: "ls\ntail -f /var/log/syslog\nrm -rf /tmp/x\n", wantCode: 1, wantFirst: "read-only  ls"},
		{name: "batch worst is unbounded", stdin: "ls\ntail -f /var/log/syslog\n", wantCode: 2, wantFirst: "read-only  ls"},
	}
	for _, tt := range tests {
		for _, format := range []cli.Format{cli.FormatText, cli.FormatJSON} {
			t.Run(tt.name+"/"+string(format), func(t *testing.T) {
				streams, in, out, _ := cli.Test()
				in.WriteString(tt.stdin)
				err := classifyRun(&ClassifyOptions{IO: streams, Output: format, Args: tt.args})
				if code := exitCode(t, err); code != tt.wantCode {
					t.Errorf("exit code = %d, want %d; output:\n%s", code, tt.wantCode, out)
				}
				if format == cli.FormatText {
					if first, _, _ := strings.Cut(out.String(), "\n"); first != tt.wantFirst {
						t.Errorf("first line = %q, want %q", first, tt.wantFirst)
					}
					return
				}
				for _, f := range tt.wantFields {
					if !strings.Contains(out.String(), f) {
						t.Errorf("JSON output lacks %s:\n%s", f, out)
					}
				}
			})
		}
	}
}
