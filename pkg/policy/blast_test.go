package policy

import (
	"math"
	"strconv"
	"testing"
)

func TestParseRowsAffected(t *testing.T) {
	tests := []struct {
		name   string
		output string
		rows   int
		ok     bool
	}{
		{"delete", "DELETE 42\n", 42, true},
		{"update", "UPDATE 7", 7, true},
		{"insert", "INSERT 0 3\n", 3, true},
		{"insert with oid", "INSERT 16385 1\n", 1, true},
		{"copy", "COPY 1500\n", 1500, true},
		{"merge", "MERGE 12\n", 12, true},
		{"zero rows", "DELETE 0\n", 0, true},
		{"select does not count", " id | name\n----+------\n  1 | a\n(1 row)\n\nSELECT 1\n", 0, true},
		{"several tags add up", "BEGIN\nUPDATE 10\nDELETE 5\r\nINSERT 0 2\nCOMMIT\n", 17, true},
		{"no tag", "CREATE TABLE\nBEGIN\n", 0, false},
		{"empty", "", 0, false},
		{"error text", "ERROR:  relation \"x\" does not exist\n", 0, false},
		{"table cell is indented", " DELETE 5\n", 0, false},
		{"not a count", "DELETE five\nUPDATE 1 2\nINSERT 0\nINSERT x 3\n", 0, false},
		{"lowercase is not a tag", "delete 5\n", 0, false},
		{"overflow saturates", "DELETE 99999999999999999999999\nUPDATE 1\n", math.MaxInt, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rows, ok := ParseRowsAffected(tt.output)
			if rows != tt.rows || ok != tt.ok {
				t.Errorf("ParseRowsAffected(%q) = %d, %v; want %d, %v", tt.output, rows, ok, tt.rows, tt.ok)
			}
		})
	}
}

func TestParsePodsAffected(t *testing.T) {
	tests := []struct {
		name   string
		output string
		n      int
		ok     bool
	}{
		{"quoted delete", `pod "web-1" deleted` + "\n", 1, true},
		{"slash configured", "deployment.apps/api configured\n", 1, true},
		{"apply mix", "service/api unchanged\ndeployment.apps/api configured\nconfigmap/api-env created\n", 2, true},
		{"unchanged only", "service/api unchanged\n", 0, true},
		{"scale", "deployment.apps/api scaled\n", 1, true},
		{"patch replace restart", "deployment.apps/a patched\ndeployment.apps/b replaced\ndeployment.apps/c restarted\n", 3, true},
		{"label annotate", "pod/a labeled\npod/b annotated\n", 2, true},
		{"force delete", `pod "x" force deleted` + "\n", 1, true},
		{"set image", "deployment.apps/api image updated\n", 1, true},
		{"drain", "node/n1 cordoned\nevicting pod default/web-1\npod/web-1 evicted\nnode/n1 drained\n", 3, true},
		{"rollout undo", "deployment.apps/api rolled back\n", 1, true},
		{"dry run", "pod \"x\" deleted (dry run)\ndeployment.apps/y configured (server dry run)\n", 0, true},
		{"warning and noise", "Warning: resource is deprecated\nNAME READY STATUS\nweb-1 1/1 Running\n", 0, false},
		{"error", `Error from server (NotFound): pods "x" not found` + "\n", 0, false},
		{"empty", "", 0, false},
		{"bad kind", "Pod/x deleted\n", 0, false},
		{"empty name", `pod "" deleted` + "\n" + "pod/ deleted\n", 0, false},
		{"crlf", "pod/a deleted\r\npod/b deleted\r\n", 2, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n, ok := ParsePodsAffected(tt.output)
			if n != tt.n || ok != tt.ok {
				t.Errorf("ParsePodsAffected(%q) = %d, %v; want %d, %v", tt.output, n, ok, tt.n, tt.ok)
			}
		})
	}
}

// TestParsedCountsDecide ties the parsers to the post-execution check, as
// an enforcement point uses them (seed 003 "How it works").
func TestParsedCountsDecide(t *testing.T) {
	cfg := &Config{Version: "1", Policies: []Policy{{
		Name: "limit", Resources: []ResourceSelector{{Type: "database"}},
		Rules: []Rule{{Actions: []Action{ActionWrite}, Effect: EffectAllow, Conditions: &Conditions{MaxRowsAffected: ptr(1000)}}},
	}}}
	e := NewEngine(EngineConfig{PolicyConfig: cfg})
	for _, tc := range []struct {
		out  string
		want Effect
	}{{"UPDATE 999\n", EffectAllow}, {"UPDATE 999\nDELETE 2\n", EffectDeny}} {
		rows, _ := ParseRowsAffected(tc.out)
		tr := e.CheckPostExecution(Request{Resource: RequestResource{Type: "database", Name: "db"}, Action: ActionWrite, Context: RequestContext{RowsAffected: rows}})
		if tr.Decision.EnforcedEffect != tc.want || !tr.Decision.PostExecution {
			t.Errorf("%q: %+v", tc.out, tr.Decision)
		}
		if tc.want == EffectDeny && tr.Explanation == "" {
			t.Error("no explanation")
		}
	}
}

func ptr(n int) *int { return &n }

func BenchmarkParseRowsAffected(b *testing.B) {
	out := ""
	for i := 0; i < 20; i++ {
		out += "UPDATE " + strconv.Itoa(i) + "\n"
	}
	for b.Loop() {
		ParseRowsAffected(out)
	}
}
