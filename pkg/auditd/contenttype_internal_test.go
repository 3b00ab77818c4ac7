package auditd

import (
	"mime"
	"slices"
	"strings"
	"testing"
)

func TestAcceptsBodyType(t *testing.T) {
	for _, tc := range []struct {
		ct   string
		want bool
	}{
		{"application/json", true},
		{"application/json; charset=utf-8", true},
		{"application/json;charset=UTF-8", true},
		{"Application/JSON; Charset=\"utf8\"", true},
		{"application/x-ndjson", false}, // jsonBody only
		{"", false},
		{"  ", false},
		{"text/plain", false},
		{"text/plain; charset=utf-8", false},
		{"application/x-www-form-urlencoded", false},
		{"multipart/form-data; boundary=x", false},
		{"application/json; charset=latin1", false},
		{"application/json; charset", false},
		{"application/json, text/plain", false},
		{"application/jsonx", false},
		{"application/vnd.api+json", false},
	} {
		if got, why := acceptsBodyType(tc.ct, jsonBody); got != tc.want || got != (why == "") {
			t.Errorf("%q: %t (%q), want %t", tc.ct, got, why, tc.want)
		}
	}
	if ok, _ := acceptsBodyType("application/jsonl", eventBodies); !ok {
		t.Error("application/jsonl refused on /api/events")
	}
}

// Whatever a client sends, a type is accepted only when it parses to one of
// the accepted media types with no charset but UTF-8, and a refusal always
// says why.
func FuzzAcceptsBodyType(f *testing.F) {
	for _, s := range []string{"application/json", "application/json; charset=utf-8", "text/plain", "", "application/x-ndjson; a=b", "application/json; charset=\"UTF-8\"; x=\"\\\"\""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, ct string) {
		ok, why := acceptsBodyType(ct, eventBodies)
		if ok != (why == "") {
			t.Fatalf("%q: ok %t, why %q", ct, ok, why)
		}
		if !ok {
			return
		}
		mt, params, err := mime.ParseMediaType(ct)
		if err != nil || !slices.Contains(eventBodies, mt) {
			t.Fatalf("%q accepted: %q, %v", ct, mt, err)
		}
		if cs, has := params["charset"]; has && !strings.EqualFold(cs, "utf-8") && !strings.EqualFold(cs, "utf8") {
			t.Fatalf("%q accepted with charset %q", ct, cs)
		}
	})
}
