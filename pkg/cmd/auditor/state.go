package auditor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"

	"github.com/govkit/govkit/pkg/atomicfile"
	"github.com/govkit/govkit/pkg/monitor"
)

// maxStateFile bounds a state file read (DESIGN §3: bounded reads); a real
// one is a few hundred bytes.
const maxStateFile = 1 << 20

// stateFile is --state: the monitor's State in a file, replaced
// atomically on every save.
type stateFile string

func (f stateFile) Path() string { return string(f) }

// Save replaces the file atomically (mode 0600): a crash leaves the old
// state or the new one, never half of either.
func (f stateFile) Save(st monitor.State) error {
	return unwrapPath(atomicfile.Write(string(f), st.Marshal(), 0o600))
}

func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// readState reads the state file at path; a missing file is an empty
// state and exists false.
func readState(path string) (st monitor.State, exists bool, err error) {
	f, err := os.Open(path)
	if errors.Is(err, fs.ErrNotExist) {
		return monitor.State{SchemaVersion: monitor.StateVersion}, false, nil
	}
	if err != nil {
		return monitor.State{}, false, err
	}
	defer f.Close()
	if fi, err := f.Stat(); err == nil && !fi.Mode().IsRegular() {
		return monitor.State{}, true, errors.New("it is not a regular file")
	}
	data, err := io.ReadAll(io.LimitReader(f, maxStateFile+1))
	if err != nil {
		return monitor.State{}, true, err
	}
	if len(data) > maxStateFile {
		return monitor.State{}, true, fmt.Errorf("it is larger than %d bytes", maxStateFile)
	}
	st, err = monitor.ParseState(data)
	return st, true, err
}
