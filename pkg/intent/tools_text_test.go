package intent

import "testing"

// jqProgramRisk errs towards unbounded (issue 14), but not on names that
// are fields, variables or strings.
func TestJQProgramRisk(t *testing.T) {
	for _, tc := range []struct {
		prog string
		bad  bool
	}{
		{".", false},
		{".items[] | select(.name == \"repeat\")", false},
		{".repeat, $repeat, {repeat: 1}.repeat", true}, // an object key reads as a call: fail closed
		{"[range(10)] | length", false},
		{"range(0; length; 2)", false},
		{"range(0; 10; 0)", true},
		{"range(0; 10; 0.5)", true},
		{"range(.n)", true},
		{"def f: .+1; [.[] | f]", false},
		{"def f: def g: f; g; f", true},
		{"recurse(.children[]?)", false},
		{"recurse(.; . != null)", true},
		{"\"a\\(1 + (2))b\" | repeat(.)", true},
		{"\"unterminated", true},
		{"# repeat in a comment\n.", false},
		{"limit(3; repeat(1))", true},
		{"while(. < 3; . + 1)", true},
		{"[inputs]", false},
	} {
		if _, bad := jqProgramRisk(tc.prog); bad != tc.bad {
			t.Errorf("jqProgramRisk(%q) = %v, want %v", tc.prog, bad, tc.bad)
		}
	}
}

func TestEndlessDevice(t *testing.T) {
	for p, want := range map[string]bool{
		"/dev/zero": true, "/dev//zero": true, "../../dev/urandom": true, "dev/random": true,
		"/dev/tty": true, "/dev/ttyUSB0": true, "/proc/kmsg": true, "/dev/null": false,
		"/dev/stdin": false, "/dev/sda": false, "/proc/self/status": false, "zero": false, "": false,
	} {
		if got := endlessDevice(p); got != want {
			t.Errorf("endlessDevice(%q) = %v, want %v", p, got, want)
		}
	}
}
