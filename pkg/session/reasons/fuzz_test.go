package reasons

import (
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzParse: no input panics; a registry that parses keeps every core code
// with its Go semantics, never has a blocking extension, and survives a
// marshal → parse round trip unchanged.
func FuzzParse(f *testing.F) {
	f.Add(string(embedded))
	f.Add(`{"reasons":[{"code":"EXT","description":"d","severity":"warning","next_calls":[{"tool":"{read_tool}","args":{"candidate_id":"{candidate_id}"}}]}]}`)
	f.Add(`{"reasons":[{"code":"BUDGET_HARD_LIMIT","description":"d","severity":"warning","blocking":false}]}`)
	f.Add(`{"reasons":null}`)
	f.Fuzz(func(t *testing.T, doc string) {
		r, err := Parse([]byte(doc))
		if err != nil {
			return
		}
		for c, sem := range core {
			re, ok := r.Lookup(c)
			if !ok || re.Severity != sem.severity || re.Blocking != sem.blocking {
				t.Fatalf("%s lost its semantics: %+v", c, re)
			}
		}
		for _, c := range r.Codes() {
			if re, _ := r.Lookup(c); !re.Core() && (re.Blocking || re.Severity == SeverityBlock) {
				t.Fatalf("blocking extension %+v", re)
			}
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		again, err := Parse(b)
		if err != nil {
			t.Fatalf("re-parse of %s: %v", b, err)
		}
		if !reflect.DeepEqual(again.byCode, r.byCode) || !reflect.DeepEqual(again.codes, r.codes) {
			t.Fatalf("round trip changed the registry")
		}
	})
}
