package auditd

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/token"
)

// isolate keeps this machine's config file and environment out of a test.
func isolate(t *testing.T) {
	t.Helper()
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_CONFIG", "")
	t.Setenv("GOVKIT_TOKENS_FILE", "")
	t.Setenv("GOVKIT_OUTPUT", "")
}

func TestTokenCreateFlags(t *testing.T) {
	for _, tc := range []struct {
		name   string
		env    string // GOVKIT_TOKENS_FILE
		args   []string
		tokens string
		roles  []token.Role
		err    string // stderr, "" for success
	}{
		{"flags", "", []string{"--tokens", "t.yaml", "--name", "alice", "--roles", "approver,auditor"},
			"t.yaml", []token.Role{token.Approver, token.Auditor}, ""},
		{"environment", "/etc/t.yaml", []string{"--name", "alice", "--roles", "admin"},
			"/etc/t.yaml", []token.Role{token.Admin}, ""},
		{"flag wins", "/etc/t.yaml", []string{"--tokens", "t.yaml", "--name", "alice", "--roles", "agent"},
			"t.yaml", []token.Role{token.Agent}, ""},
		{"no tokens file", "", []string{"--name", "alice", "--roles", "agent"}, "", nil,
			"auditd: error: --tokens is required\nauditd: hint: pass --tokens FILE or set GOVKIT_TOKENS_FILE\n"},
		{"no name", "", []string{"--tokens", "t.yaml", "--roles", "agent"}, "", nil,
			"auditd: error: --name is required\nauditd: hint: pass --name NAME: the name auditd records for whoever uses the token\n"},
		{"bad name", "", []string{"--tokens", "t.yaml", "--name", "alice smith", "--roles", "agent"}, "", nil,
			"auditd: error: token name \"alice smith\" may hold only letters, digits and . - _ @\n" +
				"auditd: hint: pass --name with letters, digits and . - _ @, starting with a letter or a digit (e.g. alice or ci-bot@build)\n"},
		{"no roles", "", []string{"--tokens", "t.yaml", "--name", "alice"}, "", nil,
			"auditd: error: --roles is required\nauditd: hint: pass --roles with one or more of agent, approver, auditor, admin, gateway, comma-separated\n"},
		{"bad role", "", []string{"--tokens", "t.yaml", "--name", "alice", "--roles", "approver,root"}, "", nil,
			"auditd: error: unknown role \"root\" (roles: agent, approver, auditor, admin, gateway)\n" +
				"auditd: hint: pass --roles with one or more of agent, approver, auditor, admin, gateway, comma-separated\n"},
		{"argument", "", []string{"--tokens", "t.yaml", "--name", "alice", "--roles", "agent", "extra"}, "", nil,
			"auditd: error: unknown command \"extra\" for \"create\"\nauditd: hint: run 'create --help' for usage\n"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			isolate(t)
			t.Setenv("GOVKIT_TOKENS_FILE", tc.env)
			streams, _, _, errOut := cli.Test()
			var got *TokenCreateOptions
			cmd := newCmdTokenCreate(streams, func(o *TokenCreateOptions) error { got = o; return nil })
			code := cli.Main("auditd", cmd, streams, tc.args)
			if tc.err != "" {
				if code != 3 || got != nil || errOut.String() != tc.err {
					t.Fatalf("exit %d, options %v, stderr:\n%s\nwant:\n%s", code, got, errOut, tc.err)
				}
				return
			}
			if code != 0 || got == nil {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			if got.Tokens != tc.tokens || got.Name != "alice" || !slices.Equal(got.Roles, tc.roles) || got.Random == nil {
				t.Errorf("options %+v", got)
			}
		})
	}
}

// A name or roles in a config file never reach create: they describe one
// token, not a preference. The tokens file does (it is auditd's setting).
func TestTokenCreateConfigFile(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	conf := filepath.Join(dir, "config.yaml")
	os.WriteFile(conf, []byte("auditd:\n  tokens: /etc/govkit/tokens.yaml\nname: everyone\nroles: admin\n"), 0o600)
	t.Setenv("GOVKIT_CONFIG", conf)
	streams, _, _, errOut := cli.Test()
	var got *TokenCreateOptions
	root := NewCmdAuditd(streams, nil)
	for _, c := range root.Commands() {
		if c.Name() == "token" {
			c.RemoveCommand(c.Commands()...)
			c.AddCommand(newCmdTokenCreate(streams, func(o *TokenCreateOptions) error { got = o; return nil }))
		}
	}
	code := cli.Main("auditd", root, streams, []string{"token", "create", "--name", "bob", "--roles", "agent"})
	if code != 0 || got == nil || got.Tokens != "/etc/govkit/tokens.yaml" || got.Name != "bob" || !slices.Equal(got.Roles, []token.Role{token.Agent}) {
		t.Fatalf("exit %d, options %+v, stderr %s", code, got, errOut)
	}

	os.WriteFile(conf, []byte("auditd:\n  name: everyone\n"), 0o600)
	streams, _, _, errOut = cli.Test()
	code = cli.Main("auditd", NewCmdAuditd(streams, nil), streams, []string{"token", "create", "--tokens", "t.yaml", "--name", "bob", "--roles", "agent"})
	if code != 3 || !strings.Contains(errOut.String(), `auditd: error: config file `+conf+`: unknown key "auditd.name"`) {
		t.Errorf("exit %d, stderr %s", code, errOut)
	}
}

// run runs the real auditd command tree.
func run(t *testing.T, tty bool, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	streams, _, out, errOut := cli.Test()
	streams.SetStdoutTTY(tty)
	code = cli.Main("auditd", NewCmdAuditd(streams, nil), streams, args)
	return code, out.String(), errOut.String()
}

func TestTokenCommands(t *testing.T) {
	isolate(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "tokens.yaml")

	code, out, errOut := run(t, false, "token", "create", "--tokens", file, "--name", "alice", "--roles", "approver,auditor")
	if code != 0 || !regexp.MustCompile(`^gk_[A-Za-z0-9_-]{43}\n$`).MatchString(out) {
		t.Fatalf("create: exit %d, stdout %q, stderr %s", code, out, errOut)
	}
	if want := "auditd: added alice (approver,auditor) to " + file + "; the token is shown only once\n"; errOut != want {
		t.Errorf("create stderr %q, want %q", errOut, want)
	}
	alice := strings.TrimSpace(out)
	if fi, err := os.Stat(file); err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("tokens file: %v %v", err, fi.Mode())
	}
	if data, _ := os.ReadFile(file); bytes.Contains(data, []byte(alice)) {
		t.Error("the tokens file holds the token")
	}

	t.Setenv("GOVKIT_TOKENS_FILE", file)
	if code, _, errOut := run(t, false, "token", "create", "--name", "ci-bot@build", "--roles", "agent"); code != 0 {
		t.Fatalf("create: exit %d: %s", code, errOut)
	}

	// list: a table on a terminal, JSON Lines otherwise; never a hash.
	code, out, errOut = run(t, true, "token", "list")
	want := "NAME          ROLES             ACTS FOR\nalice         approver,auditor  (itself)\nci-bot@build  agent             (itself)\n"
	if code != 0 || out != want || errOut != "" {
		t.Errorf("list: exit %d, stdout:\n%s\nwant:\n%s\nstderr %s", code, out, want, errOut)
	}
	code, out, _ = run(t, false, "token", "list")
	want = `{"schema_version":1,"name":"alice","roles":["approver","auditor"]}` + "\n" +
		`{"schema_version":1,"name":"ci-bot@build","roles":["agent"]}` + "\n"
	if code != 0 || out != want {
		t.Errorf("list -o json: exit %d, stdout:\n%s\nwant:\n%s", code, out, want)
	}
	if code, out2, _ := run(t, true, "token", "list", "-o", "json"); code != 0 || out2 != want {
		t.Errorf("list -o json on a terminal: %s", out2)
	}

	// Refusals: exit 3, one error and one hint, nothing on stdout.
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"token", "create", "--name", "Alice", "--roles", "agent"},
			"auditd: error: " + file + ":5: a token named \"alice\" already exists\n" +
				"auditd: hint: pass another --name; to replace that token, remove it first with 'auditd token revoke'\n"},
		{[]string{"token", "revoke", "--name", "bob"},
			"auditd: error: " + file + ": no token named \"bob\"\n" +
				"auditd: hint: run 'auditd token list --tokens " + file + "' for the names\n"},
		{[]string{"token", "revoke"},
			"auditd: error: --name is required\nauditd: hint: pass --name NAME; 'auditd token list' prints the names\n"},
		{[]string{"token", "list", "--tokens", filepath.Join(dir, "missing.yaml")},
			"auditd: error: tokens file: stat " + filepath.Join(dir, "missing.yaml") + ": no such file or directory\n" +
				"auditd: hint: check --tokens (or GOVKIT_TOKENS_FILE); 'auditd token create' makes the file\n"},
		{[]string{"token", "create", "--tokens", filepath.Join(dir, "no", "t.yaml"), "--name", "a", "--roles", "agent"},
			"auditd: error: tokens file " + filepath.Join(dir, "no", "t.yaml") + ": directory: no such file or directory\n" +
				"auditd: hint: create the directory first (create makes only the file), or pass another --tokens\n"},
		{[]string{"token", "bogus"},
			"auditd: error: unknown command \"bogus\" for \"auditd token\"\nauditd: hint: run 'auditd token --help' for usage\n"},
	} {
		code, out, errOut := run(t, false, tc.args...)
		if code != 3 || out != "" || errOut != tc.want {
			t.Errorf("%v: exit %d, stdout %q, stderr:\n%s\nwant:\n%s", tc.args, code, out, errOut, tc.want)
		}
	}

	// revoke
	code, out, errOut = run(t, false, "token", "revoke", "--name", "alice")
	if code != 0 || out != "" || errOut != "auditd: revoked alice in "+file+"\n" {
		t.Errorf("revoke: exit %d, stdout %q, stderr %q", code, out, errOut)
	}
	f, err := token.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := f.Lookup(alice); ok || f.Len() != 1 {
		t.Errorf("after revoke: %d tokens, alice found %v", f.Len(), ok)
	}

	// An unsafe file is refused with the chmod to run.
	os.Chmod(file, 0o666)
	code, _, errOut = run(t, false, "token", "list")
	if code != 3 || !strings.Contains(errOut, "is writable by group or others (mode 0666)") ||
		!strings.Contains(errOut, "auditd: hint: run 'chmod go-w "+file+"', and check who changed it") {
		t.Errorf("unsafe file: exit %d, stderr %s", code, errOut)
	}
	os.Chmod(file, 0o600)

	// An empty file lists as such.
	empty := filepath.Join(dir, "empty.yaml")
	os.WriteFile(empty, nil, 0o600)
	if code, out, _ := run(t, true, "token", "list", "--tokens", empty); code != 0 || out != empty+": no tokens (no one can log in to auditd)\n" {
		t.Errorf("empty list: exit %d, %q", code, out)
	}
	if code, out, _ := run(t, false, "token", "list", "--tokens", empty); code != 0 || out != "" {
		t.Errorf("empty list, json: exit %d, %q", code, out)
	}
}

func TestTokenHelp(t *testing.T) {
	isolate(t)
	code, out, _ := run(t, false, "token")
	for _, s := range []string{"ROLE       MAY", "approver   list approval requests", "create", "list", "revoke"} {
		if code != 0 || !strings.Contains(out, s) {
			t.Errorf("auditd token: exit %d, no %q in:\n%s", code, s, out)
		}
	}
}
