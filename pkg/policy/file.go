package policy

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
)

// ReadFile reads a policy, infra or cases file: a regular file, of at most
// MaxInputSize bytes (one byte more, so that the loader reports the file as
// too large). A FIFO, device, socket or directory is refused naming it
// (issue 13): opening a FIFO for reading blocks until a writer comes, which
// would hang auditd's start or its SIGHUP reload, and a device can be read
// without end. It checks twice, as pkg/token reads the tokens file: stat
// before opening (the open itself would block), and the opened file
// again, in case the path was swapped in between.
func ReadFile(path string) ([]byte, error) {
	fi, err := os.Stat(path)
	if pe := (*fs.PathError)(nil); errors.As(err, &pe) {
		pe.Op = "open" // "open x.yaml: no such file or directory", as before
		return nil, pe
	}
	if err != nil {
		return nil, err
	}
	if err := checkRegular(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	if fi, err = f.Stat(); err != nil {
		return nil, err
	}
	if err := checkRegular(path, fi); err != nil {
		return nil, err
	}
	data, err := io.ReadAll(io.LimitReader(f, MaxInputSize+1))
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return data, nil
}

func checkRegular(path string, fi fs.FileInfo) error {
	m := fi.Mode()
	if m.IsRegular() {
		return nil
	}
	what := "a special file"
	switch {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeNamedPipe != 0:
		what = "a named pipe (FIFO)"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a device"
	}
	return fmt.Errorf("%s is %s, not a regular file", path, what)
}
