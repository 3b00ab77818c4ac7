package reasons

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/govkit/govkit/pkg/session/response"
)

// Markdown renders the registry as the table of docs/reasons.md: one row per
// code, sorted, with its Go semantics and its registry metadata.
func (r *Registry) Markdown() []byte {
	var b bytes.Buffer
	b.WriteString("# Session reason codes\n\n")
	b.WriteString("<!-- Generated from pkg/session/reasons/reason_registry.json by\n")
	b.WriteString("     `go test ./pkg/session/reasons -run TestReasonsDoc -update`. Do not edit. -->\n\n")
	b.WriteString("Every decision of `gate session` carries these stable codes (see docs/session.md). Severity,\n")
	b.WriteString("blocking and auto-recoverability are fixed in Go (`pkg/session/reasons`,\n")
	b.WriteString("`pkg/session/response`); the registry file only describes a code and recommends\n")
	b.WriteString("`next_calls`, whose `{placeholders}` are filled at run time.\n")
	b.WriteString("A registry file may add extension codes (severity info, warning or error, never blocking);\n")
	b.WriteString("it cannot change a core code's severity and may not set `blocking`. auto_recoverable is\n")
	b.WriteString("shown for codes that are a refusal's `error.code`; the others ride in `reason_codes`.\n\n")
	b.WriteString("| code | severity | blocking | auto_recoverable | description | next_calls |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, c := range r.codes {
		re := r.byCode[c]
		b.WriteString("| `" + re.Code + "` | " + re.Severity + " | " + yesNo(re.Blocking) + " | ")
		if re.Blocking && !core[re.Code].reasonOnly {
			b.WriteString(yesNo(response.AutoRecoverable(re.Code)))
		} else {
			b.WriteString("—")
		}
		b.WriteString(" | " + cell(re.Description) + " | ")
		if len(re.NextCalls) == 0 {
			b.WriteString("—")
		}
		for i, t := range re.NextCalls {
			if i > 0 {
				b.WriteString("<br>")
			}
			args, _ := json.Marshal(t.Args) // map keys sorted: stable
			b.WriteString("`" + cell(t.Tool+" "+string(args)) + "`")
		}
		b.WriteString(" |\n")
	}
	return b.Bytes()
}

func yesNo(v bool) string {
	if v {
		return "yes"
	}
	return "no"
}

func cell(s string) string { return strings.ReplaceAll(s, "|", "\\|") }
