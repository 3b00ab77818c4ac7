package cli

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestMain_ExitCodesAndStderr(t *testing.T) {
	// No config file may leak in from the machine running the tests.
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(EnvConfig, "")

	tests := []struct {
		name       string
		run        func() error
		args       []string
		wantCode   int
		wantStdout string
		wantStderr string
	}{
		{name: "success", run: func() error { return nil }, wantCode: 0},
		{name: "silent verdict 1", run: func() error { return Silent(1) }, wantCode: 1},
		{name: "silent verdict 2", run: func() error { return Silent(2) }, wantCode: 2},
		{
			name: "error with hint",
			run: func() error {
				return Failf("--cwd /nope: no such directory").WithHint("pass an existing directory to --cwd")
			},
			wantCode:   3,
			wantStderr: "tool: error: --cwd /nope: no such directory\ntool: hint: pass an existing directory to --cwd\n",
		},
		{
			name:       "plain error from run is an internal failure without hint",
			run:        func() error { return errors.New("disk on fire") },
			wantCode:   3,
			wantStderr: "tool: error: disk on fire\n",
		},
		{
			name:       "wrapped exit error keeps its code",
			run:        func() error { return fmt.Errorf("context: %w", &ExitError{Code: 1, Err: errors.New("boom")}) },
			wantCode:   1,
			wantStderr: "tool: error: context: boom\n",
		},
		{
			name:       "exit 0 with an error is never exit 0",
			run:        func() error { return &ExitError{Code: 0, Err: errors.New("half done")} },
			wantCode:   3,
			wantStderr: "tool: error: half done\n",
		},
		{
			name:       "panic",
			run:        func() error { panic("index out of range") },
			wantCode:   3,
			wantStderr: "tool: error: internal error: index out of range\ntool: hint: this is a bug in tool; please report it with the input that caused it\n",
		},
		{
			name:       "unknown flag",
			args:       []string{"--bogus"},
			wantCode:   3,
			wantStderr: "tool: error: unknown flag: --bogus\ntool: hint: run 'tool --help' for usage\n",
		},
		{
			name:       "unknown shorthand",
			args:       []string{"-z"},
			wantCode:   3,
			wantStderr: "tool: error: unknown shorthand flag: 'z' in -z\ntool: hint: run 'tool --help' for usage\n",
		},
		{
			name:       "bad flag value",
			args:       []string{"--count", "many"},
			wantCode:   3,
			wantStderr: "tool: error: invalid argument \"many\" for \"--count\" flag: strconv.ParseInt: parsing \"many\": invalid syntax\ntool: hint: run 'tool --help' for usage\n",
		},
		{
			name:       "cobra argument check",
			args:       []string{"a", "b", "c"},
			wantCode:   3,
			wantStderr: "tool: error: accepts at most 2 arg(s), received 3\ntool: hint: run 'tool --help' for usage\n",
		},
		{
			name:       "help",
			args:       []string{"--help"},
			wantCode:   0,
			wantStdout: "a test tool\n\nUsage:\n  tool [flags]\n\nFlags:\n      --count int   a number\n  -h, --help        help for tool\n",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			streams, _, out, errOut := Test()
			cmd := &cobra.Command{
				Use:   "tool",
				Short: "a test tool",
				Args:  cobra.MaximumNArgs(2),
				RunE: func(*cobra.Command, []string) error {
					if tt.run == nil {
						return nil
					}
					return tt.run()
				},
			}
			cmd.Flags().Int("count", 0, "a number")
			code := Main("tool", cmd, streams, tt.args)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d", code, tt.wantCode)
			}
			if got := errOut.String(); got != tt.wantStderr {
				t.Errorf("stderr =\n%s\nwant\n%s", got, tt.wantStderr)
			}
			if got := out.String(); got != tt.wantStdout {
				t.Errorf("stdout =\n%s\nwant\n%s", got, tt.wantStdout)
			}
		})
	}
}

func TestMain_LoadsConfigBeforeRun(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(EnvConfig, "")
	t.Setenv("GOVKIT_COUNT", "7")

	streams, _, _, _ := Test()
	var count int
	preRan := false
	cmd := &cobra.Command{
		Use:    "tool",
		PreRun: func(*cobra.Command, []string) { preRan = true },
		RunE:   func(*cobra.Command, []string) error { return nil },
	}
	cmd.Flags().IntVar(&count, "count", 0, "a number")
	if code := Main("tool", cmd, streams, nil); code != 0 {
		t.Fatalf("exit code = %d, want 0", code)
	}
	if count != 7 {
		t.Errorf("count = %d, want 7 from GOVKIT_COUNT", count)
	}
	if !preRan {
		t.Error("the command's own PreRun did not run after config loading")
	}
}

func TestMain_ConfigErrorIsExit3(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(EnvConfig, "")
	t.Setenv("GOVKIT_COUNT", "seven")

	streams, _, _, errOut := Test()
	ran := false
	cmd := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { ran = true; return nil }}
	cmd.Flags().Int("count", 0, "a number")
	if code := Main("tool", cmd, streams, nil); code != 3 {
		t.Fatalf("exit code = %d, want 3", code)
	}
	if ran {
		t.Error("the command ran despite a bad GOVKIT_COUNT")
	}
	want := "tool: error: GOVKIT_COUNT: invalid value \"seven\": strconv.ParseInt: parsing \"seven\": invalid syntax\n" +
		"tool: hint: fix or unset GOVKIT_COUNT (it sets --count)\n"
	if errOut.String() != want {
		t.Errorf("stderr =\n%s\nwant\n%s", errOut, want)
	}
}

func TestMain_Completion(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv(EnvConfig, "")
	tests := []struct {
		args       []string
		wantCode   int
		wantStdout string // substring
		wantStderr string
	}{
		{[]string{"completion", "bash"}, 0, "__start_tool", ""},
		{[]string{"completion"}, 0, "Generate the autocompletion script for tool", ""},
		{[]string{"completion", "tcsh"}, 3, "",
			"tool: error: unknown command \"tcsh\" for \"tool completion\"\ntool: hint: run 'tool completion --help' for usage\n"},
		// Without completion in the arguments the command does not exist, so
		// a tool without subcommands keeps taking any arguments.
		{[]string{"x"}, 0, "", ""},
	}
	for _, tt := range tests {
		streams, _, out, errOut := Test()
		cmd := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return nil }}
		code := Main("tool", cmd, streams, tt.args)
		if code != tt.wantCode {
			t.Errorf("%q: exit code = %d, want %d", tt.args, code, tt.wantCode)
		}
		if !strings.Contains(out.String(), tt.wantStdout) {
			t.Errorf("%q: stdout lacks %q:\n%s", tt.args, tt.wantStdout, out)
		}
		if errOut.String() != tt.wantStderr {
			t.Errorf("%q: stderr = %q, want %q", tt.args, errOut, tt.wantStderr)
		}
	}
}
