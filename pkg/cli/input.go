package cli

import (
	"errors"
	"io"
	"os"
)

// OpenInput opens the input a command names: "-" is stdin, shown as
// "standard input". The error is the bare cause ("no such file or
// directory"), for the caller to prefix with its flag or argument. close is
// never nil.
func OpenInput(name string, stdin io.Reader) (shown string, r io.Reader, close func(), err error) {
	if name == "-" {
		return "standard input", stdin, func() {}, nil
	}
	f, err := os.Open(name)
	if err != nil {
		var pe *os.PathError
		if errors.As(err, &pe) {
			err = pe.Err
		}
		return name, nil, func() {}, err
	}
	return name, f, func() { f.Close() }, nil
}
