// Package hookrun finds the hook commands an agent's settings register and
// runs one with an event, as the agent would: what classify doctor and gate
// doctor check a setup with.
package hookrun

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/hook"
)

// maxSettings bounds a settings file read: they are small JSON or TOML.
const maxSettings = 1 << 20

// SettingsFiles lists the agent's settings files that exist, for the
// project in dir and the user whose home is home ("" skips the user's).
func SettingsFiles(s hook.Setup, dir, home string) []string {
	var out []string
	for _, f := range s.Files {
		p := filepath.Join(dir, f)
		if rest, ok := strings.CutPrefix(f, "~/"); ok {
			if home == "" {
				continue
			}
			p = filepath.Join(home, rest)
		}
		matches, _ := filepath.Glob(p)
		out = append(out, matches...)
	}
	sort.Strings(out)
	return out
}

// ReadSettings reads a settings file, refusing one over 1 MiB.
func ReadSettings(path string) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxSettings+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxSettings {
		return nil, fmt.Errorf("%s is larger than 1 MiB", path)
	}
	return data, nil
}

// Program is the program of a simple hook command line.
func Program(command string) string {
	f := strings.Fields(command)
	if len(f) == 0 {
		return ""
	}
	return strings.Trim(f[0], `"'`)
}

// Argv is how the agent runs a registered command: through sh -c, or the
// file itself for a script registration (Cline).
func Argv(command string, script bool) []string {
	if script {
		return []string{command}
	}
	return []string{"/bin/sh", "-c", command}
}

// Result is what a hook command answered.
type Result struct {
	Stdout []byte
	Exit   int // -1: it did not run
	// Detail explains an exit that is neither an answer (0) nor a block
	// (2), or why it did not run; "" otherwise.
	Detail string
}

// Run runs argv in dir with event on stdin, within 10 seconds (the
// timeout the install snippets register).
func Run(argv []string, dir string, event []byte) Result {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Dir = dir
	cmd.Stdin = bytes.NewReader(event)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	exit := 0
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		exit = ee.ExitCode()
	case err != nil:
		return Result{Exit: -1, Detail: fmt.Sprintf(" (it did not run: %v)", err)}
	}
	r := Result{Stdout: stdout.Bytes(), Exit: exit}
	if msg := strings.TrimSpace(stderr.String()); msg != "" && exit != 0 && exit != 2 {
		first, _, _ := strings.Cut(msg, "\n")
		r.Detail = " (exit " + fmt.Sprint(exit) + ": " + first + ")"
	}
	return r
}
