package policy

import (
	"bufio"
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/rogpeppe/go-internal/txtar"
)

// TestExplainCorpus pins the explanation text of many decisions at once
// (issue 20: the text is built by appending into one buffer and must stay
// byte-identical): every policy file the package's testdata holds, every
// case of testdata/cases, and for each file the requests built from its
// own principals and selectors, under global dry-run, after execution and
// with guardrails. testdata/explain/corpus.golden holds one digest per
// decision (the texts would be megabytes); on a difference the test prints
// the request and the new text, and -update rewrites the file, so that git
// diff lists exactly the decisions whose text changed.
func TestExplainCorpus(t *testing.T) {
	got := explainCorpus(t)
	const path = "testdata/explain/corpus.golden"
	if updateGolden() {
		var b strings.Builder
		b.WriteString("# TestExplainCorpus: one line per decision, its id and the SHA-256 (first 16 hex) of its explanation.\n")
		for _, c := range got {
			fmt.Fprintf(&b, "%s %s\n", c.id, c.digest())
		}
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatalf("%v (run with -update to create it)", err)
	}
	defer f.Close()
	want := map[string]string{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if id, digest, ok := strings.Cut(sc.Text(), " "); ok && !strings.HasPrefix(id, "#") {
			want[id] = digest
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if len(got) != len(want) || len(got) < 1000 {
		t.Errorf("%d decisions, the golden has %d (-update rewrites it)", len(got), len(want))
	}
	bad := 0
	for _, c := range got {
		if w, ok := want[c.id]; !ok || w != c.digest() {
			if bad++; bad <= 5 {
				t.Errorf("%s (%s): text differs from %s (-update rewrites it)\n%s", c.id, c.what, path, c.text)
			}
		}
	}
	if bad > 5 {
		t.Errorf("… %d decisions differ in all", bad)
	}
}

type corpusCase struct {
	id, what, text string
}

func (c corpusCase) digest() string {
	sum := sha256.Sum256([]byte(c.text))
	return hex.EncodeToString(sum[:8])
}

// corpusSource is one policy file of the corpus.
type corpusSource struct {
	name string
	cfg  *Config
	reqs []Request // requests of its own, besides the generated ones
	// ownOnly: only reqs (the generated grid of a large file is too big).
	ownOnly bool
}

func corpusSources(t *testing.T) []corpusSource {
	t.Helper()
	var out []corpusSource
	for _, f := range []string{"testdata/seed003.yaml", "testdata/explain/policies.yaml", "testdata/explain/corpus-example.yaml"} {
		cfg, err := LoadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, corpusSource{name: strings.TrimSuffix(filepath.Base(f), ".yaml"), cfg: cfg})
	}
	files, err := filepath.Glob("testdata/cases/*.txtar")
	if err != nil || len(files) == 0 {
		t.Fatalf("no testdata/cases: %v", err)
	}
	for _, f := range files {
		ar, err := txtar.ParseFile(f)
		if err != nil {
			t.Fatal(err)
		}
		src := corpusSource{name: strings.TrimSuffix(filepath.Base(f), ".txtar")}
		for _, s := range ar.Files {
			switch s.Name {
			case "policy.yaml":
				if src.cfg, err = LoadNamed(s.Name, bytes.NewReader(s.Data)); err != nil {
					t.Fatal(err)
				}
			case "cases.yaml":
				cases, err := LoadCases(s.Name, bytes.NewReader(s.Data))
				if err != nil {
					t.Fatal(err)
				}
				for _, c := range cases {
					req := c.Request
					if req.Context.Time.IsZero() {
						req.Context.Time = DefaultCaseTime
					}
					src.reqs = append(src.reqs, req)
				}
			}
		}
		out = append(out, src)
	}
	guarded, err := LoadNamed("guarded.yaml", strings.NewReader(guardedBase))
	if err != nil {
		t.Fatal(err)
	}
	out = append(out, corpusSource{name: "guarded", cfg: guarded}, corpusSource{name: "bench10", cfg: benchConfig(10)})
	// Edges the generated requests miss: counts that are not counts, a
	// resource without a name or type, more than 20 policies that do not
	// apply.
	odd := []Request{
		{Resource: RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}, Action: ActionWrite, Context: RequestContext{RowsAffected: -3, Time: saturday}},
		{Resource: RequestResource{Type: "kubernetes", Name: "prod", Tags: []string{"production"}}, Action: ActionWrite,
			Principal: RequestPrincipal{Service: "k8s-agent"}, Context: RequestContext{PodsAffected: -1, Time: saturday}},
		{Resource: RequestResource{Type: "database"}, Action: ActionRead},
		{Resource: RequestResource{Name: "nameless"}, Action: ActionRead},
		{Principal: RequestPrincipal{Roles: []string{"dba"}}, Resource: RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}, Action: ActionWrite},
		{Resource: RequestResource{Type: "database", Name: "prod-db", Tags: []string{"production"}}, Action: ActionDestructive},
	}
	for i := range out[:3] {
		out[i].reqs = append(out[i].reqs, odd...)
	}
	out = append(out, corpusSource{name: "bench30", cfg: benchConfig(30), reqs: append(odd, benchRequest), ownOnly: true})
	return out
}

// corpusPrincipals are no one, each principal the policies name (roles
// with a differently-cased second role), and a stranger.
func corpusPrincipals(cfg *Config) []RequestPrincipal {
	out := []RequestPrincipal{{}}
	seen := map[Principal]bool{}
	for _, p := range cfg.Policies {
		for _, pr := range p.Principals {
			if seen[pr] {
				continue
			}
			seen[pr] = true
			switch {
			case pr.Role != "":
				out = append(out, RequestPrincipal{UserID: "carol@example.com", Roles: []string{"Viewer", pr.Role}})
			case pr.User != "":
				out = append(out, RequestPrincipal{UserID: pr.User})
			default:
				out = append(out, RequestPrincipal{Service: pr.Service})
			}
		}
	}
	return append(out, RequestPrincipal{UserID: "mallory@example.com", Roles: []string{"intern"}, Service: "cron"})
}

// corpusResources are, per selector, a resource it matches and one
// without the tags it asks for, then two resources no policy names.
func corpusResources(cfg *Config) []RequestResource {
	var out []RequestResource
	seen := map[string]bool{}
	add := func(r RequestResource) {
		k := r.Type + ":" + r.Name + ":" + strings.Join(r.Tags, ",")
		if !seen[k] {
			seen[k] = true
			out = append(out, r)
		}
	}
	for _, p := range cfg.Policies {
		for _, rs := range p.Resources {
			name := strings.NewReplacer("*", "x1", "?", "y", "[", "", "]", "").Replace(rs.Name)
			if name == "" {
				name = "prod-db"
			}
			var tags []string
			if rs.Match != nil {
				tags = append([]string{"critical"}, rs.Match.Tags...)
			}
			add(RequestResource{Type: rs.Type, Name: name, Tags: tags})
			if len(tags) > 0 {
				add(RequestResource{Type: rs.Type, Name: name, Tags: []string{"staging"}})
			}
		}
	}
	add(RequestResource{Type: "queue", Name: "jobs", Tags: []string{"production"}})
	add(RequestResource{Type: "database", Name: "unknown-db"})
	return out
}

var corpusContexts = []RequestContext{{}, {RowsAffected: 5, PodsAffected: 2}, {RowsAffected: 5000, PodsAffected: 500}}

// corpusTimes: a Saturday noon in New York and a Tuesday morning, so that
// schedules both open and close.
var corpusTimes = []time.Time{saturday, tuesday, time.Date(2026, 11, 22, 11, 15, 0, 0, time.UTC)}

// explainCorpus explains every corpus decision. The cross product of
// principals, resources, actions, counts and times is thinned
// deterministically (one in five, the kept count and time shifting with
// the index) to keep the corpus at a few thousand decisions.
func explainCorpus(t *testing.T) []corpusCase {
	clock := func() time.Time { return tuesday } // for requests without a time
	var out []corpusCase
	for _, src := range corpusSources(t) {
		engines := []struct {
			name string
			e    *Engine
		}{
			{"", NewEngine(EngineConfig{PolicyConfig: src.cfg, Clock: clock})},
			{"dry", NewEngine(EngineConfig{PolicyConfig: src.cfg, Clock: clock, DryRun: true})},
			{"allow", NewEngine(EngineConfig{PolicyConfig: src.cfg, Clock: clock, DefaultEffect: EffectAllow})},
			{"approve", NewEngine(EngineConfig{PolicyConfig: src.cfg, Clock: clock, DefaultEffect: EffectRequireApproval})},
		}
		n := 0
		explain := func(ei int, req Request, mode string) {
			eng := engines[ei]
			var tr DecisionTrace
			switch mode {
			case "post":
				tr = eng.e.CheckPostExecution(req)
			case "postsession":
				tr = eng.e.CheckPostExecutionSession(req)
			case "unguarded":
				tr = eng.e.ExplainUnguarded(req, "not evaluated here")
			case "empty", "full", "open", "nil":
				tr = eng.e.ExplainSession(req, corpusHistory(mode))
			default:
				tr = eng.e.Explain(req)
			}
			id := fmt.Sprintf("%s/%04d", src.name, n)
			n++
			what := fmt.Sprintf("engine %q mode %q request %+v", eng.name, mode, req)
			out = append(out, corpusCase{id: id, what: what, text: tr.Explanation})
		}
		for _, req := range src.reqs {
			for ei := range engines {
				explain(ei, req, "")
				explain(ei, req, "post")
			}
		}
		if src.cfg.Guardrails != nil {
			// A guardrail in front of the default effect.
			req := Request{Resource: RequestResource{Type: "queue", Name: "jobs"}, Action: ActionWrite, Context: RequestContext{Time: at(40 * time.Second)}}
			for ei := range engines {
				explain(ei, req, "full")
			}
		}
		if src.ownOnly {
			continue
		}
		i := 0
		for _, p := range corpusPrincipals(src.cfg) {
			for _, r := range corpusResources(src.cfg) {
				for _, a := range []Action{ActionRead, ActionWrite, ActionDestructive, "Write", "drop"} {
					for ci, ctx := range corpusContexts {
						for ti, when := range corpusTimes {
							i++
							if i%5 != ci+ti {
								continue
							}
							ctx.Time = when
							req := Request{Principal: p, Resource: r, Action: a, Context: ctx}
							ei := i % len(engines)
							explain(ei, req, "")
							if ctx.RowsAffected > 0 {
								explain(ei, req, "post")
							}
							if src.cfg.Guardrails != nil {
								// The histories are around t0.
								req.Context.Time = at(40 * time.Second)
								for _, m := range []string{"unguarded", "postsession", "empty", "full", "open", "nil"} {
									explain(ei, req, m)
								}
							}
						}
					}
				}
			}
		}
	}
	invalid := NewEngine(EngineConfig{PolicyConfig: &Config{Version: "1", Policies: []Policy{
		{Name: "x", Line: 3, Resources: []ResourceSelector{{Type: "database"}}, Rules: []Rule{{Line: 5, Actions: []Action{"write"}, Effect: "alow"}}},
	}}})
	for i, a := range []Action{ActionRead, ActionWrite, "drop"} {
		tr := invalid.Explain(Request{Resource: RequestResource{Type: "database", Name: "x"}, Action: a})
		out = append(out, corpusCase{id: fmt.Sprintf("invalid/%04d", i), what: string(a), text: tr.Explanation})
	}
	// An escaped, bounded request: control characters and long names.
	seedEngine := seed(t)
	for i, name := range []string{"prod-db\x1b[2J\nrm -rf /" + strings.Repeat("x", 500), "naïve-db", strings.Repeat("é", 120)} {
		tags := []string{"production", "a\tb"}
		for k := 0; k < 25; k++ {
			tags = append(tags, fmt.Sprintf("t%d", k))
		}
		tr := seedEngine.Explain(Request{Principal: RequestPrincipal{UserID: "bob\x07", Roles: slices.Repeat([]string{"dba"}, 30)},
			Resource: RequestResource{Type: "database", Name: name, Tags: tags}, Action: ActionWrite})
		out = append(out, corpusCase{id: fmt.Sprintf("escaped/%04d", i), what: name, text: tr.Explanation})
	}
	return out
}

// corpusHistory is a session history for the guarded source, at t0+40s.
func corpusHistory(mode string) *SessionHistory {
	switch mode {
	case "empty":
		return &SessionHistory{ID: "s1"}
	case "full":
		return &SessionHistory{ID: "s1", Writes: []time.Time{at(10 * time.Second), at(20 * time.Second), at(30 * time.Second)}}
	case "open":
		return &SessionHistory{ID: "s1", Outcomes: outcomes(0, time.Second, "EEE")}
	}
	return nil
}
