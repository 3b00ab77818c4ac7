package auditd

import (
	"slices"
	"strings"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/redact"
	"github.com/govkit/govkit/pkg/termtext"
)

// maxRedactResult bounds the part of tool.result that redaction reads.
// Seal keeps only the first audit.MaxResult characters (at most 2000
// bytes); redaction reads well past that, so that a secret straddling the
// cut is still whole when its pattern runs, and stops there, so that a
// client's 1 MiB result costs no more than a 64 KiB one.
const maxRedactResult = 64 << 10

// redactEvent removes secrets from ev's tool.raw_command, tool.parameters,
// tool.result and tool.error and sets ev.Redactions to what it removed,
// sorted by field then kind (DESIGN §11 "Secrets never enter the chain";
// issue 13 "Redaction before sealing"). It runs on every event before it is
// canonicalised and hashed: client events, decisions, incidents and
// approval changes all pass through appendReq.prepare. ev.Tool is
// replaced, not edited: the caller may still hold the one it pointed to.
func redactEvent(ev *audit.Event, r *redact.Redactor) {
	ev.Redactions = nil
	if ev.Tool == nil {
		return
	}
	t := *ev.Tool
	var out []audit.Redaction
	note := func(field string, kinds []string) {
		for _, k := range kinds {
			out = append(out, audit.Redaction{Field: field, Kind: k})
		}
	}
	var kinds []string
	if t.RawCommand != "" {
		t.RawCommand, kinds = r.Redact(t.RawCommand)
		note("tool.raw_command", kinds)
	}
	if len(t.Parameters) > 0 {
		t.Parameters, kinds = r.RedactJSON(t.Parameters)
		note("tool.parameters", kinds)
	}
	if t.Result != "" {
		t.Result, kinds = r.Redact(termtext.Cut(t.Result, maxRedactResult))
		note("tool.result", kinds)
	}
	if t.Error != "" {
		t.Error, kinds = r.Redact(t.Error)
		note("tool.error", kinds)
	}
	if out == nil && len(t.Result) == len(ev.Tool.Result) {
		return // nothing changed: keep ev.Tool
	}
	ev.Tool = &t
	slices.SortFunc(out, func(a, b audit.Redaction) int {
		if c := strings.Compare(a.Field, b.Field); c != 0 {
			return c
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	ev.Redactions = slices.Compact(out)
}
