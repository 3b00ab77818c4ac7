package govbot

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/cli"
)

// parse runs govbot's flag parsing and validation on args with env, and
// returns the options the run would get, or the exit code and stderr.
func parse(t *testing.T, env map[string]string, args ...string) (*Options, int, string) {
	t.Helper()
	for k, v := range env {
		t.Setenv(k, v)
	}
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("HOME", t.TempDir())
	streams, _, _, stderr := cli.Test()
	var got *Options
	opts := &Options{IO: streams}
	code := cli.Main("govbot", newCmd(opts, func(o *Options) error { got = o; return nil }), streams, seedCompat(args))
	return got, code, stderr.String()
}

func TestFlags(t *testing.T) {
	tests := []struct {
		name  string
		env   map[string]string
		args  []string
		check func(*Options) bool
	}{
		{"defaults", nil, nil, func(o *Options) bool {
			return o.Gateway == "http://127.0.0.1:1199" && time.Duration(o.Since) == 24*time.Hour &&
				time.Duration(o.StaleAfter) == 30*time.Minute && o.MaxEvents == DefaultMaxEvents && o.Webhook == "" &&
				o.gatewaySource == "the default"
		}},
		{"flags", nil, []string{"--gateway", "http://auditd:1199", "--since", "6h", "--stale-after", "1h", "--token", "T",
			"--webhook", "https://hooks.slack.com/services/A/B/C", "--max-events", "10", "-o", "json"}, func(o *Options) bool {
			return o.Gateway == "http://auditd:1199" && time.Duration(o.Since) == 6*time.Hour && time.Duration(o.StaleAfter) == time.Hour &&
				o.Token == "T" && o.Webhook == "https://hooks.slack.com/services/A/B/C" && o.MaxEvents == 10 && o.Output == cli.FormatJSON &&
				o.gatewaySource == ""
		}},
		{"days", nil, []string{"--since", "7d"}, func(o *Options) bool { return time.Duration(o.Since) == 7*24*time.Hour }},
		{"history defaults", nil, []string{"--history", "h.db"}, func(o *Options) bool {
			return o.History == "h.db" && time.Duration(o.HistoryRetention) == 90*24*time.Hour
		}},
		{"history from the environment", map[string]string{"GOVKIT_HISTORY": "/var/lib/govbot/h.db", "GOVKIT_HISTORY_RETENTION": "30d"}, nil,
			func(o *Options) bool {
				return o.History == "/var/lib/govbot/h.db" && time.Duration(o.HistoryRetention) == 30*24*time.Hour
			}},
		// Seed 003 "Running govbot": go run ./cmd/govbot/ -gateway URL -since 6h.
		{"seed's one-dash flags", nil, []string{"-gateway", "http://localhost:8080", "-since=6h", "-webhook", "https://hooks.slack.com/x"},
			func(o *Options) bool {
				return o.Gateway == "http://localhost:8080" && time.Duration(o.Since) == 6*time.Hour && o.Webhook == "https://hooks.slack.com/x"
			}},
		{"environment", map[string]string{"GOVKIT_AUDIT_URL": "http://env:1", "GOVKIT_TOKEN": "tok", "GOVKIT_GOVBOT_WEBHOOK": "https://hooks.slack.com/e",
			"GOVKIT_GOVBOT_SINCE": "2h", "GOVKIT_GOVBOT_STALE_AFTER": "5m"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:1" && o.Token == "tok" && o.Webhook == "https://hooks.slack.com/e" &&
				time.Duration(o.Since) == 2*time.Hour && time.Duration(o.StaleAfter) == 5*time.Minute && o.gatewaySource == "GOVKIT_AUDIT_URL"
		}},
		// Issue 20: --url and GOVKIT_URL, as in every client binary; the
		// seed's GOVKIT_GATEWAY works too, and the README's GOVKIT_SINCE.
		{"url", nil, []string{"--url", "http://auditd:1199"}, func(o *Options) bool {
			return o.Gateway == "http://auditd:1199" && o.gatewaySource == ""
		}},
		{"GOVKIT_URL and GOVKIT_SINCE", map[string]string{"GOVKIT_URL": "http://env:3", "GOVKIT_SINCE": "3h"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:3" && time.Duration(o.Since) == 3*time.Hour && o.gatewaySource == "GOVKIT_URL"
		}},
		{"GOVKIT_GATEWAY", map[string]string{"GOVKIT_GATEWAY": "http://env:4"}, nil, func(o *Options) bool {
			return o.Gateway == "http://env:4" && o.gatewaySource == "GOVKIT_GATEWAY"
		}},
		{"flag beats environment", map[string]string{"GOVKIT_AUDIT_URL": "http://env:1"}, []string{"--gateway", "http://flag:2"},
			func(o *Options) bool { return o.Gateway == "http://flag:2" }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			o, code, stderr := parse(t, tt.env, tt.args...)
			if code != 0 || o == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if !tt.check(o) {
				t.Errorf("options = %+v", *o)
			}
		})
	}
}

func TestUsageErrors(t *testing.T) {
	tests := []struct {
		name string
		env  map[string]string
		args []string
		want string // stderr's first line
		hint string
	}{
		{"bad gateway", nil, []string{"--gateway", "auditd:1199"},
			`govbot: error: --gateway: auditd URL "auditd:1199" is not http://HOST:PORT`, "--url"},
		{"bad url", nil, []string{"--url", "auditd:1199"},
			`govbot: error: --url: auditd URL "auditd:1199" is not http://HOST:PORT`, "--url"},
		{"bad gateway from the environment", map[string]string{"GOVKIT_AUDIT_URL": "ftp://x"}, nil,
			`govbot: error: --url (from GOVKIT_AUDIT_URL): auditd URL "ftp://x" is not http://HOST:PORT`, "GOVKIT_URL"},
		{"zero since", nil, []string{"--since", "0s"}, "govbot: error: --since 0s is not a positive duration", "--since"},
		{"negative stale-after", nil, []string{"--stale-after", "-5m"}, "govbot: error: --stale-after -5m is not a positive duration", "--stale-after"},
		{"bad duration", nil, []string{"--since", "yesterday"},
			`govbot: error: invalid argument "yesterday" for "--since" flag: "yesterday" is not a duration such as 30m, 24h or 7d`, "govbot --help"},
		{"max-events", nil, []string{"--max-events", "0"}, "govbot: error: --max-events 0 is not between 1 and 100000000", "--max-events"},
		// The webhook URL is a secret: the error never shows it.
		{"bad webhook", nil, []string{"--webhook", "hooks.slack.com/services/T0/B0/SECRET"},
			"govbot: error: --webhook is not an absolute URL; want http:// or https://", "--webhook"},
		{"webhook scheme", nil, []string{"--webhook", "ftp://hooks.slack.com/services/T0/B0/SECRET"},
			"govbot: error: --webhook ftp://hooks.slack.com/… is not an http or https URL", "--webhook"},
		{"zero history retention", nil, []string{"--history", "h.db", "--history-retention", "0s"},
			"govbot: error: --history-retention 0s is not a positive duration", "--history-retention"},
		{"missing policy file", nil, []string{"--policy", "/nonexistent/policy.yaml"},
			"govbot: error: --policy: open /nonexistent/policy.yaml: no such file or directory", "pass --policy with the policy file auditd was started with"},
		{"arguments", nil, []string{"report"}, `govbot: error: unknown command "report" for "govbot"`, "govbot --help"},
		{"unknown flag", nil, []string{"--gatway", "x"}, "govbot: error: unknown flag: --gatway", "govbot --help"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, code, stderr := parse(t, tt.env, tt.args...)
			if code != 3 {
				t.Fatalf("exit %d, want 3; stderr: %s", code, stderr)
			}
			first, rest, _ := strings.Cut(stderr, "\n")
			if first != tt.want {
				t.Errorf("stderr = %q\nwant      %q", first, tt.want)
			}
			if !strings.HasPrefix(rest, "govbot: hint: ") || !strings.Contains(rest, tt.hint) {
				t.Errorf("hint = %q, want one naming %q", rest, tt.hint)
			}
			if strings.Contains(stderr, "SECRET") {
				t.Errorf("stderr shows the webhook's secret: %s", stderr)
			}
		})
	}
}

func TestDuration(t *testing.T) {
	for _, tt := range []struct {
		in   string
		want time.Duration
		str  string
	}{
		{"24h", 24 * time.Hour, "24h"},
		{"30m", 30 * time.Minute, "30m"},
		{"90m", 90 * time.Minute, "1h30m"},
		{"7d", 7 * 24 * time.Hour, "7d"},
		{"1d", 24 * time.Hour, "24h"},
		{"48h", 48 * time.Hour, "2d"},
		{"1500ms", 1500 * time.Millisecond, "1.5s"},
		{"0d", 0, "0s"},
	} {
		var d Duration
		if err := d.Set(tt.in); err != nil || time.Duration(d) != tt.want || d.String() != tt.str {
			t.Errorf("Set(%q) = %v, %v (%s); want %v (%s)", tt.in, time.Duration(d), err, d.String(), tt.want, tt.str)
		}
	}
	for _, bad := range []string{"", "d", "-1d", "1.5d", "3x", "99999d"} {
		var d Duration
		if err := d.Set(bad); err == nil {
			t.Errorf("Set(%q) succeeded", bad)
		}
	}
}

func TestSeedCompat(t *testing.T) {
	got := seedCompat([]string{"-gateway", "u", "-since=6h", "-o", "json", "-webhook", "w", "--", "-since"})
	want := []string{"--gateway", "u", "--since=6h", "-o", "json", "--webhook", "w", "--", "-since"}
	if !slices.Equal(got, want) {
		t.Errorf("seedCompat = %q, want %q", got, want)
	}
}
