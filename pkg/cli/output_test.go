package cli

import (
	"bytes"
	"errors"
	"math"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

func TestFormatResolve(t *testing.T) {
	tests := []struct {
		format Format
		tty    bool
		want   Format
	}{
		{FormatAuto, true, FormatText},
		{FormatAuto, false, FormatJSON},
		{FormatJSON, true, FormatJSON},
		{FormatText, false, FormatText},
	}
	for _, tt := range tests {
		s, _, _, _ := Test()
		s.SetStdoutTTY(tt.tty)
		if got := tt.format.Resolve(s); got != tt.want {
			t.Errorf("Format(%q).Resolve(tty=%v) = %q, want %q", tt.format, tt.tty, got, tt.want)
		}
	}
}

func TestOutputFlag(t *testing.T) {
	tests := []struct {
		args    []string
		want    Format
		wantErr string
	}{
		{nil, FormatAuto, ""},
		{[]string{"-o", "json"}, FormatJSON, ""},
		{[]string{"--output=text"}, FormatText, ""},
		{[]string{"-ojson"}, FormatJSON, ""},
		{[]string{"-o", "yaml"}, "", `invalid argument "yaml" for "-o, --output" flag: output format must be text or json`},
		{[]string{"--output", "JSON"}, "", `for "-o, --output" flag`},
		{[]string{"-o"}, "", `flag needs an argument: 'o' in -o`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			var f Format
			cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
			AddOutputFlag(cmd, &f)
			cmd.SetArgs(tt.args)
			cmd.SilenceErrors, cmd.SilenceUsage = true, true
			err := cmd.Execute()
			if tt.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
					t.Fatalf("error = %v, want it to contain %q", err, tt.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if f != tt.want {
				t.Errorf("format = %q, want %q", f, tt.want)
			}
		})
	}
}

// Every command's JSON is one compact line, with commands readable.
func TestWriteJSON(t *testing.T) {
	for _, tc := range []struct {
		v    any
		want string
	}{
		{map[string]any{"schema_version": 1, "command": "a && b > c <d>"}, `{"command":"a && b > c <d>","schema_version":1}` + "\n"},
		{[]int{1, 2}, "[1,2]\n"},
		{"line\nbreak\x1b", `"line\nbreak\u001b"` + "\n"},
	} {
		var b bytes.Buffer
		if err := WriteJSON(&b, tc.v); err != nil || b.String() != tc.want {
			t.Errorf("WriteJSON(%v) = %q, %v; want %q", tc.v, b.String(), err, tc.want)
		}
	}
	var ee *ExitError
	if err := WriteJSON(&bytes.Buffer{}, math.NaN()); !errors.As(err, &ee) || ee.Code != ExitFailure {
		t.Errorf("WriteJSON(NaN) = %v, want an exit-3 error", err)
	}
}
