package sessionloop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/session"
)

// transcript is a short session with every kind of recorded line: events,
// a line that is no event, a stamped field from the client.
const transcript = `{"type":"session_start","session_id":"s1","workspace_root":"ws","tools":[{"name":"read_file","kind":"read"}]}
{bad
{"type":"tool_call","call_id":"c1","name":"read_file","args":{"path":"a.go"}}
{"type":"tool_result","call_id":"c1","ok":true,"data":"hello"}
{"type":"final","text":"done","at":"2025-01-01T00:00:00Z"}
{"type":"final","text":"done"}
`

func record(t *testing.T) (opts session.Options, log []string) {
	t.Helper()
	cfg := testConfig(t)
	cfg.Options = session.Options{ReceiptKey: []byte("test key")}
	var rec, out bytes.Buffer
	cfg.Record = &rec
	if err := Run(context.Background(), cfg, strings.NewReader(transcript), &out); err != nil {
		t.Fatal(err)
	}
	// The record holds exactly the effects written out, in order.
	var effs []string
	for _, l := range strings.SplitAfter(rec.String(), "\n") {
		if strings.Contains(l, `"seq":`) && !strings.Contains(l, `"invalid":`) {
			effs = append(effs, l)
		}
	}
	if strings.Join(effs, "") != out.String() {
		t.Fatalf("recorded effects differ from the output:\n%s\nvs\n%s", strings.Join(effs, ""), out.String())
	}
	return cfg.Options, strings.Split(strings.TrimSuffix(rec.String(), "\n"), "\n")
}

func replay(opts session.Options, log []string) (Summary, error) {
	return Replay(context.Background(), opts, strings.NewReader(strings.Join(log, "\n")+"\n"), nil)
}

// TestRecordReplay: a recorded log replays to identical effects, whatever
// the key order; its events carry the stamps.
func TestRecordReplay(t *testing.T) {
	opts, log := record(t)
	first := log[0]
	for _, f := range []string{`"at":"2025-03-04T04:06:07.000008Z"`, `"seed":"0000`, `"server_connection_id":"00000000-0000-4000-8000-000000000000"`, `"workspace_realpath":"/`, `"session_id":"s1"`} {
		if !strings.Contains(first, f) {
			t.Errorf("recorded session_start lacks %s: %s", f, first)
		}
	}
	sum, err := replay(opts, log)
	if err != nil {
		t.Fatalf("Replay: %v", err)
	}
	effects := 0
	for _, l := range log {
		if strings.Contains(l, `"seq":`) {
			effects++
		}
	}
	if sum.Events != 6 || sum.Effects != effects {
		t.Fatalf("summary %+v, want 6 events and %d effects", sum, effects)
	}
	// Key order and spacing are not part of the comparison.
	reordered := append([]string(nil), log...)
	for i, l := range reordered {
		if strings.Contains(l, `"seq":`) {
			var m map[string]any
			json.Unmarshal([]byte(l), &m)
			b, _ := json.MarshalIndent(m, "", "")
			reordered[i] = strings.ReplaceAll(string(b), "\n", " ")
		}
	}
	if _, err := replay(opts, reordered); err != nil {
		t.Fatalf("reordered keys: %v", err)
	}
}

// TestReplayDivergence: the first difference, with the log's line, the
// event's line, and both effects.
func TestReplayDivergence(t *testing.T) {
	opts, log := record(t)
	inv := -1
	for i, l := range log {
		if strings.HasPrefix(l, `{"invalid":`) {
			inv = i
			break
		}
	}
	if inv < 0 || !strings.Contains(log[inv+1], `"code":"INVALID_JSON"`) {
		t.Fatalf("no invalid line followed by its error in %q", log)
	}
	errLine := log[inv+1]
	// The last effect, and the line of the event it answered.
	lastEffect, lastEvent := 0, 0
	for i, l := range log {
		if strings.Contains(l, `"seq":`) {
			lastEffect = i
		}
	}
	for i, l := range log[:lastEffect] {
		if !strings.Contains(l, `"seq":`) {
			lastEvent = i + 1
		}
	}
	edit := func(f func([]string) []string) []string { return f(append([]string(nil), log...)) }
	tests := []struct {
		name          string
		log           []string
		line, evLine  int
		expected, got string
	}{
		{"changed", edit(func(l []string) []string {
			l[inv+1] = strings.Replace(l[inv+1], "INVALID_JSON", "OTHER", 1)
			return l
		}), inv + 2, inv + 1, `"OTHER"`, `"INVALID_JSON"`},
		{"missing", edit(func(l []string) []string {
			return append(l[:inv+1], l[inv+2:]...)
		}), inv + 2, inv + 1, "", errLine},
		{"extra", edit(func(l []string) []string {
			return append(l[:inv+2], append([]string{errLine}, l[inv+2:]...)...)
		}), inv + 3, inv + 1, errLine, ""},
		{"missing at the end", log[:lastEffect], lastEffect + 1, lastEvent, "", log[lastEffect]},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := replay(opts, tt.log)
			var d *Divergence
			if !errors.As(err, &d) {
				t.Fatalf("Replay = %v, want a divergence", err)
			}
			if d.Line != tt.line || d.EventLine != tt.evLine {
				t.Errorf("divergence at line %d (event %d), want %d (event %d)", d.Line, d.EventLine, tt.line, tt.evLine)
			}
			if !strings.Contains(string(d.Expected), tt.expected) || (tt.expected == "") != (d.Expected == nil) {
				t.Errorf("expected %s, want %s", d.Expected, tt.expected)
			}
			if !strings.Contains(string(d.Got), tt.got) || (tt.got == "") != (d.Got == nil) {
				t.Errorf("got %s, want %s", d.Got, tt.got)
			}
		})
	}
}

// TestReplayLogErrors: a log that cannot be replayed names its line.
func TestReplayLogErrors(t *testing.T) {
	opts, log := record(t)
	unstamped := append([]string(nil), log...)
	unstamped[0] = regexp.MustCompile(`"at":"[^"]*",`).ReplaceAllString(unstamped[0], "")
	notJSON := append(append([]string(nil), log[:2]...), "nope")
	tests := []struct {
		name string
		log  []string
		line int
		msg  string
	}{
		{"unstamped", unstamped, 1, `the event has no "at"`},
		{"not json", notJSON, 3, "not a JSON object"},
	}
	for _, tt := range tests {
		_, err := replay(opts, tt.log)
		var le *LogError
		if !errors.As(err, &le) || le.Line != tt.line || !strings.Contains(err.Error(), tt.msg) {
			t.Errorf("%s: Replay = %v, want a log error on line %d: %s", tt.name, err, tt.line, tt.msg)
		}
	}
}
