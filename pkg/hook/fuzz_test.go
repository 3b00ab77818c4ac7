package hook

import (
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/intent"
)

// FuzzRespond: for every dialect, no input panics, and an allow comes only
// from an event that decodes and is judged allowed (a malformed event never
// allows).
func FuzzRespond(f *testing.F) {
	events, _ := filepath.Glob("testdata/events/*.json")
	for _, p := range events {
		if raw, err := os.ReadFile(p); err == nil {
			f.Add(string(raw))
		}
	}
	judge := NewJudge(DefaultPolicy, func(cmd, cwd string) intent.Result { return intent.Classify(cmd) })
	f.Fuzz(func(t *testing.T, raw string) {
		for _, agent := range Agents() {
			d, s := Dialects[agent], Setups[agent]
			ans := Respond(d, []byte(raw), judge, 5*time.Second)
			if s.Outcome(ans.Stdout, ans.Exit) != Allow {
				continue
			}
			ev, err := d.Decode([]byte(raw))
			if err != nil {
				t.Fatalf("%s allowed a malformed event (%v)", agent, err)
			}
			if !judge(ev).Allowed() {
				t.Fatalf("%s allowed an event judged %s: %+v", agent, judge(ev).Permission, ev)
			}
			if ev.Shell && intent.Classify(ev.Command).Verdict() != intent.VerdictReadOnly {
				t.Fatalf("%s allowed %q", agent, ev.Command)
			}
			if !ev.Shell && KindOf(ev.Tool) != ToolRead {
				t.Fatalf("%s allowed tool %q", agent, ev.Tool)
			}
		}
	})
}
