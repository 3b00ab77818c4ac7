package govreport

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
)

// slackJSON is msg as the webhook receives it, indented, with slack-go's
// HTML escapes (its blocks marshal themselves) undone so that the golden
// reads as Slack renders it.
func slackJSON(t *testing.T, msg any) string {
	t.Helper()
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(msg); err != nil {
		t.Fatal(err)
	}
	var v any // re-encode: the blocks' own encoding is neither indented nor unescaped
	if err := json.Unmarshal(b.Bytes(), &v); err != nil {
		t.Fatal(err)
	}
	b.Reset()
	if err := enc.Encode(v); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func TestGoldenSlack(t *testing.T) {
	golden(t, "slack.json.golden", []byte(slackJSON(t, SlackSummary(full()))))
}

// The Slack post lists the report's notices (issue 20: DEAD_RULES reached
// the text and JSON reports but not the channel), after the alerts and
// warnings, escaped as every client-supplied string is.
func TestSlackNotices(t *testing.T) {
	for _, tc := range []struct {
		name      string
		notices   []Finding
		warnings  int // extra warnings, to push past maxSlackFindings
		want      []string
		wantNot   []string
		wantTitle string
	}{
		{name: "none", wantNot: []string{"*notice*"}, wantTitle: "govbot compliance report: ALERTS (2 alerts, 4 warnings)"},
		{
			name:      "dead rules",
			notices:   []Finding{{Code: CodeDeadRules, Phase: 2, Message: "1 enabled policy decided nothing in the window: legacy (no decision)"}},
			want:      []string{"• *notice* `DEAD_RULES` 1 enabled policy decided nothing in the window: legacy (no decision)"},
			wantTitle: "govbot compliance report: ALERTS (2 alerts, 4 warnings, 1 notice)",
		},
		{
			name:      "escaped",
			notices:   []Finding{{Code: CodeDeadRules, Phase: 2, Message: "policy <!channel> & <http://evil|click>\nnext line"}},
			want:      []string{"• *notice* `DEAD_RULES` policy &lt;!channel&gt; &amp; &lt;http://evil|click&gt; next line"},
			wantNot:   []string{"<!channel>", "<http://evil"},
			wantTitle: "govbot compliance report: ALERTS (2 alerts, 4 warnings, 1 notice)",
		},
		{
			// Notices come last, so the bound on listed findings cuts them first.
			name:      "cut first",
			notices:   []Finding{{Code: CodeDeadRules, Phase: 2, Message: "legacy"}},
			warnings:  maxSlackFindings,
			want:      []string{"… and 7 more (see govbot -o json)"},
			wantNot:   []string{"*notice*"},
			wantTitle: "govbot compliance report: ALERTS (2 alerts, 19 warnings, 1 notice)",
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := sample()
			r.Summary.Notices = tc.notices
			for range tc.warnings {
				r.Summary.Warnings = append(r.Summary.Warnings, Finding{Code: "X", Message: "more"})
			}
			msg := SlackSummary(r)
			s := slackJSON(t, msg)
			for _, w := range tc.want {
				if !strings.Contains(s, w) {
					t.Errorf("message lacks %q:\n%s", w, s)
				}
			}
			for _, w := range tc.wantNot {
				if strings.Contains(s, w) {
					t.Errorf("message has %q:\n%s", w, s)
				}
			}
			if !strings.HasPrefix(msg.Text, tc.wantTitle) {
				t.Errorf("text = %q, want %q", msg.Text, tc.wantTitle)
			}
		})
	}
}
