package policy

import (
	"math"
	"strconv"
	"strings"
)

// Blast radius (seed 003 "Guardrails" → "Blast Radius"): max_rows_affected
// and max_pods_affected cap what one operation may touch. Before execution
// the counts are usually unknown (zero in RequestContext) and the limit is
// "not evaluated"; after execution the enforcement point parses the tool's
// output, calls CheckPostExecution, and withholds the result on a deny.

// limitCondition evaluates one limit for the trace.
func limitCondition(name, count string, n, limit int, post bool) ConditionTrace {
	switch {
	case n == 0 && post:
		return ConditionTrace{Name: name, Passed: true, Detail: "not evaluated: no " + count + " count after execution", Limit: limit}
	case n == 0:
		return ConditionTrace{Name: name, Passed: true, Detail: "not evaluated: " + count + " unknown before execution", Limit: limit}
	case n < 0:
		// Not a count: fail closed rather than guess (DESIGN §3).
		return ConditionTrace{Name: name, Passed: false, Detail: count + "=" + strconv.Itoa(n) + " is not a count", Limit: limit}
	}
	// "rows_affected=1500 > limit=1000", built in one allocation: this is
	// on Evaluate's path whenever a count is known.
	var buf [64]byte
	b := append(buf[:0], count...)
	b = append(b, '=')
	b = strconv.AppendInt(b, int64(n), 10)
	passed := n <= limit
	if passed {
		b = append(b, " <= limit="...)
	} else {
		b = append(b, " > limit="...)
	}
	b = strconv.AppendInt(b, int64(limit), 10)
	return ConditionTrace{Name: name, Passed: passed, Detail: string(b), Limit: limit}
}

// CheckPostExecution evaluates a request after its tool ran, with the rows
// or pods it affected in req.Context (seed 003's CheckDatabaseResult and
// CheckKubernetesResult). The returned trace has Decision.PostExecution set
// and its explanation. An enforcement point withholds the result when the
// EnforcedEffect is deny; a require_approval outcome was settled before
// execution and is no reason to withhold.
func (e *Engine) CheckPostExecution(req Request) DecisionTrace {
	ev := e.evaluate(req, true)
	tr := ev.trace
	tr.Explanation = ev.explanation()
	return tr
}

// ParseRowsAffected sums the rows changed according to psql command tags in
// output: "DELETE N", "UPDATE N", "INSERT oid N", "COPY N" and "MERGE N",
// one tag per line as psql prints them. "SELECT N" (and MOVE/FETCH) change
// nothing: they are recognized but add no rows. ok reports whether any
// command tag with a count was found; with ok false the count is unknown.
// A count too large for an int saturates (more rows can only deny).
func ParseRowsAffected(output string) (rows int, ok bool) {
	for line := range strings.Lines(output) {
		line = strings.TrimRight(line, " \t\r\n")
		verb, rest, found := strings.Cut(line, " ")
		if !found {
			continue
		}
		switch verb {
		case "INSERT":
			oid, n, found := strings.Cut(rest, " ")
			if !found || !isDigits(oid) {
				continue
			}
			rest = n
		case "DELETE", "UPDATE", "COPY", "MERGE":
		case "SELECT", "MOVE", "FETCH":
			if isDigits(rest) {
				ok = true
			}
			continue
		default:
			continue
		}
		if !isDigits(rest) {
			continue
		}
		rows = addSaturating(rows, atoiSaturating(rest))
		ok = true
	}
	return rows, ok
}

// kubectlChanges are the verbs of kubectl confirmation lines that mean the
// object changed ("pod \"x\" deleted", "deployment.apps/y configured").
var kubectlChanges = map[string]bool{
	"created": true, "configured": true, "deleted": true, "force deleted": true,
	"scaled": true, "patched": true, "replaced": true, "restarted": true,
	"labeled": true, "annotated": true, "rolled back": true, "paused": true,
	"resumed": true, "autoscaled": true, "exposed": true, "evicted": true,
	"drained": true, "cordoned": true, "uncordoned": true, "tainted": true,
	"untainted": true, "edited": true,
	// "kubectl set …" prints "<what> updated": image, env, resources, …
}

// ParsePodsAffected counts kubectl confirmation lines that report a change,
// one object per line, in both shapes kubectl prints: `kind/name verb` and
// `kind "name" verb`. "unchanged" lines and dry runs ("(dry run)",
// "(server dry run)") are recognized but not counted. ok reports whether
// any confirmation line was recognized.
func ParsePodsAffected(output string) (n int, ok bool) {
	for line := range strings.Lines(output) {
		counted, recognized := kubectlLine(strings.TrimRight(line, " \t\r\n"))
		if recognized {
			ok = true
		}
		if counted {
			n++
		}
	}
	return n, ok
}

func kubectlLine(line string) (counted, recognized bool) {
	dry := false
	for _, suffix := range []string{" (server dry run)", " (dry run)"} {
		if s, found := strings.CutSuffix(line, suffix); found {
			line, dry = s, true
			break
		}
	}
	var verb string
	obj, rest, found := strings.Cut(line, " ")
	if !found {
		return false, false
	}
	if kind, name, slash := strings.Cut(obj, "/"); slash {
		// kind/name verb
		if !isKind(kind) || name == "" {
			return false, false
		}
		verb = rest
	} else {
		// kind "name" verb
		if !isKind(obj) || !strings.HasPrefix(rest, `"`) {
			return false, false
		}
		end := strings.Index(rest[1:], `"`)
		if end < 1 {
			return false, false
		}
		verb = strings.TrimPrefix(rest[end+2:], " ")
	}
	switch {
	case verb == "unchanged":
		return false, true
	case kubectlChanges[verb], strings.HasSuffix(verb, " updated") && !strings.Contains(verb, `"`):
		return !dry, true
	}
	return false, false
}

// isKind accepts a kubectl resource kind as printed: "pod",
// "deployment.apps", "horizontalpodautoscaler.autoscaling".
func isKind(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '.' || c == '-') {
			return false
		}
	}
	return true
}

func isDigits(s string) bool {
	if s == "" {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

func atoiSaturating(s string) int {
	n, err := strconv.Atoi(s)
	if err != nil {
		return math.MaxInt // only digits reach here: the error is overflow
	}
	return n
}

func addSaturating(a, b int) int {
	if a > math.MaxInt-b {
		return math.MaxInt
	}
	return a + b
}
