package auditor

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"

	"github.com/govkit/govkit/pkg/monitor"
)

// maxStateFile bounds a state file read (DESIGN §3: bounded reads); a real
// one is a few hundred bytes.
const maxStateFile = 1 << 20

// stateFile is --state: the monitor's State in a file, replaced
// atomically on every save.
type stateFile string

func (f stateFile) Path() string { return string(f) }

func (f stateFile) Save(st monitor.State) error { return unwrapPath(writeState(string(f), st)) }

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

// writeState replaces the file at path with st atomically: a temporary file
// in the same directory (mode 0600), written and synced, renamed over path,
// and the directory synced, so a crash leaves the old state or the new one,
// never half of either.
func writeState(path string, st monitor.State) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".tmp-*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := tmp.Chmod(0o600); err != nil {
		return err
	}
	if _, err := tmp.Write(st.Marshal()); err != nil {
		return err
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	if d, err := os.Open(dir); err == nil {
		// Best effort: some filesystems refuse to sync a directory.
		_ = d.Sync()
		d.Close()
	}
	return nil
}
