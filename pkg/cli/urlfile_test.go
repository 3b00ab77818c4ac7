package cli

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestWriteURLFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "url")
	remove, err := WriteURLFile("--url-file", path, "http://127.0.0.1:40049")
	if err != nil {
		t.Fatal(err)
	}
	if b, err := os.ReadFile(path); err != nil || string(b) != "http://127.0.0.1:40049\n" {
		t.Fatalf("file holds %q, %v", b, err)
	}
	remove()
	if _, err := os.Stat(path); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("after remove: %v", err)
	}

	_, err = WriteURLFile("--metrics-url-file", filepath.Join(t.TempDir(), "no", "url"), "http://x")
	var e *ExitError
	if !errors.As(err, &e) || e.Code != ExitFailure || !strings.HasPrefix(e.Error(), "--metrics-url-file: ") || e.Hint == "" {
		t.Fatalf("missing directory: %#v", err)
	}
}
