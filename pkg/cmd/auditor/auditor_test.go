package auditor

import (
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/cli"
)

// parse runs argv through cli.Main with runF capturing the options.
func parse(t *testing.T, args ...string) (got *Options, code int, stderr string) {
	t.Helper()
	streams, _, _, errOut := cli.Test()
	code = cli.Main("auditor", NewCmdAuditor(streams, func(o *Options) error { got = o; return nil }), streams, args)
	return got, code, errOut.String()
}

func TestFlagDefaults(t *testing.T) {
	isolate(t)
	seedHours(t)
	o, code, stderr := parse(t, "--socket", "/run/a.sock")
	if code != 0 || o == nil {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := Options{Socket: "/run/a.sock", AuditURL: "http://127.0.0.1:1199", VerifyInterval: 30 * time.Second,
		MaxPerMinute: 100, HoursStart: 6, HoursEnd: 22, ClockSkew: 5 * time.Minute, SinceSeq: -1}
	if o.Socket != want.Socket || o.AuditURL != want.AuditURL || o.VerifyInterval != want.VerifyInterval ||
		o.MaxPerMinute != want.MaxPerMinute || o.HoursStart != want.HoursStart || o.HoursEnd != want.HoursEnd ||
		o.ClockSkew != want.ClockSkew || o.SinceSeq != want.SinceSeq || o.Once || o.State != "" || o.Webhook != "" ||
		o.loc != time.Local {
		t.Errorf("options %+v", o)
	}
}

// Environment variables: the shared GOVKIT_AUDIT_* and GOVKIT_TOKEN, and
// GOVKIT_AUDITOR_* for the rest; flags win.
func TestFlagEnvironment(t *testing.T) {
	isolate(t)
	for k, v := range map[string]string{
		"GOVKIT_AUDIT_SOCKET": "/run/env.sock", "GOVKIT_AUDIT_URL": "http://10.0.0.1:1199", "GOVKIT_TOKEN": "tok",
		"GOVKIT_AUDITOR_VERIFY_INTERVAL": "1m", "GOVKIT_AUDITOR_INCIDENT_WEBHOOK": "https://alerts.example.com/hook",
		"GOVKIT_AUDITOR_MAX_EVENTS_PER_MINUTE": "500", "GOVKIT_AUDITOR_ALLOWED_HOURS_START": "22",
		"GOVKIT_AUDITOR_ALLOWED_HOURS_END": "6", "GOVKIT_AUDITOR_TIMEZONE": "Europe/Paris",
		"GOVKIT_AUDITOR_MAX_CLOCK_SKEW": "30s", "GOVKIT_AUDITOR_STATE": "/var/lib/a.json", "GOVKIT_AUDITOR_VERBOSE": "true",
	} {
		t.Setenv(k, v)
	}
	o, code, stderr := parse(t, "--max-events-per-minute", "7")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	if o.Socket != "/run/env.sock" || o.AuditURL != "http://10.0.0.1:1199" || o.Token != "tok" || o.VerifyInterval != time.Minute ||
		o.Webhook != "https://alerts.example.com/hook" || o.MaxPerMinute != 7 || o.HoursStart != 22 || o.HoursEnd != 6 ||
		o.loc.String() != "Europe/Paris" || o.ClockSkew != 30*time.Second || o.State != "/var/lib/a.json" || !o.Verbose {
		t.Errorf("options %+v", o)
	}
}

func TestFlagErrors(t *testing.T) {
	isolate(t)
	sock := []string{"--socket", "/run/a.sock"}
	tests := []struct {
		args []string
		env  map[string]string
		want string // on stderr, error and hint
	}{
		{nil, nil, "auditor: error: --socket is required\nauditor: hint: pass --socket PATH"},
		{[]string{"--socket", "/" + strings.Repeat("s", 200)}, nil, "bytes long; the limit is 103"},
		{append(sock, "--verify-interval", "10ms"), nil, "error: --verify-interval 10ms is not between 1s and 24h0m0s"},
		{append(sock, "--verify-interval", "often"), nil, `invalid argument "often" for "--verify-interval"`},
		{append(sock, "--max-events-per-minute", "0"), nil, "--max-events-per-minute 0 must be at least 1"},
		{append(sock, "--allowed-hours-start", "24"), nil, "--allowed-hours-start 24 is not an hour from 0 to 23"},
		{append(sock, "--allowed-hours-end", "-1"), nil, "--allowed-hours-end -1 is not an hour from 0 to 24"},
		{append(sock, "--allowed-hours-start", "8", "--allowed-hours-end", "8"), nil, "allows no hour at all\nauditor: hint: pass --allowed-hours-start 0 --allowed-hours-end 24"},
		{append(sock, "--timezone", "Mars/Olympus"), nil, `--timezone "Mars/Olympus" is not a time zone`},
		{sock, map[string]string{"GOVKIT_AUDITOR_TIMEZONE": "Nowhere"}, `--timezone (from GOVKIT_AUDITOR_TIMEZONE) "Nowhere"`},
		{append(sock, "--max-clock-skew", "10ms"), nil, "--max-clock-skew 10ms is less than 1s"},
		{append(sock, "--audit-url", "localhost:1199"), nil, "--audit-url: auditd URL \"localhost:1199\" is not http://HOST:PORT"},
		{append(sock, "--url", "localhost:1199"), nil, "--url: auditd URL \"localhost:1199\" is not http://HOST:PORT\nauditor: hint: pass --url"},
		{append(sock, "--incident-webhook", "ftp://x/secret-token"), nil, "--incident-webhook ftp://x/… is not an http or https URL"},
		{append(sock, "--incident-webhook", "/hook"), nil, "--incident-webhook is not an absolute URL"},
		{append(sock, "--incident-webhook", "https:///secret-token"), nil, "--incident-webhook has no host"},
		{append(sock, "--since-seq", "-2"), nil, `"-2" is not a seq`},
		{append(sock, "--state", ""), nil, "--state is empty"},
		{append(sock, "extra"), nil, `unknown command "extra"`},
		{append(sock, "--checkpoint-key", "audit+1234+xyz"), nil, "--checkpoint-key is neither a verifier key (NAME+HASH+KEY) nor a file\nauditor: hint: pass --checkpoint-key with the verifier key"},
		{append(sock, "--checkpoint-key", "/nonexistent/log.pub"), nil, "--checkpoint-key /nonexistent/log.pub: no such file or directory"},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			for k, v := range tt.env {
				t.Setenv(k, v)
			}
			o, code, stderr := parse(t, tt.args...)
			if code != 3 || o != nil || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr:\n%s\nwant exit 3 and %q", code, stderr, tt.want)
			}
			if strings.Contains(stderr, "secret-token") {
				t.Errorf("the webhook's path is echoed: %s", stderr)
			}
		})
	}
}

// --once needs no socket; 0 to 24 allows every hour; 22 to 6 wraps.
func TestFlagOnce(t *testing.T) {
	isolate(t)
	for _, args := range [][]string{
		{"--once"},
		{"--once", "--allowed-hours-start", "0", "--allowed-hours-end", "24"},
		{"--once", "--allowed-hours-start", "22", "--allowed-hours-end", "6", "--since-seq", "0", "--timezone", "UTC"},
	} {
		if o, code, stderr := parse(t, args...); code != 0 || !o.Once {
			t.Errorf("%q: exit %d %s", args, code, stderr)
		}
	}
}

// Issue 20: -v is --version, as in every govkit binary; the former -v for
// --verbose still works beside other flags, with a note.
func TestVerboseCompat(t *testing.T) {
	tests := []struct {
		args, want []string
		note       bool
	}{
		{[]string{"-v"}, []string{"-v"}, false},
		{[]string{"--socket", "/s", "-v"}, []string{"--socket", "/s", "--verbose"}, true},
		{[]string{"-v", "--once"}, []string{"--verbose", "--once"}, true},
		{[]string{"--verbose", "--once"}, []string{"--verbose", "--once"}, false},
		{[]string{"--once", "--", "-v"}, []string{"--once", "--", "-v"}, false},
	}
	for _, tt := range tests {
		var errOut strings.Builder
		got := verboseCompat(tt.args, &errOut)
		if !reflect.DeepEqual(got, tt.want) {
			t.Errorf("verboseCompat(%q) = %q, want %q", tt.args, got, tt.want)
		}
		if note := strings.Contains(errOut.String(), "-v for --verbose is deprecated"); note != tt.note {
			t.Errorf("verboseCompat(%q): note %q, want one: %v", tt.args, errOut.String(), tt.note)
		}
	}

	isolate(t)
	for _, args := range [][]string{{"-v"}, {"--version"}} {
		streams, _, out, errOut := cli.Test()
		code := cli.Main("auditor", NewCmdAuditor(streams, func(*Options) error { t.Error("ran"); return nil }), streams, args)
		if code != 0 || !strings.HasPrefix(out.String(), "auditor version ") {
			t.Errorf("auditor %q: exit %d, stdout %q, stderr %q", args, code, out, errOut)
		}
	}
	if o, code, stderr := parse(t, "--once", "--verbose"); code != 0 || !o.Verbose {
		t.Errorf("--verbose: exit %d %s", code, stderr)
	}
}
