package auditd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/govapi"
)

// A body that is not JSON is refused with 415 before anything reads it, so
// that a web page cannot make a browser post to a local auditd (DESIGN §11
// "Transport", issue 13): text/plain, forms and untyped bodies are what a
// browser sends without a CORS preflight. Nothing refused is stored.
func TestBodyContentType(t *testing.T) {
	d := startGoverned(t, nil)
	event := `{"event_type":"tool_execution","session_id":"s1","tool":{"name":"bash","raw_command":"ls"}}`
	decision := jsonOf(t, prodWriteDecision())
	incident := `{"incident_id":"i-1","severity":"low","title":"t","pattern":"p"}`
	approvalReq := `{"resource":{"type":"database","name":"prod-db"},"action":"write","reason":"r"}`
	const eventTypes = "application/json, application/x-ndjson, application/jsonl"
	for _, tc := range []struct {
		name, path, contentType, body string
		chunked                       bool
		code                          int // 0: any but 415
		msg                           string
	}{
		{"event as text/plain", "/api/events", "text/plain", event, false, 415, `POST /api/events takes a body of Content-Type application/json, application/x-ndjson or application/jsonl; this one is "text/plain"`},
		{"event as text/plain with charset", "/api/events", "text/plain;charset=UTF-8", event, false, 415, `this one is "text/plain"`},
		{"event as a form", "/api/events", "application/x-www-form-urlencoded", "a=" + event, false, 415, `this one is "application/x-www-form-urlencoded"`},
		{"event as multipart", "/api/events", "multipart/form-data; boundary=x", "--x\r\n\r\n" + event + "\r\n--x--", false, 415, `this one is "multipart/form-data"`},
		{"event untyped", "/api/events", "", event, false, 415, "this request has no Content-Type"},
		{"event untyped, chunked", "/api/events", "", event, true, 415, "this request has no Content-Type"},
		{"event with a charset other than UTF-8", "/api/events", "application/json; charset=iso-8859-1", event, false, 415, `charset "iso-8859-1" is not UTF-8`},
		{"event with a malformed type", "/api/events", "application/json; charset", event, false, 415, "does not parse"},
		{"event as a JSON suffix type", "/api/events", "application/merge-patch+json", event, false, 415, `this one is "application/merge-patch+json"`},
		{"event as JSON", "/api/events", "application/json", event, false, 201, ""},
		{"event as JSON with charset", "/api/events", "application/json; charset=utf-8", `{"event_type":"tool_execution","session_id":"s2"}`, false, 201, ""},
		{"event as JSON, upper case", "/api/events", "Application/JSON", `{"event_type":"tool_execution","session_id":"s3"}`, false, 201, ""},
		{"event as JSON, chunked", "/api/events", "application/json", `{"event_type":"tool_execution","session_id":"s4"}`, true, 201, ""},
		{"batch as JSON Lines", "/api/events", "application/x-ndjson", `{"event_type":"tool_execution","session_id":"s5"}` + "\n", false, 201, ""},
		{"batch as jsonl", "/api/events", "application/jsonl", `{"event_type":"tool_execution","session_id":"s6"}` + "\n", false, 201, ""},
		{"decision as text/plain", govapi.PathDecisions, "text/plain", decision, false, 415, "POST " + govapi.PathDecisions + " takes a body of Content-Type application/json; "},
		{"decision as JSON Lines", govapi.PathDecisions, "application/x-ndjson", decision, false, 415, `this one is "application/x-ndjson"`},
		{"decision untyped", govapi.PathDecisions, "", decision, false, 415, "no Content-Type"},
		{"incident as text/plain", govapi.PathIncidents, "text/plain", incident, false, 415, "application/json"},
		{"approval request as a form", "/v1/approvals", "application/x-www-form-urlencoded", approvalReq, false, 415, "application/json"},
		{"approve as text/plain", "/v1/approvals/x/approve", "text/plain", `{"reason":"ok"}`, false, 415, "POST /v1/approvals/{id}/approve takes"},
		{"deny untyped", "/v1/approvals/x/deny", "", `{"reason":"no"}`, false, 415, "no Content-Type"},
		// No body, no type needed: approve and deny may have no reason.
		{"approve without a body", "/v1/approvals/x/approve", "", "", false, 0, ""},
		{"deny without a body, typed anyhow", "/v1/approvals/x/deny", "text/plain", "", false, 0, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tc.body)
			if tc.chunked {
				body = io.MultiReader(body) // unknown length: sent chunked
			}
			req, err := http.NewRequest(http.MethodPost, d.url+tc.path, body)
			if err != nil {
				t.Fatal(err)
			}
			if tc.contentType != "" {
				req.Header.Set("Content-Type", tc.contentType)
			}
			req.Header.Set("X-Govkit-User", "alice")
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			b, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			switch {
			case tc.code == 0 && resp.StatusCode == http.StatusUnsupportedMediaType:
				t.Fatalf("415 for a request without a body: %s", b)
			case tc.code != 0 && resp.StatusCode != tc.code:
				t.Fatalf("%d %s, want %d", resp.StatusCode, b, tc.code)
			case tc.code != http.StatusUnsupportedMediaType:
				return
			}
			var e struct {
				SchemaVersion int    `json:"schema_version"`
				Error         string `json:"error"`
				Code          string `json:"code"`
			}
			if err := json.Unmarshal(b, &e); err != nil || e.SchemaVersion != 1 || e.Code != "unsupported_media_type" || !strings.Contains(e.Error, tc.msg) {
				t.Fatalf("body %s (%v), want code unsupported_media_type and an error containing %q", b, err, tc.msg)
			}
			want := "application/json"
			if tc.path == "/api/events" {
				want = eventTypes
			}
			if got := resp.Header.Get("Accept"); got != want {
				t.Errorf("Accept: %q, want %q", got, want)
			}
		})
	}
	// Only the accepted events were stored: a1 and a2…a6.
	rep, err := d.c.Verify(ctxT(t))
	if err != nil || rep.TotalEvents != 6 {
		t.Fatalf("verify %+v, %v: want the 6 accepted events", rep, err)
	}
}
