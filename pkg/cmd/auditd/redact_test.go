package auditd

import (
	"slices"
	"strings"
	"testing"
)

func TestRedactPatternFlag(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_CONFIG", "")
	for _, tc := range []struct {
		name string
		env  string
		args []string
		in   string // redacted by the patterns
		want string
	}{
		{"flag", "", []string{"--redact-pattern", "internal_token=itk_[a-z0-9]{4}", "--redact-pattern", "emp=E[0-9]{2,3}"},
			"itk_ab12 E123", "[REDACTED:internal_token] [REDACTED:emp]"},
		{"environment, commas", "internal_token=itk_[a-z0-9]{4},emp=E[0-9]{2,3}", nil,
			"itk_ab12 E123", "[REDACTED:internal_token] [REDACTED:emp]"},
		{"environment, lines", "internal_token=itk_[a-z0-9]{4}\nemp=E[0-9]{2,3}\n", nil,
			"itk_ab12 E123", "[REDACTED:internal_token] [REDACTED:emp]"},
		{"none: the built-in formats", "", nil, "PGPASSWORD=x E123", "PGPASSWORD=[REDACTED:password] E123"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Setenv("GOVKIT_REDACT_PATTERNS", tc.env)
			o, code, stderr := parse(t, tc.args...)
			if code != 0 || o == nil {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			if got, _ := o.redactor.Redact(tc.in); got != tc.want {
				t.Errorf("Redact(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
}

func TestRedactPatternRefused(t *testing.T) {
	t.Setenv("XDG_CONFIG_HOME", t.TempDir())
	t.Setenv("GOVKIT_CONFIG", "")
	for _, tc := range []struct {
		env, arg, want string
	}{
		{"", "bad=(unclosed", `auditd: error: --redact-pattern: redaction pattern "bad=(unclosed": REGEX does not compile`},
		{"", "noname", `auditd: error: --redact-pattern: redaction pattern "noname": is not NAME=REGEX`},
		{"x=[", "", `auditd: error: GOVKIT_REDACT_PATTERNS: redaction pattern "x=[": REGEX does not compile`},
	} {
		t.Setenv("GOVKIT_REDACT_PATTERNS", tc.env)
		var args []string
		if tc.arg != "" {
			args = []string{"--redact-pattern", tc.arg}
		}
		o, code, stderr := parse(t, args...)
		if o != nil || code != 3 || !strings.Contains(stderr, tc.want) || !strings.Contains(stderr, "auditd: hint: pass --redact-pattern NAME=REGEX") {
			t.Errorf("%q %q: exit %d, stderr %q", tc.env, tc.arg, code, stderr)
		}
	}
}

func TestSplitPatterns(t *testing.T) {
	for in, want := range map[string][]string{
		"a=x{2,5}":            {"a=x{2,5}"},
		"a=x, b=y":            {"a=x", "b=y"},
		"a=x,y\nb=z\n\n":      {"a=x,y", "b=z"},
		"a=(?P<secret>k=v),b": {"a=(?P<secret>k=v),b"},
	} {
		if got := splitPatterns(in); !slices.Equal(got, want) {
			t.Errorf("splitPatterns(%q) = %q, want %q", in, got, want)
		}
	}
}
