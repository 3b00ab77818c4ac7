package auditd_test

import (
	"bytes"
	"encoding/json"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/govapi"
)

// Every endpoint that decodes a body answers a bad one in JSON's terms,
// with the status and code a client branches on, and never in Go's (issue
// 20: "cannot unmarshal string into Go struct field DecisionRequest.tool of
// type govapi.Tool" becomes "tool must be an object {name, raw_command,
// parameters}").
func TestBodyErrorsSpeakJSON(t *testing.T) {
	d := startDaemon(t, "", nil)
	type bad struct{ name, body, want string }
	// common are the bad bodies every endpoint refuses alike.
	common := []bad{
		{"ends early", `{"reason":`, "line 1, column 11: the JSON ends early"},
		{"syntax", "{\n ,}", "line 2, column 2: invalid character ','"},
		{"trailing data", `{} {}`, "line 1, column 4: data after the JSON value"},
		{"unknown member", `{"reasn":"x"}`, `unknown field "reasn"`},
		{"not an object", `["x"]`, "must be a"},
		{"too large", `{"reason":"` + strings.Repeat("x", govapi.MaxBody) + `"}`, "larger than 1048576 bytes"},
	}
	endpoints := []struct {
		path, contentType string
		emptyOK           bool
		bad               []bad // what this endpoint's body gets wrong
	}{
		{"/api/events", "application/json", false, []bad{
			{"outcome", `{"event_type":"x","outcome":"ok"}`, "outcome must be an object {status}"},
			{"tool", `{"event_type":"x","tool":"ls"}`, "tool must be an object {name, parameters, raw_command, result, error, duration_ms}"},
			{"agent", `{"event_type":"x","agent":1}`, "agent must be a string"},
		}},
		{"/api/events", "application/x-ndjson", false, []bad{
			{"second line", "{\"event_type\":\"x\"}\n{\"event_type\":\"x\",\"outcome\":1}", "line 2: outcome must be an object {status}"},
			{"second line syntax", "{\"event_type\":\"x\"}\n{\"event_type\":", "line 2, column 15: the JSON ends early"},
		}},
		{"/api/v1/decisions", "application/json", false, []bad{
			{"tool", `{"resource":{"type":"database","name":"db"},"action":"write","tool":"psql"}`,
				"request body: tool must be an object {name, raw_command, parameters}, not a string"},
			{"tool.raw_command", `{"tool":{"raw_command":["psql"]}}`, "tool.raw_command must be a string, not an array"},
			{"resource.tags", `{"resource":{"tags":"prod"}}`, "resource.tags must be an array of strings, not a string"},
			{"rows", `{"rows_affected":1.5}`, "rows_affected must be a whole number, not 1.5"},
			{"principal", `{"principal":"alice"}`, "principal must be an object {"},
			{"post_execution", `{"post_execution":"yes"}`, "post_execution must be a boolean, not a string"},
			{"unknown nested", `{"tool":{"name":"x","rawCommand":"y"}}`, `unknown field "tool.rawCommand": tool takes {name, raw_command, parameters} (did you mean "raw_command"?)`},
		}},
		{"/api/v1/incidents", "application/json", false, []bad{
			{"event_ids", `{"type":"t","severity":"info","source":"s","message":"m","event_ids":"e1"}`, "event_ids must be an array of strings, not a string"},
			{"message", `{"message":{}}`, "message must be a string, not an object"},
		}},
		{"/v1/approvals", "application/json", false, []bad{
			{"resource", `{"resource":"db","action":"write"}`, "resource must be an object {type, name, tags}, not a string"},
			{"quorum", `{"quorum":"2"}`, "quorum must be a whole number, not a string"},
		}},
		{"/v1/approvals/apr_none/consume", "application/json", false, []bad{
			{"action_hash", `{"action_hash":1}`, "action_hash must be a string, not a number"},
		}},
		{"/v1/approvals/apr_none/approve", "application/json", true, []bad{
			{"reason", `{"reason":true}`, "reason must be a string, not a boolean"},
		}},
		{"/v1/approvals/apr_none/deny", "application/json", true, []bad{
			{"reason", `{"reason":[]}`, "reason must be a string, not an array"},
		}},
		{"/v1/approvals/apr_none/cancel", "application/json", true, []bad{
			{"any member", `{"reason":"x"}`, `unknown field "reason": the object takes no members`},
		}},
	}
	for _, ep := range endpoints {
		cases := append(append([]bad{}, ep.bad...), common...)
		if !ep.emptyOK {
			cases = append(cases, bad{"empty", " ", "empty: expected "})
		}
		for _, tc := range cases {
			t.Run(ep.path+" "+ep.contentType+" "+tc.name, func(t *testing.T) {
				if ep.contentType == "application/x-ndjson" {
					switch tc.name { // each line is an event
					case "syntax":
						tc.want = "line 1, column 2: the JSON ends early"
					case "empty":
						tc.want = "line 1 is blank"
					}
				}
				wantStatus, wantCode := http.StatusBadRequest, govapi.CodeInvalidBody
				if tc.name == "too large" {
					wantStatus, wantCode = http.StatusRequestEntityTooLarge, govapi.CodeBodyTooLarge
				}
				status, e := postForError(t, d.url+ep.path, ep.contentType, tc.body)
				if status != wantStatus || e.Code != wantCode || !strings.Contains(e.Error, tc.want) {
					t.Fatalf("→ %d %s %q\nwant %d %s with %q", status, e.Code, e.Error, wantStatus, wantCode, tc.want)
				}
				if leak := goInternals(e.Error); leak != "" {
					t.Errorf("message %q shows Go internals (%q)", e.Error, leak)
				}
			})
		}
	}
}

// goInternals returns what in msg names Go rather than JSON: encoding/json's
// wording, a package-qualified type, or a Go type's spelling.
func goInternals(msg string) string {
	for _, s := range []string{"Go struct", "Go value", "json:", "govapi.", "main.", "audit.", "approval.", "policy.",
		"DecisionRequest", "IncidentInput", "ApprovalInput", "ConsumeInput", "VoteInput", "RawMessage",
		"[]string", "map[", "int64", "float64", "unmarshal"} {
		if strings.Contains(msg, s) {
			return s
		}
	}
	return ""
}

// postForError posts body as contentType (as call does) and reads the
// answer's error body.
func postForError(t *testing.T, url, contentType, body string) (int, govapi.ErrorBody) {
	t.Helper()
	status, b := call(t, http.MethodPost, url, []byte(body), "Content-Type", contentType, "X-Govkit-User", "alice")
	var e govapi.ErrorBody
	if err := json.NewDecoder(bytes.NewReader(b)).Decode(&e); err != nil {
		t.Fatalf("%d %s: not an error body: %v", status, b, err)
	}
	return status, e
}
