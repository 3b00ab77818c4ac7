package cli

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// testSettings are the flags of a small binary, "tool", with a subcommand.
type testSettings struct {
	output Format
	cwd    string
	null   bool
	count  int
	tags   []string
	url    string
}

func newTestTree(s *testSettings) *cobra.Command {
	root := &cobra.Command{Use: "tool", RunE: func(*cobra.Command, []string) error { return nil }}
	AddOutputFlag(root, &s.output)
	AddConfigFlag(root)
	root.Flags().StringVar(&s.cwd, "cwd", "", "directory")
	root.Flags().BoolVarP(&s.null, "null", "0", false, "NUL-separated input")
	root.Flags().IntVar(&s.count, "count", 1, "a number")
	root.Flags().StringSliceVar(&s.tags, "tags", nil, "tags")
	SkipConfig(root.Flags(), "null")
	AddURLFlag(root.Flags(), &s.url, "", "auditd", "gateway")
	KeepEnv(root.Flags(), "url", "GOVKIT_AUDIT_URL")
	root.AddCommand(&cobra.Command{Use: "hook", RunE: func(*cobra.Command, []string) error { return nil }})
	root.Commands()[0].Flags().String("agent", "", "agent")
	return root
}

func TestConfigPrecedence(t *testing.T) {
	tests := []struct {
		name   string
		args   []string
		env    map[string]string
		user   string // user config file contents ("" = no file)
		system string // system config file contents ("" = no file)
		want   testSettings
	}{
		{
			name: "defaults",
			want: testSettings{count: 1},
		},
		{
			name:   "system file shared key",
			system: "output: json\n",
			want:   testSettings{output: FormatJSON, count: 1},
		},
		{
			name: "section beats shared key in the same file",
			user: "output: json\ntool:\n  output: text\n",
			want: testSettings{output: FormatText, count: 1},
		},
		{
			name:   "user file beats system file key by key",
			user:   "tool:\n  count: 5\n",
			system: "output: json\ntool:\n  count: 9\n  cwd: /srv\n",
			want:   testSettings{output: FormatJSON, count: 5, cwd: "/srv"},
		},
		{
			name:   "a shared key in the user file beats the system file's section",
			user:   "count: 4\n",
			system: "tool:\n  count: 9\n",
			want:   testSettings{count: 4},
		},
		{
			name: "env beats config file",
			env:  map[string]string{"GOVKIT_OUTPUT": "text", "GOVKIT_COUNT": "3"},
			user: "tool:\n  output: json\n  count: 9\n",
			want: testSettings{output: FormatText, count: 3},
		},
		{
			name: "flag beats env and config file",
			args: []string{"-o", "json", "--count=2"},
			env:  map[string]string{"GOVKIT_OUTPUT": "text", "GOVKIT_COUNT": "3"},
			user: "output: text\n",
			want: testSettings{output: FormatJSON, count: 2},
		},
		{
			name: "empty env var counts as unset",
			env:  map[string]string{"GOVKIT_OUTPUT": ""},
			user: "output: json\n",
			want: testSettings{output: FormatJSON, count: 1},
		},
		{
			name: "hyphenated and list values",
			env:  map[string]string{"GOVKIT_TAGS": "a,b"},
			want: testSettings{count: 1, tags: []string{"a", "b"}},
		},
		{
			name: "yaml list into a slice flag",
			user: "tool:\n  tags: [x, y, 3]\n",
			want: testSettings{count: 1, tags: []string{"x", "y", "3"}},
		},
		{
			name: "flags that skip config ignore env and are not config keys",
			env:  map[string]string{"GOVKIT_NULL": "true"},
			want: testSettings{count: 1},
		},
		{
			name: "other binaries' sections are ignored",
			user: "approvals:\n  url: http://127.0.0.1:1199\n  bogus: 1\ntool:\n  cwd: /x\n",
			want: testSettings{count: 1, cwd: "/x"},
		},
		{
			name: "keys are case-insensitive",
			user: "TOOL:\n  Output: json\n",
			want: testSettings{output: FormatJSON, count: 1},
		},
		{
			name: "a subcommand's flag is a known key",
			user: "tool:\n  agent: claude\n",
			want: testSettings{count: 1},
		},
		{
			name: "empty file",
			user: "\n",
			want: testSettings{count: 1},
		},
		// The environment rule (issue 20): this binary's variable, then
		// the older names a flag keeps, then the shared one; a former
		// spelling's variables after the flag's own.
		{
			name: "the binary's own variable beats the shared one",
			env:  map[string]string{"GOVKIT_TOOL_COUNT": "7", "GOVKIT_COUNT": "3"},
			want: testSettings{count: 7},
		},
		{
			name: "a kept older name beats the shared variable",
			env:  map[string]string{"GOVKIT_AUDIT_URL": "http://old", "GOVKIT_URL": "http://new"},
			want: testSettings{count: 1, url: "http://old"},
		},
		{
			name: "the shared variable alone",
			env:  map[string]string{"GOVKIT_URL": "http://new"},
			want: testSettings{count: 1, url: "http://new"},
		},
		{
			name: "a former spelling's variable",
			env:  map[string]string{"GOVKIT_GATEWAY": "http://gw"},
			want: testSettings{count: 1, url: "http://gw"},
		},
		{
			name: "the flag's variables beat its former spelling's",
			env:  map[string]string{"GOVKIT_GATEWAY": "http://gw", "GOVKIT_TOOL_URL": "http://tool"},
			want: testSettings{count: 1, url: "http://tool"},
		},
		{
			name: "a former spelling on the command line",
			args: []string{"--gateway", "http://flag"},
			env:  map[string]string{"GOVKIT_URL": "http://env"},
			want: testSettings{count: 1, url: "http://flag"},
		},
		{
			name: "the new spelling on the command line beats an old variable",
			args: []string{"--url", "http://flag"},
			env:  map[string]string{"GOVKIT_GATEWAY": "http://gw", "GOVKIT_AUDIT_URL": "http://old"},
			want: testSettings{count: 1, url: "http://flag"},
		},
		{
			name: "a former spelling as a config key",
			user: "tool:\n  gateway: http://file\n",
			want: testSettings{count: 1, url: "http://file"},
		},
		{
			name: "the section's former spelling beats the shared new key",
			user: "url: http://shared\ntool:\n  gateway: http://section\n",
			want: testSettings{count: 1, url: "http://section"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var got testSettings
			root := newTestTree(&got)
			loader := testLoader(t, tt.env, tt.user, tt.system)
			if err := root.ParseFlags(tt.args); err != nil {
				t.Fatal(err)
			}
			if err := loader.Load(root); err != nil {
				t.Fatalf("Load: %v", err)
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("settings = %+v, want %+v", got, tt.want)
			}
		})
	}
}

func TestConfigErrors(t *testing.T) {
	tests := []struct {
		name     string
		args     []string
		env      map[string]string
		user     string
		wantErr  string
		wantHint string
	}{
		{
			name:     "unknown key in own section",
			user:     "tool:\n  outptu: json\n",
			wantErr:  `config file USER: unknown key "tool.outptu"`,
			wantHint: `the keys of section "tool" are the long flag names of tool: agent, count, cwd, gateway, output, tags, url`,
		},
		{
			name:    "flag that skips config is unknown as a key",
			user:    "tool:\n  \"null\": true\n",
			wantErr: `config file USER: unknown key "tool.null"`,
		},
		{
			name:     "bad value names key and file",
			user:     "tool:\n  output: yaml\n",
			wantErr:  `config file USER: key "tool.output": invalid value "yaml": output format must be text or json`,
			wantHint: `fix "tool.output" in USER (it sets --output)`,
		},
		{
			name:    "bad shared value",
			user:    "count: lots\n",
			wantErr: `config file USER: key "count": invalid value "lots": strconv.ParseInt: parsing "lots": invalid syntax`,
		},
		{
			name:    "yaml null key",
			user:    "tool:\n  null: true\n",
			wantErr: `config file USER: empty or null key in section "tool"`,
		},
		{
			name:    "list for a scalar flag",
			user:    "tool:\n  cwd: [a, b]\n",
			wantErr: `config file USER: key "tool.cwd": must be a single value, not a list`,
		},
		{
			name:    "empty value",
			user:    "tool:\n  cwd:\n",
			wantErr: `config file USER: key "tool.cwd": has no value`,
		},
		{
			name:    "section is not a mapping",
			user:    "tool: json\n",
			wantErr: `config file USER: key "tool" must be a mapping of tool settings`,
		},
		{
			name:    "invalid yaml",
			user:    "tool:\n  output: json\n   cwd: x\n",
			wantErr: `config file USER: yaml: line 3: mapping values are not allowed in this context`,
		},
		{
			name:     "bad env value names the variable",
			env:      map[string]string{"GOVKIT_OUTPUT": "xml"},
			wantErr:  `GOVKIT_OUTPUT: invalid value "xml": output format must be text or json`,
			wantHint: `fix or unset GOVKIT_OUTPUT (it sets --output)`,
		},
		{
			name:     "explicit file must exist",
			args:     []string{"--config", "MISSING"},
			wantErr:  `config file MISSING: no such file or directory`,
			wantHint: `check the file named by --config or GOVKIT_CONFIG`,
		},
		{
			name:    "GOVKIT_CONFIG file must exist",
			env:     map[string]string{"GOVKIT_CONFIG": "MISSING"},
			wantErr: `config file MISSING: no such file or directory`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var s testSettings
			root := newTestTree(&s)
			loader := testLoader(t, tt.env, tt.user, "")
			missing := filepath.Join(t.TempDir(), "missing.yaml")
			args := replaceAll(tt.args, "MISSING", missing)
			for k, v := range tt.env {
				loader.env[k] = strings.ReplaceAll(v, "MISSING", missing)
			}
			if err := root.ParseFlags(args); err != nil {
				t.Fatal(err)
			}
			err := loader.Load(root)
			if err == nil {
				t.Fatalf("Load succeeded with settings %+v, want error %q", s, tt.wantErr)
			}
			expand := func(s string) string {
				return strings.NewReplacer("USER", loader.DefaultFiles[0], "MISSING", missing).Replace(s)
			}
			if got, want := err.Error(), expand(tt.wantErr); got != want {
				t.Errorf("error = %q\nwant    %q", got, want)
			}
			ee, ok := err.(*ExitError)
			if !ok || ee.Code != ExitFailure {
				t.Fatalf("error is %T, want *ExitError with code 3", err)
			}
			if tt.wantHint != "" && ee.Hint != expand(tt.wantHint) {
				t.Errorf("hint = %q\nwant   %q", ee.Hint, expand(tt.wantHint))
			}
		})
	}
}

func TestConfigExplicitFileReplacesDefaults(t *testing.T) {
	var s testSettings
	root := newTestTree(&s)
	loader := testLoader(t, nil, "output: text\ncount: 8\n", "")
	explicit := filepath.Join(t.TempDir(), "explicit.yaml")
	if err := os.WriteFile(explicit, []byte("tool:\n  output: json\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want testSettings
	}{
		{args: []string{"--config", explicit}, want: testSettings{output: FormatJSON, count: 1}},
		{env: map[string]string{"GOVKIT_CONFIG": explicit}, want: testSettings{output: FormatJSON, count: 1}},
		{args: []string{"--config", ""}, want: testSettings{count: 1}},
		{args: []string{"--config", explicit}, env: map[string]string{"GOVKIT_CONFIG": "/nonexistent"}, want: testSettings{output: FormatJSON, count: 1}},
	} {
		s = testSettings{}
		root = newTestTree(&s)
		loader.env = map[string]string{}
		for k, v := range tc.env {
			loader.env[k] = v
		}
		if err := root.ParseFlags(tc.args); err != nil {
			t.Fatal(err)
		}
		if err := loader.Load(root); err != nil {
			t.Fatalf("args %q env %v: %v", tc.args, tc.env, err)
		}
		if !reflect.DeepEqual(s, tc.want) {
			t.Errorf("args %q env %v: settings = %+v, want %+v", tc.args, tc.env, s, tc.want)
		}
	}
}

func TestConfigOversizedFile(t *testing.T) {
	var s testSettings
	root := newTestTree(&s)
	loader := testLoader(t, nil, "# "+strings.Repeat("x", maxConfigBytes)+"\n", "")
	err := loader.Load(root)
	if err == nil || !strings.Contains(err.Error(), "larger than 1 MiB") {
		t.Fatalf("error = %v, want a size error", err)
	}
}

func TestDefaultConfigFiles(t *testing.T) {
	tests := []struct {
		env  map[string]string
		want []string
	}{
		{map[string]string{"XDG_CONFIG_HOME": "/x", "HOME": "/h"}, []string{"/x/govkit/config.yaml", "/etc/govkit/config.yaml"}},
		{map[string]string{"HOME": "/h"}, []string{"/h/.config/govkit/config.yaml", "/etc/govkit/config.yaml"}},
		{map[string]string{"XDG_CONFIG_HOME": "relative", "HOME": "/h"}, []string{"/h/.config/govkit/config.yaml", "/etc/govkit/config.yaml"}},
		{map[string]string{}, []string{"/etc/govkit/config.yaml"}},
	}
	for _, tt := range tests {
		got := DefaultConfigFiles(func(k string) (string, bool) { v, ok := tt.env[k]; return v, ok })
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("DefaultConfigFiles(%v) = %q, want %q", tt.env, got, tt.want)
		}
	}
}

func TestEnvNames(t *testing.T) {
	var s testSettings
	root := newTestTree(&s)
	root.Flags().String("audit-url", "", "")
	for flag, want := range map[string][]string{
		"output":    {"GOVKIT_TOOL_OUTPUT", "GOVKIT_OUTPUT"},
		"audit-url": {"GOVKIT_TOOL_AUDIT_URL", "GOVKIT_AUDIT_URL"},
		"url":       {"GOVKIT_TOOL_URL", "GOVKIT_AUDIT_URL", "GOVKIT_URL"},
		"gateway":   {"GOVKIT_TOOL_GATEWAY", "GOVKIT_GATEWAY"},
		"null":      nil,
	} {
		if got := EnvNames("tool", root.Flags().Lookup(flag)); !reflect.DeepEqual(got, want) {
			t.Errorf("EnvNames(--%s) = %q, want %q", flag, got, want)
		}
	}
	if got := EnvNames("tool", root.PersistentFlags().Lookup("config")); got != nil {
		t.Errorf("EnvNames(--config) = %q, want none (GOVKIT_CONFIG names the file)", got)
	}
	if got := EnvNames("verify-chain", root.Flags().Lookup("cwd")); !reflect.DeepEqual(got, []string{"GOVKIT_VERIFY_CHAIN_CWD", "GOVKIT_CWD"}) {
		t.Errorf("EnvNames(verify-chain --cwd) = %q", got)
	}
	if f := root.Flags().Lookup("gateway"); !f.Hidden || AliasOf(f) != "url" {
		t.Errorf("--gateway: hidden %v, alias of %q; want a hidden alias of --url", f.Hidden, AliasOf(f))
	}
	if got := Aliases(root.Flags(), "url"); !reflect.DeepEqual(got, []string{"gateway"}) {
		t.Errorf("Aliases(url) = %q", got)
	}
}

// envLoader is a ConfigLoader over a map environment and two files in a
// temporary directory; a file with empty contents is not created.
type envLoader struct {
	*ConfigLoader
	env map[string]string
}

func testLoader(t *testing.T, env map[string]string, user, system string) *envLoader {
	t.Helper()
	dir := t.TempDir()
	l := &envLoader{env: map[string]string{}}
	for k, v := range env {
		l.env[k] = v
	}
	files := []string{filepath.Join(dir, "user.yaml"), filepath.Join(dir, "system.yaml")}
	for i, contents := range []string{user, system} {
		if contents == "" {
			continue
		}
		if err := os.WriteFile(files[i], []byte(contents), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	l.ConfigLoader = &ConfigLoader{
		Prog:         "tool",
		LookupEnv:    func(k string) (string, bool) { v, ok := l.env[k]; return v, ok },
		DefaultFiles: files,
	}
	return l
}

func replaceAll(args []string, old, new string) []string {
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = strings.ReplaceAll(a, old, new)
	}
	return out
}

func TestFlagSource(t *testing.T) {
	var s testSettings
	root := newTestTree(&s)
	loader := testLoader(t, map[string]string{"GOVKIT_CWD": "/from/env"}, "tool:\n  count: 4\n", "")
	if err := root.ParseFlags([]string{"-o", "json"}); err != nil {
		t.Fatal(err)
	}
	if err := loader.Load(root); err != nil {
		t.Fatal(err)
	}
	for name, want := range map[string]string{
		"output": "",
		"cwd":    "GOVKIT_CWD",
		"count":  `"tool.count" in ` + loader.DefaultFiles[0],
		"tags":   "",
		"nope":   "",
	} {
		if got := FlagSource(root.Flags(), name); got != want {
			t.Errorf("FlagSource(%q) = %q, want %q", name, got, want)
		}
		if want != "" {
			want = " (from " + want + ")"
		}
		if got := FlagName(root.Flags(), name); got != "--"+name+want {
			t.Errorf("FlagName(%q) = %q, want %q", name, got, "--"+name+want)
		}
	}
}
