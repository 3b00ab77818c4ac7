package sandbox

import (
	"errors"
	"reflect"
	"slices"
	"testing"
)

func TestParseLevel(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want Level
		err  string
	}{
		{"off", Off, ""},
		{"readonly", ReadOnly, ""},
		{"isolated", Isolated, ""},
		{"auto", "", `unknown sandbox level "auto" (valid: off, readonly, isolated)`},
		{"READONLY", "", `unknown sandbox level "READONLY" (valid: off, readonly, isolated)`},
		{"", "", `unknown sandbox level "" (valid: off, readonly, isolated)`},
	} {
		got, err := ParseLevel(tc.in)
		if got != tc.want || (err == nil) != (tc.err == "") || (err != nil && err.Error() != tc.err) {
			t.Errorf("ParseLevel(%q) = %q, %v; want %q, %s", tc.in, got, err, tc.want, tc.err)
		}
	}
}

func TestReportString(t *testing.T) {
	for _, tc := range []struct {
		level Level
		abi   int
		want  string
	}{
		{Off, 7, "off"},
		{ReadOnly, 3, "landlock abi 3: fs read-only (device ioctls not covered); seccomp: tiocsti denied"},
		{ReadOnly, 7, "landlock abi 7: fs read-only; seccomp: tiocsti denied"},
		{Isolated, 4, "landlock abi 4: fs read-only (device ioctls not covered), tcp denied; seccomp: sockets denied, io_uring denied, tiocsti denied"},
		{Isolated, 5, "landlock abi 5: fs read-only, tcp denied; seccomp: sockets denied, io_uring denied, tiocsti denied"},
		{Isolated, 7, "landlock abi 7: fs read-only, tcp denied, ipc scoped; seccomp: sockets denied, io_uring denied, tiocsti denied"},
		{Isolated, 10, "landlock abi 10: fs read-only, tcp and udp denied, ipc scoped; seccomp: sockets denied, io_uring denied, tiocsti denied"},
	} {
		r := plan{Level: tc.level, LandlockABI: tc.abi, TempDir: "/t"}.report()
		if got := r.String(); got != tc.want {
			t.Errorf("%s abi %d: %q, want %q", tc.level, tc.abi, got, tc.want)
		}
	}
	if got := (Report{}).String(); got != "off" {
		t.Errorf("zero Report = %q", got)
	}
}

func TestBuildLandlock(t *testing.T) {
	const (
		read   = accessExecute | accessReadFile | accessReadDir
		device = accessReadFile | accessWriteFile | accessTruncate
	)
	for _, tc := range []struct {
		level             Level
		abi               int
		fs, net, scoped   uint64
		root, dev, tmpDir uint64
	}{
		{ReadOnly, 3, 1<<15 - 1, 0, 0, read, device, (1<<15 - 1) &^ (accessMakeChar | accessMakeBlock)},
		{ReadOnly, 7, 1<<16 - 1, 0, 0, read, device | accessIoctlDev, (1<<16 - 1) &^ (accessMakeChar | accessMakeBlock)},
		{Isolated, 4, 1<<15 - 1, 3, 0, read, device, (1<<15 - 1) &^ (accessMakeChar | accessMakeBlock)},
		{Isolated, 7, 1<<16 - 1, 3, 3, read, device | accessIoctlDev, (1<<16 - 1) &^ (accessMakeChar | accessMakeBlock)},
		{Isolated, 9, 1<<17 - 1, 3, 3, read | accessResolveUnix, device | accessIoctlDev, (1<<17 - 1) &^ (accessMakeChar | accessMakeBlock)},
		{Isolated, 11, 1<<17 - 1, 15, 3, read | accessResolveUnix, device | accessIoctlDev, (1<<17 - 1) &^ (accessMakeChar | accessMakeBlock)},
	} {
		r := buildLandlock(tc.level, tc.abi, "/tmp/p", []string{"/dev/pts/3"}, false)
		want := landlockRules{fs: tc.fs, net: tc.net, scoped: tc.scoped, paths: []pathRule{
			{access: tc.root, paths: []string{"/"}},
			{access: tc.dev, paths: []string{"/dev/null"}},
			{access: tc.dev, paths: []string{"/dev/tty"}, optional: true},
			{access: tc.tmpDir, paths: []string{"/tmp/p"}},
			{access: tc.dev, paths: []string{"/dev/pts/3"}},
		}}
		if !reflect.DeepEqual(r, want) {
			t.Errorf("%s abi %d:\n got %+v\nwant %+v", tc.level, tc.abi, r, want)
		}
		for _, p := range r.paths {
			if p.access&^r.fs != 0 {
				t.Errorf("%s abi %d: %v grants %b beyond the handled %b", tc.level, tc.abi, p.paths, p.access, r.fs)
			}
		}
	}
	// NoUnixSockets takes back connecting to pathname unix sockets.
	if r := buildLandlock(Isolated, 9, "/t", nil, true); r.paths[0].access != read {
		t.Errorf("no unix sockets, abi 9: / grants %b, want %b", r.paths[0].access, uint64(read))
	}
	if r := buildLandlock(ReadOnly, 7, "/t", nil, false); len(r.paths) != 4 {
		t.Errorf("no terminal: %d path rules", len(r.paths))
	}
}

func TestCheck(t *testing.T) {
	full := Support{LandlockABI: 7, Seccomp: true}
	for _, tc := range []struct {
		s     Support
		level Level
		want  string
	}{
		{full, Off, ""},
		{full, ReadOnly, ""},
		{full, Isolated, ""},
		{Support{LandlockError: "x"}, Off, ""},
		{Support{LandlockError: "kernel built without landlock (ENOSYS)", Seccomp: true}, ReadOnly,
			"sandbox readonly cannot be enforced: landlock is not available: kernel built without landlock (ENOSYS)"},
		{Support{LandlockABI: 2, Seccomp: true}, ReadOnly,
			"sandbox readonly cannot be enforced: landlock abi 2 does not cover truncate(2); readonly needs abi >= 3 (linux 6.2)"},
		{Support{LandlockABI: 3, Seccomp: true}, ReadOnly, ""},
		{Support{LandlockABI: 3, Seccomp: true}, Isolated,
			"sandbox isolated cannot be enforced: landlock abi 3 has no network rules; isolated needs abi >= 4 (linux 6.7)"},
		{Support{LandlockABI: 7, SeccompError: "seccomp(SECCOMP_GET_ACTION_AVAIL): EINVAL"}, ReadOnly,
			"sandbox readonly cannot be enforced: seccomp is not available: seccomp(SECCOMP_GET_ACTION_AVAIL): EINVAL"},
		{full, "auto", `unknown sandbox level "auto" (valid: off, readonly, isolated)`},
	} {
		err := tc.s.Check(tc.level)
		if (err == nil) != (tc.want == "") || (err != nil && err.Error() != tc.want) {
			t.Errorf("%+v Check(%s) = %v, want %s", tc.s, tc.level, err, tc.want)
		}
		var u *UnavailableError
		if err != nil && tc.level != "auto" && !errors.As(err, &u) {
			t.Errorf("Check(%s) = %T, want *UnavailableError", tc.level, err)
		}
	}
}

func TestDecodeSetupError(t *testing.T) {
	for _, tc := range []struct {
		in   string
		want SetupError
	}{
		{`{"Stage":"lookup","Err":"exec: \"x\": executable file not found in $PATH"}`, SetupError{"lookup", `exec: "x": executable file not found in $PATH`}},
		{"garbage\n", SetupError{"plan", "garbage"}},
		{`{"Err":"no stage"}`, SetupError{"plan", `{"Err":"no stage"}`}},
	} {
		if got := decodeSetupError([]byte(tc.in)); *got != tc.want {
			t.Errorf("%q: %+v, want %+v", tc.in, *got, tc.want)
		}
	}
}

func TestWithoutVars(t *testing.T) {
	got := withoutVars([]string{"A=1", "TMPDIR=/x", "TMPDIRX=2", planEnv + "={}", "B="}, planEnv, "TMPDIR")
	if want := []string{"A=1", "TMPDIRX=2", "B="}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}
