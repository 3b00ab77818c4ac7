package policy

import (
	"errors"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

var locatedLine = regexp.MustCompile(`^fuzz\.yaml:[1-9][0-9]*: `)

// FuzzLoad: no input panics; every error line is located (file:N:) or
// names the size limit; a config that loads also builds an engine that
// evaluates and explains without error, and its lines are in the input.
func FuzzLoad(f *testing.F) {
	for _, pattern := range []string{"testdata/*.yaml", "testdata/explain/*.yaml", "testdata/fuzz/load/*.yaml"} {
		files, _ := filepath.Glob(pattern)
		for _, p := range files {
			if raw, err := os.ReadFile(p); err == nil {
				f.Add(string(raw))
			}
		}
	}
	f.Add(base)
	f.Add("version: \"1\"\npolicies:\n  - &p {name: a, resources: [{type: db}], rules: [{action: read, effect: allow}]}\n  - *p\n")
	f.Add("version: \"1\"\npolicies:\n  - name: a\n    resources: [{type: db, name: \"[\"}]\n    rules: [{action: [read, write], effect: deny, conditions: {approval_quorum: 0}}]\n")
	at := time.Date(2026, 3, 8, 7, 0, 0, 0, time.UTC)
	f.Fuzz(func(t *testing.T, doc string) {
		cfg, err := LoadNamed("fuzz.yaml", strings.NewReader(doc))
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !locatedLine.MatchString(line) && !strings.Contains(line, "input size limit") {
					t.Fatalf("error without a line: %q", line)
				}
			}
			return
		}
		lines := strings.Count(doc, "\n") + 1
		for _, p := range cfg.Policies {
			if p.Line < 1 || p.Line > lines {
				t.Fatalf("policy %q at line %d of %d", p.Name, p.Line, lines)
			}
		}
		e := NewEngine(EngineConfig{PolicyConfig: cfg})
		if e.Err() != nil {
			t.Fatalf("loaded config does not compile: %v", e.Err())
		}
		// A session that has written and failed just now: whatever the
		// guardrails say, a trip refuses (code set, enforced deny) unless
		// a policy denies already.
		h := &SessionHistory{ID: "s", Writes: []time.Time{at.Add(-time.Second)}, Outcomes: []ToolOutcome{{At: at.Add(-time.Second), Error: true}}}
		for _, a := range []Action{ActionRead, ActionWrite, ActionDestructive} {
			req := Request{Resource: RequestResource{Type: "db", Name: "a"}, Action: a, Context: RequestContext{Time: at, RowsAffected: 5}}
			tr := e.Explain(req)
			if len(tr.PoliciesEvaluated) != len(cfg.Policies) || tr.Explanation == "" || rank(tr.Decision.Effect) == 0 {
				t.Fatalf("trace %+v", tr)
			}
			req.Context.RowsAffected = 0
			gt := e.ExplainSession(req, h)
			if (cfg.Guardrails != nil) != (gt.Guardrails != nil) || gt.Explanation == "" ||
				gt.Decision.Code != "" && (!gt.Guardrails.Tripped() || gt.Decision.EnforcedEffect != EffectDeny) {
				t.Fatalf("guarded trace %+v", gt)
			}
		}
	})
}

// FuzzParseRowsAffected: never negative; nothing found means nothing
// counted; appending a tag adds its count (saturating).
func FuzzParseRowsAffected(f *testing.F) {
	for _, s := range []string{"DELETE 3\n", "INSERT 0 5\nUPDATE 2", "SELECT 1\n", "COPY 99999999999999999999\n", "", "MERGE 1\r\n"} {
		f.Add(s, uint16(7))
	}
	f.Fuzz(func(t *testing.T, out string, extra uint16) {
		rows, ok := ParseRowsAffected(out)
		if rows < 0 || (!ok && rows != 0) {
			t.Fatalf("%q: %d %v", out, rows, ok)
		}
		more, ok2 := ParseRowsAffected(out + "\nDELETE " + strconv.Itoa(int(extra)) + "\n")
		if !ok2 || more != addSaturating(rows, int(extra)) {
			t.Fatalf("%q + DELETE %d: %d, want %d", out, extra, more, addSaturating(rows, int(extra)))
		}
	})
}

// FuzzParsePodsAffected: the count is at most the number of lines,
// nothing found means nothing counted, and one more confirmation line
// adds exactly one.
func FuzzParsePodsAffected(f *testing.F) {
	for _, s := range []string{"pod \"a\" deleted\n", "deployment.apps/b configured\nservice/c unchanged\n", "x (dry run)", "", "pod/a deleted\r\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, out string) {
		n, ok := ParsePodsAffected(out)
		if n < 0 || n > strings.Count(out, "\n")+1 || (!ok && n != 0) {
			t.Fatalf("%q: %d %v", out, n, ok)
		}
		more, ok2 := ParsePodsAffected(out + "\npod/fuzz deleted\n")
		if !ok2 || more != n+1 {
			t.Fatalf("%q + one: %d, want %d", out, more, n+1)
		}
	})
}

// FuzzLoadInfra: no panic, located errors, and every listed resource is
// found by Lookup.
func FuzzLoadInfra(f *testing.F) {
	if raw, err := os.ReadFile("testdata/infra.yaml"); err == nil {
		f.Add(string(raw))
	}
	f.Fuzz(func(t *testing.T, doc string) {
		in, err := LoadInfraNamed("fuzz.yaml", strings.NewReader(doc))
		if err != nil {
			for _, line := range strings.Split(err.Error(), "\n") {
				if !locatedLine.MatchString(line) && !strings.Contains(line, "input size limit") {
					t.Fatalf("error without a line: %q", line)
				}
			}
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("%T", err)
			}
			return
		}
		for _, r := range in.Resources {
			if _, ok := in.Lookup(r.Type, r.Name); !ok {
				t.Fatalf("%s:%s not found", r.Type, r.Name)
			}
		}
	})
}
