package notify

import (
	"errors"
	"strings"
	"testing"
)

func TestConfigValidate(t *testing.T) {
	mail := SMTPConfig{Host: "smtp.example.com", From: "govkit@example.com", To: []string{"ops@example.com"}}
	with := func(f func(*SMTPConfig)) SMTPConfig {
		c := mail
		f(&c)
		return c
	}
	tests := []struct {
		name  string
		c     Config
		env   string // "" means valid
		field string
		msg   string
	}{
		{name: "zero"},
		{name: "everything", c: Config{Webhook: "https://alerts.example.com/hook", SlackWebhook: "https://hooks.slack.com/services/T/B/X",
			BaseURL: "http://auditd.internal:1199/", SMTP: with(func(s *SMTPConfig) {
				s.Port, s.User, s.Password = 465, "u", "p"
				s.To = []string{"a@example.com, B <b@example.com>", "c@example.com"}
			})}},
		{name: "webhook scheme", c: Config{Webhook: "ftp://example.com/x"}, env: "GOVKIT_APPROVAL_WEBHOOK", field: "Webhook", msg: "ftp://example.com/… is not an http or https URL"},
		{name: "webhook unparsable", c: Config{Webhook: "http://a b/%zz"}, env: "GOVKIT_APPROVAL_WEBHOOK", field: "Webhook", msg: "is not a valid URL"},
		{name: "webhook relative", c: Config{Webhook: "/hook"}, env: "GOVKIT_APPROVAL_WEBHOOK", field: "Webhook"},
		{name: "slack no host", c: Config{SlackWebhook: "https:///services/T/B/secret"}, env: "GOVKIT_APPROVAL_SLACK_WEBHOOK", field: "SlackWebhook", msg: "has no host"},
		{name: "slack secret not echoed", c: Config{SlackWebhook: "hooks.slack.com/services/T/B/secret"}, env: "GOVKIT_APPROVAL_SLACK_WEBHOOK", field: "SlackWebhook"},
		{name: "base url scheme", c: Config{BaseURL: "auditd:1199"}, env: "GOVKIT_APPROVAL_BASE_URL", field: "BaseURL"},
		{name: "base url query", c: Config{BaseURL: "http://auditd:1199/?x=1"}, env: "GOVKIT_APPROVAL_BASE_URL", field: "BaseURL"},
		{name: "base url credentials", c: Config{BaseURL: "http://u:secret@auditd:1199"}, env: "GOVKIT_APPROVAL_BASE_URL", field: "BaseURL"},
		{name: "from without host", c: Config{SMTP: SMTPConfig{From: "a@example.com"}}, env: "GOVKIT_SMTP_HOST", field: "SMTP.Host", msg: "GOVKIT_SMTP_FROM"},
		{name: "to without host", c: Config{SMTP: SMTPConfig{To: []string{"a@example.com"}}}, env: "GOVKIT_SMTP_HOST", field: "SMTP.Host", msg: "GOVKIT_APPROVAL_EMAIL_TO"},
		{name: "password without host", c: Config{SMTP: SMTPConfig{Password: "secret"}}, env: "GOVKIT_SMTP_HOST", field: "SMTP.Host"},
		{name: "host without from", c: Config{SMTP: with(func(s *SMTPConfig) { s.From = "" })}, env: "GOVKIT_SMTP_FROM", field: "SMTP.From", msg: "is required"},
		{name: "bad from", c: Config{SMTP: with(func(s *SMTPConfig) { s.From = "govkit" })}, env: "GOVKIT_SMTP_FROM", field: "SMTP.From", msg: `"govkit" is not an email address`},
		{name: "host without to", c: Config{SMTP: with(func(s *SMTPConfig) { s.To = nil })}, env: "GOVKIT_APPROVAL_EMAIL_TO", field: "SMTP.To", msg: "at least one recipient"},
		{name: "blank to", c: Config{SMTP: with(func(s *SMTPConfig) { s.To = []string{" "} })}, env: "GOVKIT_APPROVAL_EMAIL_TO", field: "SMTP.To"},
		{name: "bad to", c: Config{SMTP: with(func(s *SMTPConfig) { s.To = []string{"ops@example.com, nope"} })}, env: "GOVKIT_APPROVAL_EMAIL_TO", field: "SMTP.To", msg: `"ops@example.com, nope"`},
		{name: "port range", c: Config{SMTP: with(func(s *SMTPConfig) { s.Port = 70000 })}, env: "GOVKIT_SMTP_PORT", field: "SMTP.Port"},
		{name: "port in host", c: Config{SMTP: with(func(s *SMTPConfig) { s.Host = "smtp.example.com:25" })}, env: "GOVKIT_SMTP_HOST", field: "SMTP.Host", msg: "GOVKIT_SMTP_PORT"},
		{name: "user without password", c: Config{SMTP: with(func(s *SMTPConfig) { s.User = "u" })}, env: "GOVKIT_SMTP_USER", field: "SMTP.User"},
		{name: "password without user", c: Config{SMTP: with(func(s *SMTPConfig) { s.Password = "secret" })}, env: "GOVKIT_SMTP_USER", field: "SMTP.User"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.c.Validate()
			if tt.env == "" {
				if err != nil {
					t.Fatalf("Validate = %v; want nil", err)
				}
				return
			}
			var ce *ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("Validate = %v; want a *ConfigError for %s", err, tt.env)
			}
			if ce.Env != tt.env || ce.Field != tt.field || !strings.Contains(ce.Msg, tt.msg) {
				t.Errorf("Validate = %q (env %s, field %s); want env %s, field %s, message with %q", err, ce.Env, ce.Field, tt.env, tt.field, tt.msg)
			}
			if !strings.HasPrefix(err.Error(), tt.env+" ("+tt.field+"): ") {
				t.Errorf("error %q does not name %s and %s first", err, tt.env, tt.field)
			}
			if strings.Contains(err.Error(), "secret") {
				t.Errorf("error shows a secret: %q", err)
			}
			if _, nerr := New(tt.c); nerr == nil {
				t.Error("New accepted what Validate refused")
			}
		})
	}
}

func TestNewChannels(t *testing.T) {
	mail := SMTPConfig{Host: "smtp.example.com", From: "govkit@example.com", To: []string{"ops@example.com"}}
	tests := []struct {
		c    Config
		want string
	}{
		{Config{}, ""},
		{Config{BaseURL: "http://auditd:1199"}, ""},
		{Config{SlackWebhook: "https://hooks.slack.com/services/T/B/X"}, "slack"},
		{Config{Webhook: "https://hooks.slack.com/services/T/B/X"}, "webhook"},
		// The same URL in both is one channel.
		{Config{Webhook: "https://hooks.slack.com/services/T/B/X", SlackWebhook: "https://hooks.slack.com/services/T/B/X"}, "slack"},
		{Config{Webhook: "https://alerts.example.com/x", SlackWebhook: "https://hooks.slack.com/services/T/B/X", SMTP: mail}, "slack webhook email"},
	}
	for _, tt := range tests {
		ns, err := New(tt.c)
		if err != nil {
			t.Fatal(err)
		}
		var names []string
		for _, n := range ns {
			names = append(names, n.Name())
		}
		if got := strings.Join(names, " "); got != tt.want {
			t.Errorf("New(%+v) names = %q; want %q", tt.c, got, tt.want)
		}
	}
}
