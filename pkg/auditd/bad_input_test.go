package auditd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/store"
)

// Bad input, everywhere, as POST /api/events refuses it (issue 13): every
// JSON body of the API refuses duplicate members (also ones differing in
// case, which encoding/json would merge), invalid UTF-8 (which
// encoding/json would turn into U+FFFD), integers beyond 2^53 (which it
// would round) and NUL in identifiers, with a 400 naming the problem, and
// stores nothing.
func TestBadInputEveryBody(t *testing.T) {
	d := startDaemon(t, "", nil)
	if _, err := d.c.Append(ctxT(t), toolEvent("a1", "ls")); err != nil {
		t.Fatal(err)
	}
	// Each endpoint's body, with "@" where an identifier's text goes and
	// first its first member, which the duplicate cases repeat.
	endpoints := []struct {
		path, contentType, body, first string
	}{
		{"/api/events", "application/json", `{"event_type":"tool_execution","agent":"@","data":{"n":1}}`, `"event_type":"x"`},
		{"/api/events", "application/x-ndjson", `{"event_type":"tool_execution","agent":"@","data":{"n":1}}`, `"event_type":"x"`},
		{"/v1/approvals", "application/json", `{"resource":{"type":"database","name":"@"},"action":"write","reason":"r"}`, `"resource":{"type":"x","name":"y"}`},
		{"/v1/approvals/apr_none/approve", "application/json", `{"reason":"@"}`, `"reason":"x"`},
		{"/v1/approvals/apr_none/deny", "application/json", `{"reason":"@"}`, `"reason":"x"`},
		{"/api/v1/decisions", "application/json", `{"agent":"@","resource":{"type":"database","name":"db"},"action":"write"}`, `"action":"read"`},
		{"/api/v1/incidents", "application/json", `{"type":"t","severity":"info","source":"@","message":"m","details":{"n":1}}`, `"type":"x"`},
	}
	caseDup := func(first string) string { // "reason" → "Reason"
		return `"` + strings.ToUpper(first[1:2]) + first[2:]
	}
	for _, ep := range endpoints {
		bad := []struct{ name, body, want string }{
			{"duplicate member", strings.Replace(ep.body, "{", "{"+ep.first+",", 1), "duplicate member"},
			{"invalid UTF-8", strings.Replace(ep.body, "@", "a\xffb", 1), "UTF-8"},
			{"NUL in an identifier", strings.Replace(ep.body, "@", `a\u0000b`, 1), "NUL character"},
			{"integer beyond 2^53", strings.Replace(ep.body, `"@"`, `9007199254740993`, 1), ""},
			{"number beyond 2^53 in a JSON field", strings.Replace(strings.Replace(ep.body, `{"n":1}`, `{"n":-9007199254740993}`, 1), "@", "x", 1), "2^53"},
		}
		if !strings.HasPrefix(ep.path, "/api/events") {
			// encoding/json would take {"Reason":…} as "reason".
			bad = append(bad, struct{ name, body, want string }{"duplicate member but for case",
				strings.Replace(strings.Replace(ep.body, "{", "{"+caseDup(ep.first)+",", 1), "@", "x", 1), "but for case"})
			bad[2].want = "NUL"
			bad[3].want = "2^53"
		}
		for _, b := range bad {
			if !strings.Contains(b.body, "{\"n\":-") && b.name == "number beyond 2^53 in a JSON field" {
				continue // no JSON-valued field in this body
			}
			t.Run(ep.path+" "+ep.contentType+" "+b.name, func(t *testing.T) {
				seq, _ := d.srv.Head()
				status, msg := postBody(t, d.url+ep.path, ep.contentType, b.body)
				if status != http.StatusBadRequest || !strings.Contains(msg, b.want) {
					t.Fatalf("%s → %d %q, want 400 with %q", b.body, status, msg, b.want)
				}
				if got, _ := d.srv.Head(); got != seq {
					t.Fatalf("head moved from %d to %d", seq, got)
				}
				if rows, _ := d.st.ListApprovals(ctxT(t), store.ApprovalFilter{Status: approval.Pending, Limit: 10}); len(rows) != 0 {
					t.Fatalf("an approval request was stored: %+v", rows)
				}
			})
		}
	}
}

// Malformed query strings are a 400 naming the parameter, never an
// unfiltered page: r.URL.Query() silently drops a pair it cannot decode,
// so GET /api/events?agent=%zz would list every agent's events.
func TestBadQueryStrings(t *testing.T) {
	d := startDaemon(t, "", nil)
	for _, tc := range []struct{ query, want string }{
		{"/api/events?agent=%zz", `query parameter "agent": the value is not URL-encoded`},
		{"/api/events?agent=a%", `query parameter "agent": the value is not URL-encoded`},
		{"/api/events?a%zz=1", `query parameter "a%zz" is not URL-encoded`},
		{"/api/events?agent=a;b", `query parameter "agent" holds a ';'`},
		{"/api/events?agent=a%00b", `query parameter "agent" has a control character at byte 1`},
		{"/api/events?agent=a%0Ab", `query parameter "agent" has a control character`},
		{"/api/events?agent=%FF", `query parameter "agent" is not valid UTF-8`},
		{"/api/v1/governance/events?session_id=%zz", `query parameter "session_id"`},
		{"/v1/approvals?status=%zz", `query parameter "status"`},
		{"/v1/approvals/pending?x=%", `query parameter "x"`},
		{"/v1/approvals/apr_none?wait=%zz", `query parameter "wait"`},
		{"/api/v1/governance/explain?resource_type=database&resource_name=%zz&action=read", `query parameter "resource_name"`},
	} {
		t.Run(tc.query, func(t *testing.T) {
			req, err := http.NewRequest(http.MethodGet, d.url+tc.query, nil)
			if err != nil {
				t.Fatal(err)
			}
			req.Header.Set("X-Govkit-User", "alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			status, msg := readError(t, resp)
			if status != http.StatusBadRequest || !strings.Contains(msg, tc.want) {
				t.Fatalf("GET %s → %d %q, want 400 with %q", tc.query, status, msg, tc.want)
			}
		})
	}
}

func postBody(t *testing.T, url, contentType, body string) (int, string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, url, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Content-Type", contentType)
	req.Header.Set("X-Govkit-User", "alice")
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	return readError(t, resp)
}

func readError(t *testing.T, resp *http.Response) (int, string) {
	t.Helper()
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	var e struct {
		Error string `json:"error"`
	}
	if err := json.Unmarshal(b, &e); err != nil {
		return resp.StatusCode, string(b)
	}
	return resp.StatusCode, e.Error
}
