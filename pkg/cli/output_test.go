package cli

import (
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
