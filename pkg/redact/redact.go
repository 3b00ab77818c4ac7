// Package redact removes secrets from audit event text and JSON before auditd seals them into the chain (DESIGN §11, issue 13).
package redact

import (
	"github.com/govkit/govkit/pkg/termtext"
	"regexp"
	"slices"
	"strings"
)

// Marker starts every replacement: a secret becomes "[REDACTED:kind]".
// Text that already holds a marker where a secret would be is left alone,
// so redacting twice changes nothing.
const Marker = "[REDACTED:"

// Built-in kinds: the values recorded in an event's redactions.
const (
	KindPrivateKey     = "private_key"
	KindAuthorization  = "authorization"
	KindAWSAccessKeyID = "aws_access_key_id"
	KindAWSSecretKey   = "aws_secret_access_key"
	KindGCPAPIKey      = "gcp_api_key"
	KindAzureKey       = "azure_key"
	KindGitHubToken    = "github_token"
	KindGitLabToken    = "gitlab_token"
	KindSlackToken     = "slack_token"
	KindSlackWebhook   = "slack_webhook"
	KindOpenAIKey      = "openai_api_key"
	KindAnthropicKey   = "anthropic_api_key"
	KindGovkitToken    = "govkit_token"
	KindJWT            = "jwt"
	KindURLPassword    = "url_password"
	KindPassword       = "password"
	KindToken          = "token"
	KindAPIKey         = "api_key"
	KindSecret         = "secret"
)

const (
	maxKindLen       = 40
	maxValueLookback = 64 // key characters read back from a separator
)

// Redactor redacts the built-in secret formats and its extra patterns. The
// zero value and a nil *Redactor redact the built-in formats only; there is
// no way to turn those off (DESIGN §11: secrets never enter the chain). A
// Redactor is immutable and safe for concurrent use.
type Redactor struct {
	extra []Pattern
}

// New returns a Redactor for the built-in formats plus extra.
func New(extra ...Pattern) *Redactor {
	return &Redactor{extra: slices.Clone(extra)}
}

// Pattern is an extra secret format: a name (the kind recorded) and a
// regular expression (RE2 syntax). When the expression has a group named
// "secret" only that group is replaced, so a prefix such as "key=" stays
// readable; otherwise the whole match is.
type Pattern struct {
	Name   string
	re     *regexp.Regexp
	secret int // submatch index of the secret, 0 for the whole match
}

var kindRE = regexp.MustCompile(`^[a-z][a-z0-9_]*$`)

// ParsePattern reads NAME=REGEX, the value of auditd's --redact-pattern:
// NAME is a short lowercase kind such as internal_token (letters, digits
// and _, starting with a letter, at most 40 bytes). The error names what is
// wrong, and the pattern when its expression does not compile.
func ParsePattern(s string) (Pattern, error) {
	name, expr, ok := strings.Cut(s, "=")
	if !ok {
		return Pattern{}, &PatternError{Pattern: s, Msg: "is not NAME=REGEX"}
	}
	return NewPattern(name, expr)
}

// NewPattern returns the pattern named name (a kind) matching expr.
func NewPattern(name, expr string) (Pattern, error) {
	name = strings.TrimSpace(name)
	if len(name) > maxKindLen || !kindRE.MatchString(name) {
		return Pattern{}, &PatternError{Pattern: name + "=" + expr, Msg: "NAME must be a lowercase kind such as internal_token: a letter, then letters, digits or _ (at most 40)"}
	}
	if expr == "" {
		return Pattern{}, &PatternError{Pattern: name + "=", Msg: "REGEX is empty"}
	}
	re, err := regexp.Compile(expr)
	if err != nil {
		return Pattern{}, &PatternError{Pattern: name + "=" + expr, Msg: "REGEX does not compile: " + strings.TrimPrefix(err.Error(), "error parsing regexp: ")}
	}
	if re.MatchString("") {
		return Pattern{}, &PatternError{Pattern: name + "=" + expr, Msg: "REGEX matches the empty string, which would redact nothing everywhere"}
	}
	secret := re.SubexpIndex("secret")
	if secret < 0 {
		secret = 0
	}
	return Pattern{Name: name, re: re, secret: secret}, nil
}

// PatternError is an extra pattern that cannot be used.
type PatternError struct {
	Pattern string // as given, cut to 100 bytes
	Msg     string
}

func (e *PatternError) Error() string {
	return "redaction pattern " + shownPattern(e.Pattern) + ": " + e.Msg
}

// shownPattern quotes a pattern escaping only its quotes, so that a regular
// expression's backslashes read as written; a pattern holding characters a
// terminal would act on is Go-quoted instead (it once passed through as it
// was).
func shownPattern(p string) string {
	if termtext.OneLine(p) != p {
		return termtext.Quote(p, 100)
	}
	return `"` + strings.ReplaceAll(termtext.Truncate(p, 100), `"`, `\"`) + `"`
}

// Redact returns s with every secret replaced by "[REDACTED:kind]", and the
// kinds it replaced, sorted and without repeats (nil when s holds none; s
// itself is then returned and nothing is allocated).
//
// The common case is text without a secret, on every event auditd ingests
// (issue 13: ingest may drop at most 10% with redaction on). So Redact first
// makes one pass over s looking at a few trigger bytes ('=', ':', '-', '_',
// '.', '@' and the first letters of some formats) and the few bytes around
// each; only the detectors whose anchor it saw run, and regular expressions
// only then. Extra patterns have no anchor and always run.
func (r *Redactor) Redact(s string) (string, []string) {
	var extra []Pattern
	if r != nil {
		extra = r.extra
	}
	bits := triggers(s)
	if bits == 0 && len(extra) == 0 {
		return s, nil
	}
	var spans spanList
	findBuiltin(s, bits, &spans)
	for i := range extra {
		extra[i].find(s, &spans)
	}
	if len(spans) == 0 {
		return s, nil
	}
	return spans.apply(s)
}

// find adds p's matches in s.
func (p *Pattern) find(s string, spans *spanList) {
	for _, m := range p.re.FindAllStringSubmatchIndex(s, -1) {
		start, end := m[2*p.secret], m[2*p.secret+1]
		if start < 0 || end <= start {
			continue
		}
		spans.add(s, start, end, p.Name, orderExtra)
	}
}

// span is one secret found in the text: the bytes [start, end) become a
// marker of kind. order breaks ties between detectors that found the same
// bytes: the more specific format wins.
type span struct {
	start, end int
	kind       string
	order      int
}

type spanList []span

// add records a secret at [start, end) of s unless it is empty or a marker
// already (redacting redacted text changes nothing).
func (l *spanList) add(s string, start, end int, kind string, order int) {
	if end <= start || strings.HasPrefix(s[start:], Marker) {
		return
	}
	*l = append(*l, span{start, end, kind, order})
}

// apply replaces the spans of s. Overlapping spans are merged into one
// marker, named after the first, so no part of either secret survives;
// both kinds are reported. A span inside another is dropped.
func (l spanList) apply(s string) (string, []string) {
	slices.SortFunc(l, func(a, b span) int {
		switch {
		case a.start != b.start:
			return a.start - b.start
		case a.end != b.end:
			return b.end - a.end // the longer first
		}
		return a.order - b.order
	})
	var kinds []string
	merged := l[:0]
	for _, sp := range l {
		if n := len(merged); n > 0 && sp.start < merged[n-1].end {
			if sp.end > merged[n-1].end {
				merged[n-1].end = sp.end
				kinds = append(kinds, sp.kind)
			}
			continue
		}
		merged = append(merged, sp)
		kinds = append(kinds, sp.kind)
	}
	var b strings.Builder
	b.Grow(len(s))
	last := 0
	for _, sp := range merged {
		b.WriteString(s[last:sp.start])
		b.WriteString(Marker)
		b.WriteString(sp.kind)
		b.WriteByte(']')
		last = sp.end
	}
	b.WriteString(s[last:])
	return b.String(), sortKinds(kinds)
}

// sortKinds sorts kinds and removes repeats.
func sortKinds(kinds []string) []string {
	if len(kinds) == 0 {
		return nil
	}
	slices.Sort(kinds)
	return slices.Compact(kinds)
}

// MergeKinds returns the kinds of a and b, sorted and without repeats.
func MergeKinds(a, b []string) []string {
	if len(b) == 0 {
		return a
	}
	return sortKinds(append(slices.Clone(a), b...))
}
