package client

import (
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

func TestEncodeEventLeavesServerFieldsOut(t *testing.T) {
	b, err := EncodeEvent(audit.Event{EventType: "tool_execution", Tool: &audit.Tool{Name: "bash"}})
	if err != nil {
		t.Fatal(err)
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"seq", "timestamp", "prev_hash", "event_hash", "event_id"} {
		if _, ok := m[k]; ok {
			t.Errorf("%s sent: %s", k, b)
		}
	}
	if string(m["schema_version"]) != "1" || string(m["event_type"]) != `"tool_execution"` {
		t.Errorf("encoded %s", b)
	}
	// What auditd decodes is what the client meant.
	ev, err := audit.DecodeEvent(b)
	if err != nil || ev.Tool.Name != "bash" {
		t.Fatalf("DecodeEvent(%s): %+v, %v", b, ev, err)
	}

	for name, ev := range map[string]audit.Event{
		"seq":        {EventType: "x", Seq: 1},
		"timestamp":  {EventType: "x", Timestamp: time.Now()},
		"prev_hash":  {EventType: "x", PrevHash: audit.ZeroHash},
		"event_hash": {EventType: "x", EventHash: "ab"},
	} {
		if _, err := EncodeEvent(ev); err == nil || !strings.HasPrefix(err.Error(), name+" is assigned by auditd") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestNew(t *testing.T) {
	for _, u := range []string{"http://127.0.0.1:1199", "https://audit.example.com/prefix/", DefaultURL} {
		if _, err := New(u); err != nil {
			t.Errorf("New(%q): %v", u, err)
		}
	}
	for _, u := range []string{"", "127.0.0.1:1199", "ftp://x", "http://", "http://user:pw@host:1"} {
		if _, err := New(u); err == nil {
			t.Errorf("New(%q) accepted", u)
		}
	}
	c, _ := New("http://h:1/p/")
	if c.base.String() != "http://h:1/p" {
		t.Errorf("base %s", c.base)
	}
}

func TestErrors(t *testing.T) {
	e := responseError(400, []byte(`{"schema_version":1,"error":"unknown field \"colour\""}`))
	if e.StatusCode != 400 || e.Error() != `auditd answered 400 bad request: unknown field "colour"` {
		t.Fatalf("%v", e)
	}
	e = responseError(502, []byte("<html>"+strings.Repeat("x", 1000)+"</html>"))
	if len(e.Message) > 210 || !strings.HasPrefix(e.Message, "<html>") {
		t.Fatalf("non-JSON body: %q", e.Message)
	}
	if responseError(500, nil).Message != "empty answer" {
		t.Fatal("empty body")
	}
	if !IsNotFound(responseError(404, nil)) || IsNotFound(errors.New("x")) {
		t.Fatal("IsNotFound")
	}
}

// The query string Query sends is the one it sent before govapi held the
// codec (issue 13: only Go types moved, not the wire).
func TestEventQueryValues(t *testing.T) {
	since := time.Date(2026, 3, 9, 14, 0, 0, 5, time.FixedZone("x", 3600))
	q := govapi.EventQuery{Agent: "a b", ToolName: "bash", Since: since, Cursor: govapi.Cursor{AfterSeq: 7, Limit: 50}}
	if got := q.Values().Encode(); got != "after_seq=7&agent=a+b&limit=50&since=2026-03-09T13%3A00%3A00.000000005Z&tool_name=bash" {
		t.Fatal(got)
	}
	if len(govapi.EventQuery{}.Values()) != 0 {
		t.Fatal("zero query has parameters")
	}
}

// clientEvent must carry every member of audit.Event a client may set: a
// member added to the event model and forgotten here would be dropped
// silently.
func TestClientEventMembers(t *testing.T) {
	names := func(typ reflect.Type) []string {
		var out []string
		for f := range typ.Fields() {
			name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
			out = append(out, name)
		}
		slices.Sort(out)
		return out
	}
	// caller and action_hash are auditd's record of who wrote an event and
	// of the action it cites an approval for (DESIGN §11): a client never
	// sends them, auditd refuses them.
	want := slices.DeleteFunc(names(reflect.TypeFor[audit.Event]()), func(n string) bool {
		return n == "seq" || n == "timestamp" || n == "prev_hash" || n == "event_hash" || n == "caller" || n == "action_hash" || n == "redactions"
	})
	if got := names(reflect.TypeFor[clientEvent]()); !slices.Equal(got, want) {
		t.Fatalf("clientEvent members %v, audit.Event's client members %v", got, want)
	}
	b, err := EncodeEvent(audit.Event{EventType: audit.TypeToolExecution, Caller: &audit.Caller{Name: "someone-else"}, ActionHash: strings.Repeat("a", 64)})
	if err != nil || strings.Contains(string(b), "caller") || strings.Contains(string(b), "action_hash") {
		t.Fatalf("EncodeEvent = %s, %v", b, err)
	}
}
