package detect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

var patNow = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// matchCase is one text for an output matcher: the rule it must match
// ("" = none) and, when not "", the line the match must carry.
type matchCase struct {
	name, text string
	rule       string
	line       string
}

func testMatcher(t *testing.T, fn string, match func(string) (OutputMatch, bool), tests []matchCase) {
	t.Helper()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m, ok := match(tt.text)
			if ok != (tt.rule != "") {
				t.Fatalf("%s(%q) = %+v, %v; want rule %q", fn, tt.text, m, ok, tt.rule)
			}
			if !ok {
				return
			}
			if m.Rule != tt.rule {
				t.Errorf("rule = %q, want %q", m.Rule, tt.rule)
			}
			if tt.line != "" && m.Line != tt.line {
				t.Errorf("line = %q, want %q", m.Line, tt.line)
			}
		})
	}
}

func TestMatchSQLError(t *testing.T) {
	testMatcher(t, "MatchSQLError", MatchSQLError, []matchCase{
		{"postgres", `ERROR:  syntax error at or near "OR"` + "\nLINE 1: SELECT * FROM users WHERE name = '' OR 1=1 --'", "postgres_syntax_error", `ERROR:  syntax error at or near "OR"`},
		{"postgres end of input", "psql:<stdin>:1: ERROR:  syntax error at end of input", "postgres_syntax_error", "psql:<stdin>:1: ERROR:  syntax error at end of input"},
		{"lib/pq", `pq: syntax error at or near "'"`, "postgres_syntax_error", `pq: syntax error at or near "'"`},
		{"postgres unterminated", `ERROR:  unterminated quoted string at or near "'abc"`, "unterminated_quoted_string", `ERROR:  unterminated quoted string at or near "'abc"`},
		{"postgres unterminated identifier", `ERROR:  unterminated quoted identifier at or near """`, "unterminated_quoted_identifier", `ERROR:  unterminated quoted identifier at or near """`},
		{"mysql", "ERROR 1064 (42000) at line 1: You have an error in your SQL syntax; check the manual that corresponds to your MySQL server version for the right syntax to use near ''' at line 1", "mysql_syntax_error", ""},
		{"mariadb lower case", "error 1064: you have an error in your sql syntax near 'x'", "mysql_syntax_error", "error 1064: you have an error in your sql syntax near 'x'"},
		{"sqlite", "Error: in prepare, near \"OR\": syntax error (1)", "sqlite_syntax_error", "Error: in prepare, near \"OR\": syntax error (1)"},
		{"sqlite older", `Parse error: near "'1'": syntax error`, "sqlite_syntax_error", `Parse error: near "'1'": syntax error`},
		{"sqlite token", `Error: unrecognized token: "'abc"`, "sqlite_unrecognized_token", `Error: unrecognized token: "'abc"`},
		{"sql server unclosed", "Msg 105, Level 15, State 1, Line 1\nUnclosed quotation mark after the character string 'abc'.", "sqlserver_unclosed_quotation", "Unclosed quotation mark after the character string 'abc'."},
		{"sql server syntax", "Msg 102, Level 15, State 1, Line 1\nIncorrect syntax near 'OR'.", "sqlserver_syntax_error", "Incorrect syntax near 'OR'."},
		{"oracle 933", "ORA-00933: SQL command not properly ended", "oracle_ora_00933", "ORA-00933: SQL command not properly ended"},
		{"oracle 1756", "ORA-01756: quoted string not properly terminated", "oracle_ora_01756", "ORA-01756: quoted string not properly terminated"},
		{"pgx sqlstate", "ERROR: bad input (SQLSTATE 42601)", "sqlstate_syntax_error", "ERROR: bad input (SQLSTATE 42601)"},
		{"pdo sqlstate", "SQLSTATE[42000]: Syntax error or access violation: 1064", "sqlstate_syntax_error", "SQLSTATE[42000]: Syntax error or access violation: 1064"},
		{"sqlstate equals", "sqlstate=42601", "sqlstate_syntax_error", "sqlstate=42601"},
		{"windows line ends", "ok\r\nERROR:  syntax error at or near \"x\"\r\n", "postgres_syntax_error", `ERROR:  syntax error at or near "x"`},
		{"indented", "   \tSYNTAX ERROR AT OR NEAR \"x\"  ", "postgres_syntax_error", `SYNTAX ERROR AT OR NEAR "x"`},
		{"the first of two", "Incorrect syntax near 'a'.\nsyntax error at or near \"b\"", "sqlserver_syntax_error", "Incorrect syntax near 'a'."},

		{"empty", "", "", ""},
		{"a normal result", " id | name\n----+------\n  1 | alice\n(1 row)", "", ""},
		{"other sqlstate", "ERROR: duplicate key (SQLSTATE 23505)", "", ""},
		{"sqlstate longer code", "SQLSTATE 426010", "", ""},
		{"sqlstate too far", "SQLSTATE is   42601", "", ""},
		{"near without syntax error", `near "x": no such table`, "", ""},
		{"sqlite parts on two lines", "near \"x\nfoo\": syntax error", "", ""},
		{"json parser token", "Unrecognized token 'abc': was expecting (JSON String, Number, Array, Object)", "", ""},
		{"shell error", "bash: foo: command not found", "", ""},
	})
}

func TestMatchCommandError(t *testing.T) {
	testMatcher(t, "MatchCommandError", MatchCommandError, []matchCase{
		{"bash", "bash: line 1: curl: command not found", "command_not_found", "bash: line 1: curl: command not found"},
		{"zsh", "zsh: command not found: nc", "command_not_found", "zsh: command not found: nc"},
		{"dash", "sh: 1: wget: not found", "command_not_found", "sh: 1: wget: not found"},
		{"busybox", "/bin/sh: curl: not found", "command_not_found", "/bin/sh: curl: not found"},
		{"cmd.exe", "'whoami' is not recognized as an internal or external command,", "command_not_recognized", ""},
		{"permission", "cat: /etc/shadow: Permission denied", "permission_denied", "cat: /etc/shadow: Permission denied"},
		{"upper", "PERMISSION DENIED (publickey)", "permission_denied", "PERMISSION DENIED (publickey)"},
		{"second line", "total 0\nls: cannot open directory '/root': Permission denied\n", "permission_denied", "ls: cannot open directory '/root': Permission denied"},

		{"empty", "", "", ""},
		{"file not found", "cat: x.txt: No such file or directory", "", ""},
		{"not found alone", "Error from server (NotFound): pods \"web\" not found", "", ""},
		{"sh not found with text after", "sh: 1: curl: not found, retrying", "", ""},
		{"not found in prose", "the key: not found", "", ""},
		{"sql error", `syntax error at or near "x"`, "", ""},
	})
}

// TestMatchBounds: the scan stops after MaxScanBytes, and the line an alert
// carries is cut around the match.
func TestMatchBounds(t *testing.T) {
	msg := `syntax error at or near "x"`
	late := strings.Repeat("a", MaxScanBytes) + "\n" + msg
	if m, ok := MatchSQLError(late); ok {
		t.Errorf("a match after MaxScanBytes was found: %+v", m)
	}
	early := strings.Repeat("a", MaxScanBytes-len(msg)-1) + "\n" + msg
	if _, ok := MatchSQLError(early); !ok {
		t.Error("a match that ends at MaxScanBytes was not found")
	}

	long := strings.Repeat("é", 1000) + msg + strings.Repeat("z", 1000)
	m, ok := MatchSQLError(long)
	if !ok {
		t.Fatal("no match in a long line")
	}
	if len(m.Line) > MaxExcerpt || !utf8.ValidString(m.Line) {
		t.Errorf("line is %d bytes (valid UTF-8: %v), want at most %d", len(m.Line), utf8.ValidString(m.Line), MaxExcerpt)
	}
	if !strings.Contains(m.Line, msg) || !strings.HasPrefix(m.Line, "…") || !strings.HasSuffix(m.Line, "…") {
		t.Errorf("line = %q, want the match with … on both sides", m.Line)
	}
}

func TestCheckOutput(t *testing.T) {
	ev := audit.Event{
		Seq: 7, EventID: "ev-7", EventType: audit.TypeToolExecution, Agent: "db-agent",
		Tool: &audit.Tool{Name: "psql", RawCommand: "psql -c \"select * from t where x = 'a''\"",
			Error: "ERROR:  unterminated quoted string at or near \"'\"\nLINE 1: select"},
	}
	a, ok := CheckSQLInjection(ev, patNow)
	if !ok {
		t.Fatal("no potential_sql_injection alert")
	}
	if a.Type != PotentialSQLInjection || a.Severity != Warning || a.Agent != "db-agent" || a.Seq != 7 || a.EventID != "ev-7" || !a.Timestamp.Equal(patNow) {
		t.Errorf("alert = %+v", a)
	}
	var d OutputMatch
	if err := json.Unmarshal(a.Details, &d); err != nil {
		t.Fatal(err)
	}
	if d != (OutputMatch{Rule: "unterminated_quoted_string", Field: FieldError, Line: `ERROR:  unterminated quoted string at or near "'"`}) {
		t.Errorf("details = %+v", d)
	}
	if a.Message != "SQL syntax error (unterminated_quoted_string) in the tool.error of tool psql" {
		t.Errorf("message = %q", a.Message)
	}
	if _, ok := CheckCommandInjection(ev, patNow); ok {
		t.Error("a SQL error raised potential_command_injection")
	}

	// The result is searched before the error; an odd tool name is not echoed.
	ev.Tool = &audit.Tool{Name: "x\x1b[31m", Result: "sh: 1: nc: not found", Error: "permission denied"}
	a, ok = CheckCommandInjection(ev, patNow)
	if !ok {
		t.Fatal("no potential_command_injection alert")
	}
	if err := json.Unmarshal(a.Details, &d); err != nil {
		t.Fatal(err)
	}
	if d.Field != FieldResult || d.Rule != "command_not_found" {
		t.Errorf("details = %+v", d)
	}
	if a.Message != "shell error (command_not_found) in the tool.result of a tool" {
		t.Errorf("message = %q", a.Message)
	}

	// No tool, or output elsewhere than the tool's result and error.
	for _, ev := range []audit.Event{
		{EventType: "note", Agent: "a"},
		{EventType: "tool_execution", Tool: &audit.Tool{RawCommand: "grep 'permission denied' /var/log/syslog"}},
		{EventType: "tool_execution", Data: json.RawMessage(`{"x":"syntax error at or near"}`)},
	} {
		if a, ok := CheckSQLInjection(ev, patNow); ok {
			t.Errorf("CheckSQLInjection(%+v) = %+v", ev, a)
		}
		if a, ok := CheckCommandInjection(ev, patNow); ok {
			t.Errorf("CheckCommandInjection(%+v) = %+v", ev, a)
		}
	}
}

// sealChain seals events the way auditd's writer does and returns them as a
// subscriber decodes them from the stream (JSON with event_hash).
func sealChain(t testing.TB, evs ...audit.Event) []audit.Event {
	t.Helper()
	prev := audit.ZeroHash
	out := make([]audit.Event, len(evs))
	for i, ev := range evs {
		if ev.EventID == "" {
			ev.EventID = fmt.Sprintf("ev-%d", i+1)
		}
		rec, err := audit.Seal(&ev, int64(i+1), prev, patNow.Add(time.Duration(i)*time.Millisecond+123))
		if err != nil {
			t.Fatal(err)
		}
		prev = rec.EventHash
		line, err := json.Marshal(ev)
		if err != nil {
			t.Fatal(err)
		}
		if err := json.Unmarshal(line, &out[i]); err != nil {
			t.Fatal(err)
		}
	}
	return out
}

func chainSample() []audit.Event {
	return []audit.Event{
		{EventType: audit.TypeToolExecution, Agent: "a", ActionClass: "read", Principal: &audit.Principal{UserID: "u", Roles: []string{"dba"}},
			Resource: &audit.Resource{Type: "database", Name: "prod", Tags: []string{"production"}},
			Tool:     &audit.Tool{Name: "psql", Parameters: json.RawMessage(`{"b": 1, "a": [true, null, "<&>"]}`), RawCommand: "select 1", Result: strings.Repeat("ü", 600), DurationMS: 12},
			Outcome:  &audit.Outcome{Status: "success"}},
		{EventType: audit.TypePolicyDecision, Agent: "b", TraceID: "t", SessionID: "s", PolicyDecision: json.RawMessage(`{"effect":"allow","x":1.5e3}`)},
		{EventType: audit.TypeIncident, Agent: "c", Data: json.RawMessage(`{"type":"x"}`)},
	}
}

func TestCheckHash(t *testing.T) {
	evs := sealChain(t, chainSample()...)
	// An untouched chain raises nothing, whatever the matcher knew before.
	for _, start := range []ChainLink{{}, {Seq: 0, Hash: audit.ZeroHash}} {
		m := NewPatternMatcher(start)
		for _, ev := range evs {
			for _, a := range m.Match(ev, Grant{}, patNow) {
				if a.Type == HashMismatch {
					t.Errorf("seq %d: %s", ev.Seq, a.Message)
				}
			}
		}
	}

	tests := []struct {
		name   string
		edit   func(evs []audit.Event) audit.Event // returns the event to check after evs[0]
		kind   string                              // "" = no alert
		expect func(evs []audit.Event) string
	}{
		{"intact", func(e []audit.Event) audit.Event { return e[1] }, "", nil},
		{"edited agent", func(e []audit.Event) audit.Event { e[1].Agent = "mallory"; return e[1] }, audit.KindHashMismatch, nil},
		{"edited timestamp", func(e []audit.Event) audit.Event { e[1].Timestamp = e[1].Timestamp.Add(time.Nanosecond); return e[1] }, audit.KindHashMismatch, nil},
		{"edited JSON field", func(e []audit.Event) audit.Event {
			e[1].PolicyDecision = json.RawMessage(`{"effect":"deny","x":1.5e3}`)
			return e[1]
		}, audit.KindHashMismatch, nil},
		{"event_hash column edited", func(e []audit.Event) audit.Event { e[1].EventHash = strings.Repeat("0", 64); return e[1] }, audit.KindHashMismatch, nil},
		{"no event_hash", func(e []audit.Event) audit.Event { e[1].EventHash = ""; return e[1] }, audit.KindHashMismatch, nil},
		{"invalid JSON field", func(e []audit.Event) audit.Event { e[1].Data = json.RawMessage(`{`); return e[1] }, audit.KindHashMismatch, nil},
		{"rehashed after an edit", func(e []audit.Event) audit.Event {
			// Whoever edited the body recomputed its hash, but the next
			// event still links to the original.
			ev := e[1]
			ev.Agent, ev.EventHash = "mallory", ""
			body, err := audit.Body(ev)
			if err != nil {
				t.Fatal(err)
			}
			ev.EventHash = audit.Hash(body)
			e[1] = ev
			return e[2]
		}, audit.KindPrevMismatch, func(e []audit.Event) string { return e[1].EventHash }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sealChain(t, chainSample()...)
			m := NewPatternMatcher(ChainLink{})
			m.Match(e[0], Grant{}, patNow)
			check := tt.edit(e)
			if check.Seq == 3 {
				m.Match(e[1], Grant{}, patNow)
			}
			var got []Alert
			for _, a := range m.Match(check, Grant{}, patNow) {
				if a.Type == HashMismatch {
					got = append(got, a)
				}
			}
			if tt.kind == "" {
				if len(got) != 0 {
					t.Fatalf("alerts: %+v", got)
				}
				return
			}
			if len(got) != 1 {
				t.Fatalf("%d hash_mismatch alerts, want 1", len(got))
			}
			a := got[0]
			var d HashDetails
			if err := json.Unmarshal(a.Details, &d); err != nil {
				t.Fatal(err)
			}
			if d.Kind != tt.kind || a.Severity != Critical || a.Seq != check.Seq || a.EventID != check.EventID {
				t.Errorf("alert = %+v, details %+v", a, d)
			}
			if d.Actual == d.Expected {
				t.Errorf("details %+v: expected equals actual", d)
			}
			if tt.expect != nil && d.Expected != tt.expect(e) {
				t.Errorf("expected = %s, want %s", d.Expected, tt.expect(e))
			}
		})
	}
}

func TestCheckHashLinks(t *testing.T) {
	evs := sealChain(t, chainSample()...)
	tests := []struct {
		name string
		prev ChainLink
		ev   audit.Event
		want bool
	}{
		{"first event links to zeros", ChainLink{}, evs[0], false},
		{"adjacent", ChainLink{1, evs[0].EventHash}, evs[1], false},
		{"adjacent, wrong hash", ChainLink{1, strings.Repeat("a", 64)}, evs[1], true},
		{"unknown previous", ChainLink{}, evs[2], false},
		{"not adjacent", ChainLink{1, strings.Repeat("a", 64)}, evs[2], false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			a, got := CheckHash(tt.ev, tt.prev, patNow)
			if got != tt.want {
				t.Errorf("CheckHash = %+v, %v; want %v", a, got, tt.want)
			}
		})
	}
	// seq 1 must link to ZeroHash whatever the previous link says.
	bad := evs[0]
	bad.PrevHash = strings.Repeat("b", 64)
	if _, ok := CheckHash(bad, ChainLink{}, patNow); !ok {
		t.Error("seq 1 with a prev_hash other than zeros raised nothing")
	}
}

func TestPatternMatcher(t *testing.T) {
	web := audit.Resource{Type: "kubernetes", Name: "web"}
	cmd := "kubectl delete pod web " + strings.Repeat("x", 300)
	destructive := audit.Event{
		EventType: audit.TypeToolExecution, Agent: "ops", ActionClass: "destructive", ApprovalID: "ap-1",
		Resource: &web,
		Tool:     &audit.Tool{Name: "bash", RawCommand: cmd, Result: "Error from server (Forbidden): permission denied"},
		// Set by auditd (DESIGN §11): who wrote it, and the hash of the
		// action an event citing an approval records.
		Caller:     &audit.Caller{Name: "ops", Roles: []string{"agent"}},
		ActionHash: approval.ActionHash(web, "destructive", "bash", cmd),
	}
	sqlErr := audit.Event{EventType: audit.TypeToolExecution, Agent: "db", Tool: &audit.Tool{Name: "psql", Error: `syntax error at or near "'"`}}
	incident := audit.Event{EventType: audit.TypeIncident, Agent: "db", ActionClass: "destructive",
		Tool: &audit.Tool{Result: `syntax error at or near "'"; permission denied`}}
	evs := sealChain(t, destructive, sqlErr, incident)

	types := func(as []Alert) string {
		var s []string
		for _, a := range as {
			s = append(s, a.Type)
		}
		return strings.Join(s, ",")
	}
	m := NewPatternMatcher(ChainLink{})
	pending := approvalAt(t, "ap-1", "ops", web, cmd, approval.Pending, patNow.Add(-time.Hour), patNow)
	got := m.Match(evs[0], Grant{Request: &pending}, patNow)
	if types(got) != "unauthorized_destructive,potential_command_injection" {
		t.Fatalf("destructive event: %s", types(got))
	}
	var dd DestructiveDetails
	if err := json.Unmarshal(got[0].Details, &dd); err != nil {
		t.Fatal(err)
	}
	if dd.ApprovalID != "ap-1" || dd.ApprovalStatus != "pending" || dd.Resource != "kubernetes:web" ||
		len(dd.RawCommand) > MaxExcerpt || !strings.HasPrefix(dd.RawCommand, "kubectl delete pod web") || !strings.HasSuffix(dd.RawCommand, "…") {
		t.Errorf("details = %+v", dd)
	}
	if got := m.Match(evs[1], Grant{}, patNow); types(got) != "potential_sql_injection" {
		t.Errorf("sql error: %s", types(got))
	}
	// An incident quoting the output matches nothing (no loop), but its hash
	// is still checked.
	if got := m.Match(evs[2], Grant{}, patNow); len(got) != 0 {
		t.Errorf("incident: %s", types(got))
	}
	if m.Last() != (ChainLink{3, evs[2].EventHash}) {
		t.Errorf("Last = %+v", m.Last())
	}
	tampered := evs[2]
	tampered.Agent = "x"
	if got := NewPatternMatcher(ChainLink{2, evs[1].EventHash}).Match(tampered, Grant{}, patNow); types(got) != "hash_mismatch" {
		t.Errorf("tampered incident: %s", types(got))
	}

	// An approved approval does not authorize the destructive action until
	// it is consumed for it (DESIGN §11); consumed by the event's caller
	// for exactly this action, before it, it does.
	approved := approvalAt(t, "ap-1", "ops", web, cmd, approval.Approved, patNow.Add(-time.Hour), patNow)
	got = NewPatternMatcher(ChainLink{}).Match(evs[0], Grant{Request: &approved}, patNow)
	if types(got) != "unauthorized_destructive,potential_command_injection" {
		t.Fatalf("approved, not consumed: %s", types(got))
	}
	if err := json.Unmarshal(got[0].Details, &dd); err != nil || dd.ApprovalStatus != "approved" {
		t.Errorf("approved, not consumed: details %+v, %v", dd, err)
	}
	consumed := approvalAt(t, "ap-1", "ops", web, cmd, approval.Consumed, patNow.Add(-10*time.Minute), patNow.Add(-time.Minute))
	if got := NewPatternMatcher(ChainLink{}).Match(evs[0], Grant{Request: &consumed}, patNow); types(got) != "potential_command_injection" {
		t.Errorf("consumed for this action: %s", types(got))
	}
	// The same approval, its one execution used by an earlier event.
	if got := NewPatternMatcher(ChainLink{}).Match(evs[0], Grant{Request: &consumed, UsedBy: "ev-0"}, patNow); types(got) != "unauthorized_destructive,potential_command_injection" {
		t.Errorf("second use: %s", types(got))
	}
}

// FuzzOutputPatterns checks properties of the output matchers on any text:
// they never panic; a match carries a known rule and a short, valid UTF-8
// excerpt of a line of the text; ASCII case does not change the outcome;
// and text past MaxScanBytes is never read.
func FuzzOutputPatterns(f *testing.F) {
	for _, s := range []string{
		`ERROR:  syntax error at or near "OR"`, "near \"x\": syntax error", "SQLSTATE[42000]", "(SQLSTATE 42601)",
		"sh: 1: curl: not found", "/bin/sh: x: not found", "Permission denied", "ORA-01756", "é\xffsyntax error at or near",
		"near \"\n\": syntax error", "sqlstate", "sqlstate=:426019", "sh: 1: : not found",
	} {
		f.Add(s)
	}
	rules := map[string]bool{}
	for _, r := range append(append([]outputRule{}, sqlRules...), commandRules...) {
		rules[r.name] = true
	}
	f.Fuzz(func(t *testing.T, text string) {
		for _, match := range []func(string) (OutputMatch, bool){MatchSQLError, MatchCommandError} {
			m, ok := match(text)
			if !ok {
				if m != (OutputMatch{}) {
					t.Fatalf("no match but %+v", m)
				}
			} else {
				if !rules[m.Rule] {
					t.Fatalf("unknown rule %q", m.Rule)
				}
				if len(m.Line) > MaxExcerpt || !utf8.ValidString(m.Line) || strings.ContainsAny(m.Line, "\r\n") {
					t.Fatalf("bad excerpt %q", m.Line)
				}
				if m.Line == "" {
					t.Fatalf("empty excerpt for %q", text)
				}
			}
			up, ok2 := match(upperASCII(text))
			if ok != ok2 || up.Rule != m.Rule || len(up.Line) != len(m.Line) {
				t.Fatalf("%q: %+v, %v but upper case: %+v, %v", text, m, ok, up, ok2)
			}
			if len(text) <= MaxScanBytes {
				padded, ok3 := match(text + strings.Repeat("\n", MaxScanBytes-len(text)+1) + `syntax error at or near "x" permission denied`)
				if ok3 != ok || padded.Rule != m.Rule {
					t.Fatalf("text after MaxScanBytes changed the outcome of %q: %+v", text, padded)
				}
			}
		}
	})
}

func upperASCII(s string) string {
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - ('a' - 'A')
		}
	}
	return string(b)
}

// BenchmarkPatternMatcher: one typical tool event through all four
// patterns, including the hash recheck.
func BenchmarkPatternMatcher(b *testing.B) {
	evs := sealChain(b, audit.Event{EventType: audit.TypeToolExecution, Agent: "a", ActionClass: "read",
		Tool: &audit.Tool{Name: "psql", RawCommand: "select * from orders limit 10", Result: strings.Repeat("row | value\n", 40)}})
	m := NewPatternMatcher(ChainLink{})
	for b.Loop() {
		m.last = ChainLink{}
		if len(m.Match(evs[0], Grant{}, patNow)) != 0 {
			b.Fatal("alert")
		}
	}
}
