package govexplain_test

import (
	"strings"
	"testing"
)

// --action in any case is the action, as the engine matches it (issue 20:
// --action READ was refused): the same exit, trace and text as lower case.
func TestActionAnyCase(t *testing.T) {
	for _, tc := range []struct {
		action string
		code   int
	}{{"READ", 0}, {"Read", 0}, {"WRITE", 2}, {"Destructive", 1}} {
		t.Run(tc.action, func(t *testing.T) {
			for _, format := range []string{"text", "json"} {
				args := []string{"--policy", "testdata/action.yaml", "--resource", "database:prod-db", "--at", "2026-03-02T10:00:00Z", "-o", format, "--action"}
				code, out, errOut := run(t, append(args, tc.action)...)
				wantCode, want, _ := run(t, append(args, strings.ToLower(tc.action))...)
				if code != tc.code || code != wantCode || errOut != "" {
					t.Fatalf("-o %s: exit %d (lower case: %d), want %d; stderr %q", format, code, wantCode, tc.code, errOut)
				}
				if out != want {
					t.Errorf("-o %s: output differs from --action %s\n--- got\n%s--- want\n%s", format, strings.ToLower(tc.action), out, want)
				}
			}
		})
	}
	code, _, errOut := run(t, "--policy", "testdata/action.yaml", "--resource", "database:prod-db", "--action", "REED")
	if code != 3 || !strings.Contains(errOut, `govexplain: error: --action "REED" is not read, write or destructive`) {
		t.Errorf("--action REED: exit %d, stderr %q", code, errOut)
	}
}
