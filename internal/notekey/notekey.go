// Package notekey reads the verifier keys a command is given on its command line: the key itself, or a file holding it (issue 19).
package notekey

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// maxFile bounds a key file read; a verifier key is under 100 bytes.
const maxFile = 64 << 10

// Load returns the verifier keys arg names: arg itself when it is one
// ("NAME+HASH+KEY", as auditd key create prints it), else the keys in
// the file arg, one per line (blank lines and lines starting with # are
// skipped). A file holding a signer key is refused without quoting it:
// the private key belongs to the signer alone.
func Load(arg string) ([]string, error) {
	arg = strings.TrimSpace(arg)
	if _, err := note.NewVerifier(arg); err == nil {
		return []string{arg}, nil
	}
	if strings.HasPrefix(arg, "PRIVATE+KEY+") {
		return nil, errors.New("is a private signing key, not a verifier key (auditd key create prints the verifier key)")
	}
	f, err := os.Open(arg)
	if err != nil {
		var pe *fs.PathError
		switch {
		case strings.Contains(arg, "+") && !strings.Contains(arg, "/"):
			return nil, errors.New("is neither a verifier key (NAME+HASH+KEY) nor a file")
		case errors.As(err, &pe):
			return nil, fmt.Errorf("%s: %v", arg, pe.Err)
		}
		return nil, err
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxFile+1))
	if err != nil {
		return nil, err
	}
	if len(data) > maxFile {
		return nil, fmt.Errorf("%s is larger than %d bytes", arg, maxFile)
	}
	return parseFile(arg, data)
}

// LoadAll returns the verifier keys of every arg (Load), in order: a
// flag given once per key or key file. Its error is the first arg's, as
// Load words it.
func LoadAll(args []string) ([]string, error) {
	var keys []string
	for _, arg := range args {
		ks, err := Load(arg)
		if err != nil {
			return nil, err
		}
		keys = append(keys, ks...)
	}
	return keys, nil
}

// parseFile reads the verifier keys of a key file's content; name is the
// file's, for errors, which never quote a line.
func parseFile(arg string, data []byte) ([]string, error) {
	var keys []string
	for i, line := range strings.Split(string(data), "\n") {
		line = strings.TrimSpace(line)
		switch {
		case line == "" || strings.HasPrefix(line, "#"):
			continue
		case strings.HasPrefix(line, "PRIVATE+KEY+"):
			return nil, fmt.Errorf("%s line %d is a private signing key, not a verifier key (auditd key create prints the verifier key)", arg, i+1)
		}
		if _, err := note.NewVerifier(line); err != nil {
			return nil, fmt.Errorf("%s line %d is not a verifier key (NAME+HASH+KEY)", arg, i+1)
		}
		keys = append(keys, line)
	}
	if len(keys) == 0 {
		return nil, fmt.Errorf("%s holds no verifier key", arg)
	}
	return keys, nil
}
