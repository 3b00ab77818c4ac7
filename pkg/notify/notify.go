// Package notify tells humans about approval requests (DESIGN §7, seed 003
// "Approval Workflows › Configuration"): when auditd creates a request and
// again when it is resolved, over Slack, email and a generic JSON webhook,
// each message carrying the TTL and the exact `approvals approve|deny ID`
// commands.
//
// The package never reads the environment (DESIGN §3). auditd maps its
// flags and these variables onto Config:
//
//	GOVKIT_APPROVAL_WEBHOOK        Config.Webhook (seed: HELPDESK_APPROVAL_WEBHOOK)
//	GOVKIT_APPROVAL_SLACK_WEBHOOK  Config.SlackWebhook
//	GOVKIT_APPROVAL_BASE_URL       Config.BaseURL (seed: HELPDESK_APPROVAL_BASE_URL)
//	GOVKIT_SMTP_HOST               Config.SMTP.Host
//	GOVKIT_SMTP_PORT               Config.SMTP.Port
//	GOVKIT_SMTP_USER               Config.SMTP.User
//	GOVKIT_SMTP_PASSWORD           Config.SMTP.Password
//	GOVKIT_SMTP_FROM               Config.SMTP.From
//	GOVKIT_APPROVAL_EMAIL_TO       Config.SMTP.To (comma-separated)
//
// Deliver through a Dispatcher: it queues per notifier and retries in the
// background, so a dead channel never blocks or loses a request (issue 6).
package notify

import (
	"cmp"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/mail"
	"net/url"
	"strings"
	"time"

	"github.com/slack-go/slack"

	"github.com/govkit/govkit/pkg/approval"
)

// SchemaVersion is the version of the generic webhook's JSON payload.
const SchemaVersion = 1

// Kind says which moment of a request's life a message reports.
type Kind string

// The two kinds.
const (
	Requested Kind = "approval_requested"
	Resolved  Kind = "approval_resolved" // approved, denied or expired
)

// Message is one notification: a request as it was at a moment.
type Message struct {
	Kind    Kind
	Request approval.Request
	// Now is the time the TTL ("expires in 4m59s") is computed against,
	// and an email's Date. A Dispatcher sets a zero Now from its clock
	// (Options.Now) at Send and advances it by the time a message waited,
	// so a retried message never shows a stale TTL. A Notifier reads no
	// clock of its own: it refuses an approval message without Now, with a
	// permanent error, rather than show the wrong time.
	Now time.Time
	// Notice, when set, is what the message carries instead of an
	// approval request (Kind is then KindNotice): an auditor alert,
	// govbot's report. Webhook and Slack notifiers send it; email does
	// not.
	Notice *Notice
}

// errNoNow is what a Notifier says of an approval message whose Now is
// zero. The clock is the caller's (issue 20: engines take an
// injected clock; pkg/cmd passes time.Now), and a Dispatcher always sets
// Now, so this is a programming error in a caller that calls Notify
// itself.
var errNoNow = errors.New("approval message without Now (a Dispatcher sets it from Options.Now)")

// KindNotice is the Kind of a message that carries a Notice.
const KindNotice Kind = "notice"

// Notice is a message about something other than an approval request,
// for the watchers that deliver through a Dispatcher too (issue 20 "one
// home for delivery": auditor's alert webhook, govbot's Slack post).
type Notice struct {
	// Subject names the message in logs: "the chain_tampering alert of
	// seq 12". It never contains a secret.
	Subject string
	// Payload is the generic webhook's JSON body, marshalled as it is.
	Payload any
	// Slack is the message for a Slack incoming webhook; nil means one
	// with Text alone, escaped.
	Slack *slack.WebhookMessage
	// Text is the plain text: the Slack message when Slack is nil.
	Text string
}

// about names m in the Dispatcher's log lines.
func (m Message) about() string {
	if m.Notice != nil {
		return m.Notice.Subject
	}
	return string(m.Kind) + " for approval " + m.Request.ID
}

// Notifier delivers a message over one channel.
type Notifier interface {
	// Name is a short, stable name for logs and metrics labels: "slack",
	// "webhook" or "email". It never contains a secret.
	Name() string
	// Notify delivers m once, giving up when ctx ends. It is called from
	// one goroutine at a time per notifier. Its errors never contain a
	// password or a secret URL.
	Notify(ctx context.Context, m Message) error
}

// Config says where notifications go. The zero Config sends nothing.
type Config struct {
	// Webhook (GOVKIT_APPROVAL_WEBHOOK) receives the generic JSON payload,
	// except that a Slack incoming-webhook URL (host hooks.slack.com, as the
	// seed's HELPDESK_APPROVAL_WEBHOOK) gets a Slack message instead.
	Webhook string
	// SlackWebhook (GOVKIT_APPROVAL_SLACK_WEBHOOK) is a Slack incoming
	// webhook URL. Its path is a secret: it is never logged.
	SlackWebhook string
	// BaseURL (GOVKIT_APPROVAL_BASE_URL) is the auditd URL approvers use;
	// when set, messages link to BASE/v1/approvals/ID and the commands carry
	// --url BASE.
	BaseURL string
	// SMTP configures email; Host empty means no email.
	SMTP SMTPConfig
	// HTTPClient posts the webhooks; nil means a client that does not follow
	// redirects (a redirected POST is a failure, not a silent GET).
	HTTPClient *http.Client
}

// SMTPConfig configures email over SMTP (net/smtp).
type SMTPConfig struct {
	Host string // GOVKIT_SMTP_HOST
	// Port (GOVKIT_SMTP_PORT): 0 means 587 (submission, STARTTLS). 465
	// means implicit TLS (SMTPS).
	Port int
	// User (GOVKIT_SMTP_USER) and Password (GOVKIT_SMTP_PASSWORD) log in
	// with AUTH PLAIN, only ever over TLS: a server that does not offer
	// STARTTLS is refused rather than sent the password in the clear.
	User     string
	Password string
	From     string   // GOVKIT_SMTP_FROM: one RFC 5322 address
	To       []string // GOVKIT_APPROVAL_EMAIL_TO: addresses; an element may hold several, comma-separated
	// TLS is the base TLS configuration (tests set RootCAs); nil means the
	// system roots. ServerName defaults to Host.
	TLS *tls.Config
}

// DefaultSMTPPort is the mail submission port (RFC 6409).
const DefaultSMTPPort = 587

// ConfigError is an invalid Config field. Its message names the environment
// variable and the field, and never shows a secret.
type ConfigError struct {
	Env   string // GOVKIT_APPROVAL_WEBHOOK
	Field string // Webhook
	Msg   string
}

func (e *ConfigError) Error() string {
	return fmt.Sprintf("%s (%s): %s", e.Env, e.Field, e.Msg)
}

// Validate checks every configured channel and returns the first problem.
func (c Config) Validate() error {
	if err := checkURL(c.Webhook, "GOVKIT_APPROVAL_WEBHOOK", "Webhook"); err != nil {
		return err
	}
	if err := checkURL(c.SlackWebhook, "GOVKIT_APPROVAL_SLACK_WEBHOOK", "SlackWebhook"); err != nil {
		return err
	}
	if err := checkURL(c.BaseURL, "GOVKIT_APPROVAL_BASE_URL", "BaseURL"); err != nil {
		return err
	}
	if c.BaseURL != "" {
		u, _ := url.Parse(c.BaseURL)
		if u.RawQuery != "" || u.Fragment != "" || u.User != nil {
			return &ConfigError{"GOVKIT_APPROVAL_BASE_URL", "BaseURL", "must be a plain base URL such as http://auditd.internal:1199, without credentials, query or fragment"}
		}
	}
	return c.SMTP.validate()
}

func (s SMTPConfig) validate() error {
	if s.Host == "" {
		switch {
		case s.From != "":
			return &ConfigError{"GOVKIT_SMTP_HOST", "SMTP.Host", "is required when GOVKIT_SMTP_FROM is set"}
		case len(s.To) > 0:
			return &ConfigError{"GOVKIT_SMTP_HOST", "SMTP.Host", "is required when GOVKIT_APPROVAL_EMAIL_TO is set"}
		case s.User != "" || s.Password != "":
			return &ConfigError{"GOVKIT_SMTP_HOST", "SMTP.Host", "is required when GOVKIT_SMTP_USER or GOVKIT_SMTP_PASSWORD is set"}
		}
		return nil
	}
	if _, _, err := net.SplitHostPort(s.Host); err == nil || strings.ContainsAny(s.Host, " /\r\n\t") {
		return &ConfigError{"GOVKIT_SMTP_HOST", "SMTP.Host", fmt.Sprintf("%q is not a host name; put the port in GOVKIT_SMTP_PORT", s.Host)}
	}
	if s.Port < 0 || s.Port > 65535 {
		return &ConfigError{"GOVKIT_SMTP_PORT", "SMTP.Port", fmt.Sprintf("%d is not a port (1-65535; 0 means %d)", s.Port, DefaultSMTPPort)}
	}
	if (s.User == "") != (s.Password == "") {
		return &ConfigError{"GOVKIT_SMTP_USER", "SMTP.User", "GOVKIT_SMTP_USER and GOVKIT_SMTP_PASSWORD must be set together"}
	}
	if s.From == "" {
		return &ConfigError{"GOVKIT_SMTP_FROM", "SMTP.From", "is required with GOVKIT_SMTP_HOST"}
	}
	if _, err := mail.ParseAddress(s.From); err != nil {
		return &ConfigError{"GOVKIT_SMTP_FROM", "SMTP.From", fmt.Sprintf("%q is not an email address: %v", s.From, err)}
	}
	if _, err := s.recipients(); err != nil {
		return err
	}
	return nil
}

// recipients parses To, where an element may be a comma-separated list.
func (s SMTPConfig) recipients() ([]*mail.Address, error) {
	var out []*mail.Address
	for _, e := range s.To {
		if strings.TrimSpace(e) == "" {
			continue
		}
		list, err := mail.ParseAddressList(e)
		if err != nil {
			return nil, &ConfigError{"GOVKIT_APPROVAL_EMAIL_TO", "SMTP.To", fmt.Sprintf("%q is not a list of email addresses: %v", e, err)}
		}
		out = append(out, list...)
	}
	if len(out) == 0 {
		return nil, &ConfigError{"GOVKIT_APPROVAL_EMAIL_TO", "SMTP.To", "at least one recipient is required with GOVKIT_SMTP_HOST"}
	}
	return out, nil
}

func checkURL(raw, env, field string) error {
	if raw == "" {
		return nil
	}
	if err := CheckURL(raw); err != nil {
		return &ConfigError{env, field, err.Error()}
	}
	return nil
}

// CheckURL checks that raw is an absolute http:// or https:// URL with a
// host: the one check of every webhook URL (auditd's approval channels,
// auditor's --incident-webhook, govbot's --webhook). Its errors never
// show the URL's path or query, which are often the webhook's secret;
// the caller names the setting.
func CheckURL(raw string) error {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Parse's error quotes the whole URL, which may be a secret.
		return errors.New("is not a valid URL")
	}
	if u.Scheme == "" {
		return errors.New("is not an absolute URL; want http:// or https://")
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return fmt.Errorf("%s is not an http or https URL", redactURL(u))
	}
	if u.Host == "" {
		return errors.New("has no host")
	}
	return nil
}

// New returns one notifier per configured channel, in the order Slack,
// webhook, email; none configured gives none and no error. It validates c
// first.
func New(c Config) ([]Notifier, error) {
	if err := c.Validate(); err != nil {
		return nil, err
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	base := strings.TrimRight(c.BaseURL, "/")
	var ns []Notifier
	if c.SlackWebhook != "" {
		ns = append(ns, newSlack("slack", c.SlackWebhook, base, client))
	}
	// The same URL in both settings is one channel, not two messages.
	if c.Webhook != "" && c.Webhook != c.SlackWebhook {
		if IsSlackWebhook(c.Webhook) {
			ns = append(ns, newSlack("webhook", c.Webhook, base, client))
		} else {
			ns = append(ns, newWebhook(c.Webhook, base, client))
		}
	}
	if c.SMTP.Host != "" {
		e, err := newEmail(c.SMTP, base)
		if err != nil {
			return nil, err
		}
		ns = append(ns, e)
	}
	return ns, nil
}

// IsSlackWebhook reports whether raw is a Slack incoming-webhook URL
// (hooks.slack.com, or GovSlack's hooks.slack-gov.com), which gets a Slack
// message rather than the generic JSON (seed compatibility:
// HELPDESK_APPROVAL_WEBHOOK is a Slack URL).
func IsSlackWebhook(raw string) bool {
	u, err := url.Parse(raw)
	if err != nil {
		return false
	}
	switch strings.ToLower(u.Hostname()) {
	case "hooks.slack.com", "hooks.slack-gov.com":
		return true
	}
	return false
}

// redactURL shows where a URL points without its secrets: webhook paths
// and queries are credentials (Slack's are), so only scheme and host stay.
func redactURL(u *url.URL) string {
	s := u.Scheme + "://" + u.Host
	if u.Path != "" && u.Path != "/" || u.RawQuery != "" {
		s += "/…"
	}
	return s
}

// RedactURL shows where the webhook URL raw points without its secrets
// (scheme and host, then "/…" when there was a path or query): the one
// form in which govkit prints or logs a webhook URL.
func RedactURL(raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		return "(invalid URL)"
	}
	return redactURL(u)
}

// scrubURLError replaces the URL that net/http puts in its errors
// (`Post "https://hooks.slack.com/services/T/B/secret": …`) with its
// redacted form.
func scrubURLError(err error, raw string) error {
	if err == nil {
		return nil
	}
	// Wrappers (slack-go's "failed to post webhook: %w") froze the URL in
	// their text already: rewrite the text, and the url.Error for callers
	// that unwrap it.
	msg := err.Error()
	var ue *url.Error
	if errors.As(err, &ue) && ue.URL != "" {
		orig := ue.URL
		ue.URL = RedactURL(orig)
		msg = strings.ReplaceAll(msg, orig, ue.URL)
	}
	if raw != "" {
		msg = strings.ReplaceAll(msg, raw, RedactURL(raw))
	}
	return &scrubbedError{msg: msg, err: err}
}

// scrubbedError keeps the chain of an error whose text had a secret removed.
type scrubbedError struct {
	msg string
	err error
}

func (e *scrubbedError) Error() string { return e.msg }
func (e *scrubbedError) Unwrap() error { return e.err }

// permanentError is a failure that retrying cannot fix (a 4xx answer, a
// server that would receive a password in the clear); the Dispatcher gives
// up on it at once.
type permanentError struct{ err error }

func (e *permanentError) Error() string { return e.err.Error() }
func (e *permanentError) Unwrap() error { return e.err }

func permanent(err error) error { return &permanentError{err} }

// retryAfterError is a rate limit that names its own delay (HTTP 429
// Retry-After).
type retryAfterError struct {
	err   error
	after time.Duration
}

func (e *retryAfterError) Error() string { return e.err.Error() }
func (e *retryAfterError) Unwrap() error { return e.err }

// WebhookConfig is one webhook of a watcher: auditor's
// --incident-webhook, govbot's --webhook.
type WebhookConfig struct {
	// Name is the notifier's name in logs and metrics: "webhook".
	Name string
	// URL is where to post; its path and query are treated as a secret.
	URL string
	// Slack sends the Slack format to any URL (govbot's --webhook is a
	// Slack incoming webhook, or something that speaks its protocol);
	// otherwise a Slack URL (IsSlackWebhook) gets it and any other URL the
	// generic JSON.
	Slack bool
	// HTTPClient posts; nil means one that does not follow redirects.
	HTTPClient *http.Client
	// UserAgent of the generic webhook's requests; "" means
	// govkit-notify/1.
	UserAgent string
}

// NewWebhook returns the notifier for one webhook URL, checked with
// CheckURL (the error names Name, never the URL). Deliver through a
// Dispatcher, with Message.Notice set.
func NewWebhook(c WebhookConfig) (Notifier, error) {
	name := cmp.Or(c.Name, "webhook")
	if err := CheckURL(c.URL); err != nil {
		return nil, fmt.Errorf("%s %w", name, err)
	}
	client := c.HTTPClient
	if client == nil {
		client = &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error {
			return http.ErrUseLastResponse
		}}
	}
	if c.Slack || IsSlackWebhook(c.URL) {
		return newSlack(name, c.URL, "", client), nil
	}
	w := newWebhook(c.URL, "", client)
	w.name = name
	if c.UserAgent != "" {
		w.userAgent = c.UserAgent
	}
	return w, nil
}
