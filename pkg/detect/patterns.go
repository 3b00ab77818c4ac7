package detect

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/termtext"
)

// secbot's patterns (seed 003 "Security Responder Bot", "Detected Security
// Patterns"):
//
//	hash_mismatch                event hash doesn't match content
//	unauthorized_destructive     destructive action without approval
//	potential_sql_injection      SQL syntax errors in tool output
//	potential_command_injection  permission denied / command not found errors
//
// PatternMatcher applies all four to the audit stream, one event at a time.

// Limits of the output scan: a tool error may hold up to audit.MaxString
// bytes, and a watcher must not spend unbounded time on one event.
const (
	// MaxScanBytes is how much of each output field is searched.
	MaxScanBytes = 64 << 10
	// MaxExcerpt bounds, in bytes, the matched line an alert carries.
	MaxExcerpt = 200
)

// Output fields that the injection patterns search.
const (
	FieldResult = "tool.result"
	FieldError  = "tool.error"
)

// OutputMatch is where an output pattern matched: the rule, the field, and
// an excerpt of the line (at most MaxExcerpt bytes, valid UTF-8, around the
// match). It is the details of a potential_*_injection alert.
type OutputMatch struct {
	Rule  string `json:"rule"`
	Field string `json:"field,omitempty"`
	Line  string `json:"line"`
}

// outputRule finds one error message in lowercased text: find returns the
// index of a match, or -1.
type outputRule struct {
	name string
	find func(lower []byte) int
}

// phrase is the rule for a fixed text (lowercase ASCII).
func phrase(name, text string) outputRule {
	p := []byte(text)
	return outputRule{name: name, find: func(lower []byte) int { return bytes.Index(lower, p) }}
}

// sqlRules are SQL syntax errors as database servers and drivers word them
// (seed 003: "SQL syntax errors in tool output"). Input that breaks out of a
// string literal makes the statement malformed, so these are what an
// injection attempt leaves behind in an agent's tool output.
var sqlRules = []outputRule{
	phrase("postgres_syntax_error", "syntax error at or near"),         // ERROR:  syntax error at or near "x"
	phrase("postgres_syntax_error", "syntax error at end of input"),    // an unbalanced quote swallowed the rest
	phrase("unterminated_quoted_string", "unterminated quoted string"), // PostgreSQL: unterminated quoted string at or near "'x"
	phrase("unterminated_quoted_identifier", "unterminated quoted identifier"),
	phrase("mysql_syntax_error", "you have an error in your sql syntax"), // MySQL, MariaDB (error 1064)
	{name: "sqlite_syntax_error", find: findSQLiteNear},                  // near "x": syntax error
	phrase("sqlite_unrecognized_token", `unrecognized token: "`),         // unrecognized token: "'x"
	phrase("sqlserver_unclosed_quotation", "unclosed quotation mark"),    // Unclosed quotation mark after the character string
	phrase("sqlserver_syntax_error", "incorrect syntax near"),
	phrase("oracle_ora_00933", "ora-00933"), // SQL command not properly ended
	phrase("oracle_ora_01756", "ora-01756"), // quoted string not properly terminated
	phrase("oracle_quoted_string", "quoted string not properly terminated"),
	{name: "sqlstate_syntax_error", find: findSQLState}, // SQLSTATE 42601, SQLSTATE[42000]
}

// commandRules are shell errors that show a command ran that nobody meant
// to run, or one denied its target (seed 003: "Permission denied / command
// not found errors").
var commandRules = []outputRule{
	phrase("permission_denied", "permission denied"),
	phrase("command_not_found", "command not found"),                                         // bash, zsh
	phrase("command_not_recognized", "is not recognized as an internal or external command"), // cmd.exe
	{name: "command_not_found", find: findShNotFound},                                        // dash, busybox: sh: 1: x: not found
}

// MatchSQLError finds the first SQL syntax error in text (case-insensitive,
// in the first MaxScanBytes bytes).
func MatchSQLError(text string) (OutputMatch, bool) { return matchOutput(text, sqlRules) }

// MatchCommandError finds the first "permission denied" or "command not
// found" error in text (case-insensitive, in the first MaxScanBytes bytes).
func MatchCommandError(text string) (OutputMatch, bool) { return matchOutput(text, commandRules) }

// matchOutput returns the match that starts first in text (the earliest
// rule on a tie).
func matchOutput(text string, rules []outputRule) (OutputMatch, bool) {
	if len(text) > MaxScanBytes {
		text = text[:MaxScanBytes]
	}
	lower := lowerASCII(text)
	at, rule := -1, ""
	for _, r := range rules {
		if i := r.find(lower); i >= 0 && (at < 0 || i < at) {
			at, rule = i, r.name
		}
	}
	if at < 0 {
		return OutputMatch{}, false
	}
	return OutputMatch{Rule: rule, Line: lineExcerpt(text, at)}, true
}

// lowerASCII lowercases ASCII letters only, so that offsets in the result
// are offsets in s (Unicode case mapping can change lengths; every message
// matched is ASCII).
func lowerASCII(s string) []byte {
	b := make([]byte, len(s))
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		b[i] = c
	}
	return b
}

// lineStartAt and lineEndAt bound the line of text around index i; lines end
// at '\n' or '\r'.
func lineStartAt[T string | []byte](b T, i int) int {
	for i > 0 && b[i-1] != '\n' && b[i-1] != '\r' {
		i--
	}
	return i
}

func lineEndAt[T string | []byte](b T, i int) int {
	for i < len(b) && b[i] != '\n' && b[i] != '\r' {
		i++
	}
	return i
}

// lineExcerpt returns the line of text holding index at, trimmed, cut to at
// most MaxExcerpt bytes of valid UTF-8 around at, "…" marking a cut.
func lineExcerpt(text string, at int) string {
	start, end := lineStartAt(text, at), lineEndAt(text, at)
	for start < at && (text[start] == ' ' || text[start] == '\t') {
		start++
	}
	for end > at && (text[end-1] == ' ' || text[end-1] == '\t') {
		end--
	}
	const ellipsis = "…"
	budget := MaxExcerpt - 2*len(ellipsis)
	prefix, suffix := "", ""
	if end-start > MaxExcerpt {
		// Keep some context before the match, the match, and what follows.
		if at-start > 40 {
			start, prefix = at-40, ellipsis
		}
		if end-start > budget {
			end, suffix = start+budget, ellipsis
		}
	}
	line := text[start:end]
	// A cut may split a character; the ends of a line may hold any bytes.
	line = strings.ToValidUTF8(line, "\uFFFD")
	for len(prefix)+len(line)+len(suffix) > MaxExcerpt {
		_, size := utf8.DecodeLastRuneInString(line)
		line, suffix = line[:len(line)-size], ellipsis
	}
	return prefix + line + suffix
}

// findEach calls match with the index of each occurrence of anchor in
// lower, in order, and returns the first index >= 0 that match returns, or
// -1: a rule whose fixed part alone is too common checks the text around
// each one.
func findEach(lower []byte, anchor string, match func(j int) int) int {
	for off := 0; ; {
		j := bytes.Index(lower[off:], []byte(anchor))
		if j < 0 {
			return -1
		}
		j += off
		if i := match(j); i >= 0 {
			return i
		}
		off = j + len(anchor)
	}
}

// findSQLiteNear finds SQLite's `near "TOKEN": syntax error` on one line.
func findSQLiteNear(lower []byte) int {
	return findEach(lower, `": syntax error`, func(j int) int {
		ls := lineStartAt(lower, j)
		if k := bytes.LastIndex(lower[ls:j], []byte(`near "`)); k >= 0 {
			return ls + k
		}
		return -1
	})
}

// findSQLState finds SQLSTATE 42601 (PostgreSQL syntax_error) or 42000
// (ISO "syntax error or access rule violation", MySQL's 1064) however a
// driver formats it: "SQLSTATE 42601", "(SQLSTATE 42601)", "SQLSTATE[42000]",
// "sqlstate=42601", "SQLSTATE: 42000".
func findSQLState(lower []byte) int {
	const word = "sqlstate"
	return findEach(lower, word, func(j int) int {
		k := j + len(word)
		for n := 0; n < 3 && k < len(lower) && strings.IndexByte(" :=[(", lower[k]) >= 0; n++ {
			k++
		}
		if rest := lower[k:]; bytes.HasPrefix(rest, []byte("42601")) || bytes.HasPrefix(rest, []byte("42000")) {
			if len(rest) == 5 || !isDecimal(rest[5]) {
				return j
			}
		}
		return -1
	})
}

// findShNotFound finds the Almquist shells' "not found" (dash is /bin/sh
// on Debian and Ubuntu, busybox in Alpine images):
//
//	sh: 1: curl: not found
//	/bin/sh: curl: not found
//
// The whole line must have that shape: "not found" alone is too common.
func findShNotFound(lower []byte) int {
	const tail = ": not found"
	return findEach(lower, tail, func(j int) int {
		ls := lineStartAt(lower, j)
		if i, ok := shPrefix(lower[ls:j]); ok && lineEndAt(lower, j+len(tail)) == j+len(tail) {
			return ls + i
		}
		return -1
	})
}

// shPrefix reports whether line is `[…]sh: [N: ]WORD` and where it starts
// (after leading blanks).
func shPrefix(line []byte) (int, bool) {
	start := 0
	for start < len(line) && (line[start] == ' ' || line[start] == '\t') {
		start++
	}
	s := line[start:]
	i := bytes.Index(s, []byte("sh: "))
	if i < 0 || bytes.ContainsAny(s[:i], " \t") {
		return 0, false
	}
	rest := s[i+len("sh: "):]
	if n := digitsThenColon(rest); n > 0 {
		rest = rest[n:]
	}
	if len(rest) == 0 || bytes.ContainsAny(rest, " \t") || bytes.Contains(rest, []byte(": ")) {
		return 0, false
	}
	return start, true
}

// digitsThenColon returns the length of a leading "N: " in b, or 0.
func digitsThenColon(b []byte) int {
	n := 0
	for n < len(b) && isDecimal(b[n]) {
		n++
	}
	if n == 0 || !bytes.HasPrefix(b[n:], []byte(": ")) {
		return 0
	}
	return n + 2
}

func isDecimal(c byte) bool { return '0' <= c && c <= '9' }

// CheckSQLInjection returns the potential_sql_injection alert for ev when
// its tool result or error holds a SQL syntax error.
func CheckSQLInjection(ev audit.Event, now time.Time) (Alert, bool) {
	return checkOutput(ev, now, PotentialSQLInjection, MatchSQLError, "SQL syntax error")
}

// CheckCommandInjection returns the potential_command_injection alert for
// ev when its tool result or error holds "permission denied" or "command
// not found".
func CheckCommandInjection(ev audit.Event, now time.Time) (Alert, bool) {
	return checkOutput(ev, now, PotentialCommandInjection, MatchCommandError, "shell error")
}

func checkOutput(ev audit.Event, now time.Time, typ string, match func(string) (OutputMatch, bool), what string) (Alert, bool) {
	if ev.Tool == nil {
		return Alert{}, false
	}
	for _, f := range [...]struct{ name, text string }{{FieldResult, ev.Tool.Result}, {FieldError, ev.Tool.Error}} {
		m, ok := match(f.text)
		if !ok {
			continue
		}
		m.Field = f.name
		return eventAlert(typ, Warning, ev, now, fmt.Sprintf("%s (%s) in the %s of %s", what, m.Rule, f.name, toolLabel(ev.Tool.Name)), m), true
	}
	return Alert{}, false
}

// toolLabel names a tool in a message without echoing a long or odd name.
func toolLabel(name string) string {
	if name == "" {
		return "a tool"
	}
	if len(name) > 64 || strings.ContainsFunc(name, func(r rune) bool { return r < ' ' || r == 0x7f || r == utf8.RuneError }) {
		return "a tool"
	}
	return "tool " + name
}

// ChainLink is an event's place in the chain as a subscriber saw it: its
// seq and event_hash. The zero value means "unknown".
type ChainLink struct {
	Seq  int64
	Hash string
}

// HashDetails is the details of a hash_mismatch alert. Kind is
// audit.KindHashMismatch (event_hash is not the hash of the event's
// canonical body) or audit.KindPrevMismatch (prev_hash is not the hash of
// the event before it).
type HashDetails struct {
	Kind     string `json:"kind"`
	Expected string `json:"expected"`
	Actual   string `json:"actual"`
	PrevSeq  int64  `json:"prev_seq,omitempty"`
}

// CheckHash returns the hash_mismatch alert for ev, a streamed event (seed
// 003: "Event hash doesn't match content"): its event_hash must be the
// SHA-256 of its canonical body (audit.Body, DESIGN §6), and its prev_hash
// the event_hash of prev when prev is the event just before it (ZeroHash for
// seq 1). With prev unknown or not adjacent, only the event's own hash is
// checked (a gap is the auditor's seq_gap).
//
// auditd streams the stored body bytes with the event_hash column, so a
// mismatch means the database was edited (replay) or an event was altered
// on its way.
func CheckHash(ev audit.Event, prev ChainLink, now time.Time) (Alert, bool) {
	d, ok := hashProblem(ev, prev)
	if !ok {
		return Alert{}, false
	}
	msg := fmt.Sprintf("Event seq %d: event_hash does not match the hash of its content", ev.Seq)
	if d.Kind == audit.KindPrevMismatch {
		msg = fmt.Sprintf("Event seq %d: prev_hash does not link to the event_hash of seq %d", ev.Seq, d.PrevSeq)
	}
	return eventAlert(HashMismatch, Critical, ev, now, msg, d), true
}

func hashProblem(ev audit.Event, prev ChainLink) (HashDetails, bool) {
	body, err := audit.Body(withoutHash(ev))
	want := ""
	if err == nil {
		want = audit.Hash(body)
	}
	if ev.EventHash != want {
		return HashDetails{Kind: audit.KindHashMismatch, Expected: want, Actual: ev.EventHash}, true
	}
	switch {
	case ev.Seq == 1:
		prev = ChainLink{Seq: 0, Hash: audit.ZeroHash}
	case prev.Hash == "" || prev.Seq != ev.Seq-1:
		return HashDetails{}, false
	}
	if ev.PrevHash != prev.Hash {
		return HashDetails{Kind: audit.KindPrevMismatch, Expected: prev.Hash, Actual: ev.PrevHash, PrevSeq: prev.Seq}, true
	}
	return HashDetails{}, false
}

func withoutHash(ev audit.Event) audit.Event {
	ev.EventHash = ""
	return ev
}

// DestructiveDetails is the details secbot adds to an
// unauthorized_destructive alert.
type DestructiveDetails struct {
	ApprovalID     string `json:"approval_id,omitempty"`
	ApprovalStatus string `json:"approval_status,omitempty"`
	Resource       string `json:"resource,omitempty"`
	RawCommand     string `json:"raw_command,omitempty"` // at most MaxExcerpt bytes
}

// PatternMatcher applies secbot's four patterns to the audit stream in seq
// order. It remembers the last event's place in the chain, to check the
// next one's prev_hash.
type PatternMatcher struct {
	last ChainLink
}

// NewPatternMatcher returns a matcher whose next event follows after (the
// zero ChainLink when unknown).
func NewPatternMatcher(after ChainLink) *PatternMatcher { return &PatternMatcher{last: after} }

// Last returns the place of the last event matched.
func (m *PatternMatcher) Last() ChainLink { return m.last }

// Match returns the alerts for ev, at most one per pattern, hash_mismatch
// first. g is what the caller knows of the approval ev cites (see
// CheckDestructive).
//
// Incident events are checked only for hash_mismatch: their content
// describes other events (often quoting the very output that matched), so
// matching it would make secbot answer its own incidents forever.
func (m *PatternMatcher) Match(ev audit.Event, g Grant, now time.Time) []Alert {
	var alerts []Alert
	if a, ok := CheckHash(ev, m.last, now); ok {
		alerts = append(alerts, a)
	}
	m.last = ChainLink{Seq: ev.Seq, Hash: ev.EventHash}
	if ev.EventType == audit.TypeIncident {
		return alerts
	}
	if a, ok := CheckDestructive(ev, g, now); ok {
		d := DestructiveDetails{ApprovalID: ev.ApprovalID}
		if g.Request != nil {
			d.ApprovalStatus = string(g.Request.Status)
		}
		if ev.Resource != nil && (ev.Resource.Type != "" || ev.Resource.Name != "") {
			d.Resource = cutDetail(ev.Resource.Type + ":" + ev.Resource.Name)
		}
		if ev.Tool != nil {
			d.RawCommand = cutDetail(ev.Tool.RawCommand)
		}
		a.Details, _ = json.Marshal(d)
		alerts = append(alerts, a)
	}
	if a, ok := CheckSQLInjection(ev, now); ok {
		alerts = append(alerts, a)
	}
	if a, ok := CheckCommandInjection(ev, now); ok {
		alerts = append(alerts, a)
	}
	return alerts
}

// cutDetail bounds an untrusted string for an alert's details: at most
// MaxExcerpt bytes of valid UTF-8, "…" included when cut.
func cutDetail(s string) string {
	s = strings.ToValidUTF8(s, "\uFFFD")
	if len(s) <= MaxExcerpt {
		return s
	}
	return termtext.Truncate(s, MaxExcerpt-len(termtext.Ellipsis))
}
