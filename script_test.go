package govkit_test

import (
	"errors"
	"flag"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/rogpeppe/go-internal/testscript"

	"github.com/govkit/govkit/pkg/cmd/classify"
	"github.com/govkit/govkit/pkg/cmd/govexplain"
)

var update = flag.Bool("update", false, "rewrite golden output: cmp files in testdata/script and README.md's generated tables")

// TestMain registers every govkit binary, so that scripts run the real
// command trees as separate processes, exactly as users do.
func TestMain(m *testing.M) {
	testscript.Main(m, map[string]func(){
		"classify":   func() { os.Exit(classify.Main()) },
		"govexplain": func() { os.Exit(govexplain.Main()) },
	})
}

// TestScripts runs testdata/script/*.txtar: one behaviour per file.
func TestScripts(t *testing.T) {
	testscript.Run(t, testscript.Params{
		Dir:                 "testdata/script",
		UpdateScripts:       *update,
		RequireExplicitExec: true,
		RequireUniqueNames:  true,
		Setup: func(env *testscript.Env) error {
			// A config file on the machine running the tests must not leak in:
			// scripts that need one write it under $WORK/.config.
			env.Setenv("XDG_CONFIG_HOME", filepath.Join(env.WorkDir, ".config"))
			return nil
		},
		Cmds: map[string]func(ts *testscript.TestScript, neg bool, args []string){
			"exits":      cmdExits,
			"genline":    cmdGenline,
			"writebytes": cmdWritebytes,
		},
	})
}

// exits CODE program [args...]: run program like exec and require exit
// status CODE (testscript's exec only tells zero from non-zero).
func cmdExits(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 {
		ts.Fatalf("usage: exits CODE program [args...]")
	}
	want, err := strconv.Atoi(args[0])
	if err != nil {
		ts.Fatalf("exits: bad code %q", args[0])
	}
	got := 0
	if err := ts.Exec(args[1], args[2:]...); err != nil {
		var ee *exec.ExitError
		if !errors.As(err, &ee) {
			ts.Fatalf("exits: %v", err)
		}
		got = ee.ExitCode()
	}
	if got != want {
		ts.Fatalf("%s exited with status %d, want %d", args[1], got, want)
	}
}

// genline FILE N [TEXT]: append a line of N bytes (TEXT repeated, "x" by
// default) and a newline to FILE; for inputs too large to keep in a script.
func cmdGenline(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) < 2 || len(args) > 3 {
		ts.Fatalf("usage: genline FILE N [TEXT]")
	}
	n, err := strconv.Atoi(args[1])
	if err != nil || n < 0 {
		ts.Fatalf("genline: bad size %q", args[1])
	}
	text := "x"
	if len(args) == 3 {
		text = args[2]
	}
	line := strings.Repeat(text, n/len(text)+1)[:n] + "\n"
	f, err := os.OpenFile(ts.MkAbs(args[0]), os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	ts.Check(err)
	_, err = f.WriteString(line)
	ts.Check(errors.Join(err, f.Close()))
}

// writebytes FILE QUOTED: write the Go-quoted string QUOTED to FILE; for
// bytes a script file cannot hold (NUL, invalid UTF-8).
func cmdWritebytes(ts *testscript.TestScript, neg bool, args []string) {
	if neg || len(args) != 2 {
		ts.Fatalf("usage: writebytes FILE QUOTED")
	}
	data, err := strconv.Unquote(args[1])
	if err != nil {
		ts.Fatalf("writebytes: %s is not a Go string literal: %v", args[1], err)
	}
	ts.Check(os.WriteFile(ts.MkAbs(args[0]), []byte(data), 0o644))
}
