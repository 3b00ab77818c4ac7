package phantom

import (
	"encoding/json"
	"slices"
	"strings"
	"testing"
)

// seedPatterns is seed 000 §8 Phantom Detection (agentic.go:696-777),
// category by category, as P-09 lists them.
var seedPatterns = []Pattern{
	{Metrics, "cpu usage is "}, {Metrics, "memory usage is "}, {Metrics, "disk usage is "},
	{State, "is currently running"}, {State, "is now restarted"}, {State, "the logs show"}, {State, "according to the output"},
	{FakeTool, "```tool"}, {FakeTool, "pulse_query("}, {FakeTool, "<tool_call>"},
	{PastAction, "i restarted the"}, {PastAction, "successfully stopped"},
}

// TestDefaultIsTheSeed is P-09: the embedded set is exactly the seed's.
func TestDefaultIsTheSeed(t *testing.T) {
	if got := Default().Patterns(); !slices.Equal(got, seedPatterns) {
		t.Errorf("Default patterns:\n got %v\nwant %v", got, seedPatterns)
	}
}

// TestDetect is P-08: an answer claiming results (case-insensitive) is a
// phantom; ordinary prose is not.
func TestDetect(t *testing.T) {
	for _, tc := range []struct {
		text string
		want Match
		ok   bool
	}{
		{"The CPU usage is 45% on delly.", Match{Metrics, "cpu usage is "}, true},
		{"memory usage is 2.1 GiB", Match{Metrics, "memory usage is "}, true},
		{"Disk Usage Is at 91%", Match{Metrics, "disk usage is "}, true},
		{"Jellyfin is currently running on port 8096.", Match{State, "is currently running"}, true},
		{"The container IS NOW RESTARTED.", Match{State, "is now restarted"}, true},
		{"The logs show repeated OOM kills.", Match{State, "the logs show"}, true},
		{"According to the output, nginx is healthy.", Match{State, "according to the output"}, true},
		{"```tool\n{\"name\": \"x\"}\n```", Match{FakeTool, "```tool"}, true},
		{"```TOOL", Match{FakeTool, "```tool"}, true},
		{`pulse_query(action="search", query="jellyfin")`, Match{FakeTool, "pulse_query("}, true},
		{"<TOOL_CALL>{}</tool_call>", Match{FakeTool, "<tool_call>"}, true},
		{"I restarted the jellyfin container.", Match{PastAction, "i restarted the"}, true},
		{"Successfully stopped vm 101.", Match{PastAction, "successfully stopped"}, true},
		{"I can check the CPU usage if you want: shall I query delly?", Match{}, false},
		{"Which host do you mean, delly or minipc?", Match{}, false},
		{"cpu usage is", Match{}, false}, // the seed's pattern has a trailing space: a value must follow
		{"", Match{}, false},
		// First in set order, not first in the text.
		{"I restarted the box; cpu usage is 3%", Match{Metrics, "cpu usage is "}, true},
	} {
		got, ok := Default().Detect(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Detect(%q) = %v, %v; want %v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
	var none *Detector
	if _, ok := none.Detect("the logs show"); !ok {
		t.Error("a nil detector detects nothing: it must be the default set")
	}
}

// TestWithToolNames is P-09's generic fake-tool syntax: "<tool>(" for
// every registered tool, at the start of a word.
func TestWithToolNames(t *testing.T) {
	d := Default().WithToolNames([]string{"read", "Restart_VM", "pulse_query", "", "read"})
	for _, tc := range []struct {
		text string
		want Match
		ok   bool
	}{
		{`read(path="/etc/hosts")`, Match{FakeTool, "read("}, true},
		{`Then: READ(path="x")`, Match{FakeTool, "read("}, true},
		{`I called restart_vm(101) for you`, Match{FakeTool, "Restart_VM("}, true},
		{"“read(x)”", Match{FakeTool, "read("}, true},
		{"spread(x) and thread(y) and my_read(z)", Match{}, false},
		{"réread(x)", Match{}, false},
		{"spread(x) then read(y)", Match{FakeTool, "read("}, true}, // a later occurrence at a word start
		{"pulse_query(x)", Match{FakeTool, "pulse_query("}, true},  // the seed's own, not duplicated
		{"read the file", Match{}, false},
	} {
		got, ok := d.Detect(tc.text)
		if got != tc.want || ok != tc.ok {
			t.Errorf("Detect(%q) = %v, %v; want %v, %v", tc.text, got, ok, tc.want, tc.ok)
		}
	}
	if n := len(d.Patterns()); n != len(seedPatterns)+2 {
		t.Errorf("%d patterns: %v", n, d.Patterns())
	}
	if len(Default().Patterns()) != len(seedPatterns) {
		t.Error("WithToolNames changed the default detector")
	}
}

func TestWith(t *testing.T) {
	d, err := Default().With([]Pattern{{State, "Is Healthy"}, {PastAction, "I deleted the"}, {Metrics, "CPU USAGE IS "}})
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := d.Detect("the service is healthy"); !ok || m != (Match{State, "Is Healthy"}) {
		t.Errorf("extra pattern: %v, %v", m, ok)
	}
	if n := len(d.Patterns()); n != len(seedPatterns)+2 {
		t.Errorf("duplicate ignoring case kept: %d patterns", n)
	}
	if _, ok := Default().Detect("the service is healthy"); ok {
		t.Error("With changed the default detector")
	}
	for _, tc := range []struct {
		extra []Pattern
		want  string
	}{
		{[]Pattern{{State, "ok"}, {"claims", "x"}}, `phantom_patterns[1].category: "claims" is not one of`},
		{[]Pattern{{"", "x"}}, "phantom_patterns[0].category: missing"},
		{[]Pattern{{State, " \t\n"}}, "phantom_patterns[0].text: empty"},
		{[]Pattern{{State, strings.Repeat("x", MaxPatternLen+1)}}, "phantom_patterns[0].text: longer than"},
		{[]Pattern{{State, "a\xffb"}}, "phantom_patterns[0].text: not valid UTF-8"},
		{make([]Pattern, MaxPatterns), "phantom_patterns: more than"},
	} {
		if _, err := Default().With(tc.extra); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("With(%.60v) = %v, want %q", tc.extra, err, tc.want)
		}
	}
}

func TestParse(t *testing.T) {
	d, err := Parse([]byte(`{"patterns": [{"category": "state", "text": "is up"}]}`))
	if err != nil {
		t.Fatal(err)
	}
	if m, ok := d.Detect("Nginx IS UP"); !ok || m.Pattern != "is up" {
		t.Errorf("Detect = %v, %v", m, ok)
	}
	for _, tc := range []struct{ in, want string }{
		{``, "phantom patterns: EOF"},
		{`[]`, "phantom patterns: json: cannot unmarshal array"},
		{`{}`, "patterns: missing or empty"},
		{`{"patterns": []}`, "patterns: missing or empty"},
		{`{"patterns": null}`, "patterns: missing or empty"},
		{`{"patterns": [], "extra": 1}`, `phantom patterns: json: unknown field "extra"`},
		{`{"patterns": [{"category": "state", "text": "x"}]} {}`, "phantom patterns: data after the JSON value"},
		{`{"patterns": [{"category": "state", "text": "x"}, {"category": "state", "txt": "y"}]}`, `patterns[1]: json: unknown field "txt"`},
		{`{"patterns": [{"category": "state", "text": 5}]}`, "patterns[0]: json: cannot unmarshal number"},
		{`{"patterns": [{"category": "state", "text": "x"}, {"category": "state"}]}`, "patterns[1].text: empty"},
		{`{"patterns": [{"category": "mood", "text": "x"}]}`, `patterns[0].category: "mood" is not one of`},
	} {
		if _, err := Parse([]byte(tc.in)); err == nil || !strings.HasPrefix(err.Error(), tc.want) {
			t.Errorf("Parse(%s) = %v, want %q", tc.in, err, tc.want)
		}
	}
}

func TestSafeMessage(t *testing.T) {
	// Factual: says no tool ran, the claim is unverified, and to retry
	// with a tool call; and it is not itself a phantom.
	for _, want := range []string{"No tool was called", "could not be verified", "Retry", "tool call"} {
		if !strings.Contains(SafeMessage, want) {
			t.Errorf("SafeMessage lacks %q", want)
		}
	}
	if m, ok := Default().Detect(SafeMessage); ok {
		t.Errorf("SafeMessage is a phantom itself: %v", m)
	}
}

func TestMatchJSON(t *testing.T) {
	b, _ := json.Marshal(Match{FakeTool, "<tool_call>"})
	if string(b) != `{"category":"fake_tool","pattern":"\u003ctool_call\u003e"}` {
		t.Errorf("Match JSON %s", b)
	}
}

func BenchmarkDetect(b *testing.B) {
	d := Default().WithToolNames([]string{"read_file", "search_code", "pulse_control", "pulse_read", "pulse_alerts"})
	answer := strings.Repeat("I checked nothing yet. Which of the hosts should I look at first, and over what window? ", 20)
	b.ReportAllocs()
	for b.Loop() {
		d.Detect(answer)
	}
}
