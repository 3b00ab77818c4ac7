package secbot

import (
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
)

// TestFlags: argv and environment → options, or a usage error (exit 3)
// that names the flag.
func TestFlags(t *testing.T) {
	long := "/tmp/" + strings.Repeat("s", 120)
	tests := []struct {
		name string
		args []string
		env  map[string]string
		// want checks the options; nil when an error is expected.
		want    func(t *testing.T, o *Options)
		errLine string // the stderr "error:" line's message, when failing
		hint    string // a substring of the hint line
	}{
		{name: "defaults", args: []string{"--socket", "/tmp/s"}, want: func(t *testing.T, o *Options) {
			if o.Socket != "/tmp/s" || o.Gateway != client.DefaultURL || o.Listen != DefaultListen ||
				o.Cooldown != 5*time.Minute || o.DryRun || o.SinceSeq != client.Live || o.Token != "" {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "the seed's command line", args: []string{"--socket", "/tmp/helpdesk-audit.sock", "--gateway", "http://localhost:8080", "--listen", ":9091", "--cooldown", "5m"},
			want: func(t *testing.T, o *Options) {
				if o.Gateway != "http://localhost:8080" || o.Listen != ":9091" || o.Cooldown != 5*time.Minute {
					t.Errorf("options = %+v", o)
				}
			}},
		// Issue 20: --url and GOVKIT_URL, as in every client binary.
		{name: "url", args: []string{"--socket", "/tmp/s", "--url", "http://10.0.0.2:1199"}, want: func(t *testing.T, o *Options) {
			if o.Gateway != "http://10.0.0.2:1199" {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "GOVKIT_URL", args: []string{"--socket", "/tmp/s"}, env: map[string]string{"GOVKIT_URL": "http://10.0.0.3:1199"},
			want: func(t *testing.T, o *Options) {
				if o.Gateway != "http://10.0.0.3:1199" {
					t.Errorf("options = %+v", o)
				}
			}},
		{name: "the seed's dry run", args: []string{"--socket", "/tmp/helpdesk-audit.sock", "--dry-run"}, want: func(t *testing.T, o *Options) {
			if !o.DryRun {
				t.Error("not a dry run")
			}
		}},
		{name: "environment", args: []string{"--since-seq", "0"}, env: map[string]string{
			"GOVKIT_AUDIT_SOCKET": "/tmp/e", "GOVKIT_AUDIT_URL": "http://127.0.0.1:7", "GOVKIT_TOKEN": "tok",
			"GOVKIT_SECBOT_LISTEN": "", "GOVKIT_SECBOT_COOLDOWN": "90s", "GOVKIT_SECBOT_DRY_RUN": "true",
		}, want: func(t *testing.T, o *Options) {
			// An empty variable counts as unset: --listen keeps its default.
			if o.Socket != "/tmp/e" || o.Gateway != "http://127.0.0.1:7" || o.Token != "tok" || o.Listen != DefaultListen ||
				o.Cooldown != 90*time.Second || !o.DryRun || o.SinceSeq != 0 {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "flags win over the environment", args: []string{"--socket", "/tmp/f", "--listen", ""},
			env: map[string]string{"GOVKIT_AUDIT_SOCKET": "/tmp/e"}, want: func(t *testing.T, o *Options) {
				if o.Socket != "/tmp/f" || o.Listen != "" {
					t.Errorf("options = %+v", o)
				}
			}},

		{name: "no socket", args: nil, errLine: "--socket is required: secbot follows auditd's event stream", hint: "GOVKIT_AUDIT_SOCKET"},
		{name: "socket too long", args: []string{"--socket", long}, errLine: "--socket path is 125 bytes long; the limit is 103", hint: "shorter --socket"},
		{name: "bad gateway", args: []string{"--socket", "/tmp/s", "--gateway", "localhost:1199"},
			errLine: `--gateway: auditd URL "localhost:1199" is not http://HOST:PORT`, hint: "--url http://HOST:PORT"},
		{name: "bad url", args: []string{"--socket", "/tmp/s", "--url", "localhost:1199"},
			errLine: `--url: auditd URL "localhost:1199" is not http://HOST:PORT`, hint: "--url http://HOST:PORT"},
		{name: "bad gateway from the environment", args: []string{"--socket", "/tmp/s"}, env: map[string]string{"GOVKIT_AUDIT_URL": "ftp://x"},
			errLine: `--url (from GOVKIT_AUDIT_URL): auditd URL "ftp://x" is not http://HOST:PORT`},
		{name: "bad listen", args: []string{"--socket", "/tmp/s", "--listen", "9091"}, errLine: `--listen "9091": not HOST:PORT`, hint: "--listen ''"},
		{name: "bad listen port", args: []string{"--socket", "/tmp/s", "--listen", "127.0.0.1:http"}, errLine: `--listen "127.0.0.1:http": port "http" is not a number from 0 to 65535`},
		{name: "url-file", args: []string{"--socket", "/tmp/s", "--listen", "127.0.0.1:0", "--url-file", "/tmp/u"}, want: func(t *testing.T, o *Options) {
			if o.URLFile != "/tmp/u" {
				t.Errorf("options = %+v", o)
			}
		}},
		{name: "url-file without listen", args: []string{"--socket", "/tmp/s", "--listen", "", "--url-file", "/tmp/u"},
			errLine: "--url-file needs --listen: it names the address secbot serves on", hint: "--listen 127.0.0.1:0"},
		{name: "url-file with once", args: []string{"--once", "--url-file", "/tmp/u"},
			errLine: "--url-file needs --listen: it names the address secbot serves on"},
		{name: "zero cooldown", args: []string{"--socket", "/tmp/s", "--cooldown", "0s"}, errLine: "--cooldown 0s must be positive and at most 24h", hint: "--cooldown"},
		{name: "long cooldown", args: []string{"--socket", "/tmp/s", "--cooldown", "25h"}, errLine: "--cooldown 25h0m0s must be positive and at most 24h"},
		{name: "cooldown not a duration", args: []string{"--socket", "/tmp/s", "--cooldown", "5"}, errLine: `invalid argument "5" for "--cooldown" flag: time: missing unit in duration "5"`},
		{name: "cooldown from the environment", args: []string{"--socket", "/tmp/s"}, env: map[string]string{"GOVKIT_SECBOT_COOLDOWN": "-1m"},
			errLine: "--cooldown (from GOVKIT_SECBOT_COOLDOWN) -1m0s must be positive and at most 24h"},
		{name: "since-seq below -1", args: []string{"--socket", "/tmp/s", "--since-seq", "-2"}, errLine: "--since-seq -2 is negative", hint: "--since-seq 0"},
		{name: "an argument", args: []string{"--socket", "/tmp/s", "extra"}, errLine: `unknown command "extra" for "secbot"`},
		{name: "unknown flag", args: []string{"--socket", "/tmp/s", "--interval", "5s"}, errLine: "unknown flag: --interval"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Setenv("XDG_CONFIG_HOME", t.TempDir())
			for _, v := range []string{"GOVKIT_AUDIT_SOCKET", "GOVKIT_AUDIT_URL", "GOVKIT_TOKEN", "GOVKIT_SECBOT_LISTEN",
				"GOVKIT_SECBOT_COOLDOWN", "GOVKIT_SECBOT_DRY_RUN", "GOVKIT_CONFIG", "GOVKIT_OUTPUT", "GOVKIT_URL"} {
				t.Setenv(v, tt.env[v])
			}
			streams, _, stdout, stderr := cli.Test()
			var got *Options
			cmd := newCmd(&Options{IO: streams}, func(o *Options) error { got = o; return nil })
			code := cli.Main("secbot", cmd, streams, tt.args)
			if tt.want != nil {
				if code != 0 || got == nil {
					t.Fatalf("exit %d, stderr:\n%s", code, stderr)
				}
				tt.want(t, got)
				return
			}
			if code != cli.ExitFailure || got != nil {
				t.Fatalf("exit %d (ran: %v), want 3", code, got != nil)
			}
			if stdout.Len() != 0 {
				t.Errorf("stdout: %q", stdout)
			}
			lines := strings.Split(strings.TrimSuffix(stderr.String(), "\n"), "\n")
			if lines[0] != "secbot: error: "+tt.errLine {
				t.Errorf("stderr line 1 = %q\nwant            %q", lines[0], "secbot: error: "+tt.errLine)
			}
			if tt.hint != "" && (len(lines) < 2 || !strings.HasPrefix(lines[1], "secbot: hint: ") || !strings.Contains(lines[1], tt.hint)) {
				t.Errorf("stderr = %q, want a hint with %q", stderr, tt.hint)
			}
		})
	}
}

func eventWithID(id string, seq int64) audit.Event { return audit.Event{EventID: id, Seq: seq} }
