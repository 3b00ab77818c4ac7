// Package receiptkey keeps the secret that signs a session's tool receipts
// in a file only its owner can read: created once with 32 random bytes,
// mode 0600 in a 0700 directory, and refused when anyone else could read
// or change it (seed 002 "Tool Receipts (Non-Forgeable)": the server
// secret lives in a key file, never in a receipt, a log or any output).
//
// No error here ever holds the key's bytes: they only name the file and
// what to run to fix it.
package receiptkey

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/pkg/statedir"
)

// Size is the key's length in bytes: HMAC-SHA256's block of strength.
const Size = 32

// ErrUnsafe is wrapped by the errors for a key file, or its directory,
// that someone other than its owner may read or change.
var ErrUnsafe = errors.New("unsafe permissions")

// DefaultPath is $XDG_STATE_HOME/govkit/receipt.key, or
// ~/.local/state/govkit/receipt.key when XDG_STATE_HOME is unset or not
// absolute (the XDG base directory rule). Never a shared temporary
// directory: there is no safe fallback for a secret.
func DefaultPath() (string, error) {
	d, err := statedir.Dir()
	if err != nil {
		return "", errors.New("no home directory for the receipt key: set XDG_STATE_HOME or pass the key file's path")
	}
	return filepath.Join(d, "receipt.key"), nil
}

// Load reads the key at path. It refuses a file that is not a regular
// file, that group or others may read or write, that another user owns, or
// that does not hold exactly Size bytes; each error says what to run.
func Load(path string) ([]byte, error) {
	// Stat before opening: opening a FIFO for reading would block.
	fi, err := os.Stat(path)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("no receipt key at %s: it is created by the first session that signs a receipt", path)
		}
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if err := check(path, fi); err != nil {
		return nil, err
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	defer f.Close()
	// Check again what was opened: the path may have changed in between.
	if fi, err = f.Stat(); err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if err := check(path, fi); err != nil {
		return nil, err
	}
	key := make([]byte, Size+1)
	n, err := io.ReadFull(f, key)
	if err != nil && !errors.Is(err, io.ErrUnexpectedEOF) && !errors.Is(err, io.EOF) {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if n != Size {
		clear(key)
		size := fmt.Sprint(n)
		if n > Size {
			size = "more than " + fmt.Sprint(Size)
		}
		return nil, fmt.Errorf("receipt key %s holds %s bytes, want %d: it is not a receipt key (receipts signed with it cannot be checked without it; move it aside to have a new one made)", path, size, Size)
	}
	return key[:Size], nil
}

// LoadOrCreate loads the key at path, first creating it — Size bytes from
// crypto/rand, mode 0600, its directory 0700 when missing — if there is
// none. The file appears whole or not at all: it is written under another
// name and linked into place, which fails if a key appeared meanwhile (the
// O_EXCL of a rename), and then that key is loaded.
func LoadOrCreate(path string) ([]byte, error) {
	if _, err := os.Lstat(path); err == nil || !errors.Is(err, fs.ErrNotExist) {
		return Load(path)
	}
	dir := filepath.Dir(path)
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("receipt key directory: %w", err)
	}
	if err := checkDir(dir); err != nil {
		return nil, err
	}
	key := make([]byte, Size)
	if _, err := rand.Read(key); err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	tmp, err := os.CreateTemp(dir, ".receipt.key.*") // O_EXCL, 0600
	if err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	defer os.Remove(tmp.Name())
	if err := writeKey(tmp, key); err != nil {
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	if err := os.Link(tmp.Name(), path); err != nil {
		if errors.Is(err, fs.ErrExist) {
			clear(key)
			return Load(path) // another process made it first: use that one
		}
		return nil, fmt.Errorf("receipt key: %w", err)
	}
	syncDir(dir)
	return key, nil
}

func writeKey(f *os.File, key []byte) error {
	if err := f.Chmod(0o600); err != nil {
		f.Close()
		return err
	}
	if _, err := f.Write(key); err != nil {
		f.Close()
		return err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func check(path string, fi fs.FileInfo) error {
	if !fi.Mode().IsRegular() {
		return fmt.Errorf("receipt key %s is not a regular file", path)
	}
	if m := fi.Mode().Perm(); m&0o077 != 0 && permsMatter {
		return unsafef("receipt key %s is readable or writable by group or others (mode %04o); run: chmod 600 %s",
			path, m, shellQuote(path))
	}
	if uid, mine := owner(fi); !mine {
		return unsafef("receipt key %s belongs to uid %d, not you; use your own key, or as root run: chown %d %s",
			path, uid, os.Getuid(), shellQuote(path))
	}
	return nil
}

// checkDir refuses a key directory that group or others may write: they
// could swap the key file for their own.
func checkDir(dir string) error {
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("receipt key directory: %w", err)
	}
	if m := fi.Mode().Perm(); m&0o022 != 0 && permsMatter {
		return unsafef("receipt key directory %s is writable by group or others (mode %04o); run: chmod 700 %s",
			dir, m, shellQuote(dir))
	}
	return nil
}

// unsafeError is an ErrUnsafe whose message says what to run instead of
// repeating ErrUnsafe's words.
type unsafeError struct{ msg string }

func (e *unsafeError) Error() string        { return e.msg }
func (e *unsafeError) Is(target error) bool { return target == ErrUnsafe }

func unsafef(format string, args ...any) error {
	return &unsafeError{fmt.Sprintf(format, args...)}
}

// shellQuote quotes s for a POSIX shell when it needs it, so the command an
// error suggests can be pasted as it is.
func shellQuote(s string) string {
	if s != "" && strings.Trim(s, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789/._-+:@,%=") == "" {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
