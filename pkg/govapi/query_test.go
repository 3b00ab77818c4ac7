package govapi_test

import (
	"net/url"
	"reflect"
	"strings"
	"testing"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/govapi"
)

// Property: ParseQuery never drops what it cannot read (issue 13): what it
// accepts, url.ParseQuery reads the same, and what url.ParseQuery refuses or
// drops it refuses; no accepted name or value holds a control character or
// invalid UTF-8.
func FuzzParseQuery(f *testing.F) {
	for _, s := range []string{"agent=a&limit=5", "agent=%zz", "a=%", "a;b=1", "a=1&&b=%20", "x", "=v", "a=%00", "%ff=1", "a+b=c+d"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, raw string) {
		q, err := govapi.ParseQuery(raw)
		std, stdErr := url.ParseQuery(raw)
		if err != nil {
			return
		}
		if stdErr != nil {
			t.Fatalf("ParseQuery accepted %q, which url.ParseQuery refuses: %v", raw, stdErr)
		}
		if !reflect.DeepEqual(q, std) && !(len(q) == 0 && len(std) == 0) {
			t.Fatalf("ParseQuery(%q) = %v, url.ParseQuery = %v", raw, q, std)
		}
		for k, vs := range q {
			for _, s := range append([]string{k}, vs...) {
				if !utf8.ValidString(s) || strings.IndexFunc(s, unicode.IsControl) >= 0 {
					t.Fatalf("accepted %q in %q", s, raw)
				}
			}
		}
	})
}

// The query codecs round-trip: what a client encodes, auditd reads back
// the same (one definition for both sides, so they cannot drift).
func TestQueryRoundTrip(t *testing.T) {
	since := time.Date(2026, 3, 9, 14, 0, 0, 123, time.UTC)
	eq := govapi.EventQuery{Agent: "a b", TraceID: "t&1", SessionID: "s", ActionClass: "write", ToolName: "psql", EventType: "tool_call",
		ApprovalID: "apr/1 x", Since: since, Until: since.Add(time.Hour), Cursor: govapi.Cursor{AfterSeq: 42, Limit: 7}}
	gotE, err := govapi.ParseEventQuery(mustParse(t, eq.Values().Encode()))
	if err != nil || !reflect.DeepEqual(gotE, eq) {
		t.Errorf("event query round trip: %+v, %v; want %+v", gotE, err, eq)
	}
	def, err := govapi.ParseEventQuery(url.Values{})
	if err != nil || def.Limit != govapi.DefaultLimit {
		t.Errorf("empty event query: %+v, %v; want limit %d", def, err, govapi.DefaultLimit)
	}

	aq := govapi.ApprovalQuery{Status: approval.Pending, Wait: 5 * time.Second, Cursor: govapi.Cursor{AfterSeq: 3, Limit: 10}}
	gotA, err := govapi.ParseApprovalQuery(mustParse(t, aq.Values().Encode()))
	if err != nil || !reflect.DeepEqual(gotA, aq) {
		t.Errorf("approval query round trip: %+v, %v; want %+v", gotA, err, aq)
	}

	xq := govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "write", Tags: []string{},
		UserID: "alice", Roles: []string{"dba", "sre"}, Service: "svc", RowsAffected: 5}
	gotX, err := govapi.ParseExplainQuery(mustParse(t, xq.Values().Encode()))
	if err != nil || !reflect.DeepEqual(gotX, xq) {
		t.Errorf("explain query round trip: %+v, %v; want %+v", gotX, err, xq)
	}
	cq := govapi.ExplainQuery{ResourceType: "database", ResourceName: "prod-db", Action: "write", Roles: []string{}, AsCaller: true}
	if got, err := govapi.ParseExplainQuery(mustParse(t, cq.Values().Encode())); err != nil || !reflect.DeepEqual(got, cq) {
		t.Errorf("as_caller round trip: %+v, %v; want %+v", got, err, cq)
	}
}

func TestQueryRefusals(t *testing.T) {
	for _, tc := range []struct {
		raw, want string
		parse     func(url.Values) error
	}{
		{"agent=a&agent=b", `"agent" given more than once`, eventParse},
		{"agnet=a", `unknown query parameter "agnet"`, eventParse},
		{"since=yesterday", "since=", eventParse},
		{"limit=0", "limit=", eventParse},
		{"limit=1001", "limit=", eventParse},
		{"after_seq=-1", "after_seq=", eventParse},
		{"status=maybe", "status=", func(v url.Values) error { _, err := govapi.ParseApprovalQuery(v); return err }},
		{"wait=26s", "wait=", func(v url.Values) error { _, err := govapi.ParseApprovalQuery(v); return err }},
		{"resource_type=db&resource_name=x", "action is required", func(v url.Values) error { _, err := govapi.ParseExplainQuery(v); return err }},
		{"resource_type=db&resource_name=x&action=read&rows_affected=-2", "rows_affected", func(v url.Values) error { _, err := govapi.ParseExplainQuery(v); return err }},
	} {
		err := tc.parse(mustParse(t, tc.raw))
		if err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want an error containing %q", tc.raw, err, tc.want)
		}
	}
	for _, raw := range []string{"agent=%zz", "a;b=1", "agent=%00", "agent=%ff"} {
		if _, err := govapi.ParseQuery(raw); err == nil {
			t.Errorf("ParseQuery(%q) accepted it", raw)
		}
	}
}

func eventParse(v url.Values) error { _, err := govapi.ParseEventQuery(v); return err }

func mustParse(t *testing.T, raw string) url.Values {
	t.Helper()
	v, err := govapi.ParseQuery(raw)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

func TestWithID(t *testing.T) {
	if got := govapi.WithID(govapi.PathConsume, "ap/1 x"); got != "/v1/approvals/ap%2F1%20x/consume" {
		t.Errorf("WithID = %q", got)
	}
}
