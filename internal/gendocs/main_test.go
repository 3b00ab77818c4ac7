package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestGenerate(t *testing.T) {
	t.Setenv("SOURCE_DATE_EPOCH", "1767225600") // 2026-01-01
	dir := t.TempDir()
	stale := filepath.Join(dir, "gone.1")
	if err := os.WriteFile(stale, []byte("old"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(stale); !os.IsNotExist(err) {
		t.Error("a stale page survived regeneration")
	}
	page, err := os.ReadFile(filepath.Join(dir, "classify.1"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.TH "CLASSIFY" "1" "Jan 2026" "govkit" "govkit manual"`,
		"classify - Decide whether a shell command is read-only",
		"\\fB--cwd\\fP",
		"every command is read-only and bounded",
		"classify-completion(1)",
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("classify.1 lacks %q", want)
		}
	}
	if strings.Contains(string(page), "Auto generated") {
		t.Error("classify.1 carries cobra's auto-generated tag")
	}
	if _, err := os.Stat(filepath.Join(dir, "classify-completion-bash.1")); err != nil {
		t.Errorf("no page for the completion command: %v", err)
	}

	// Regenerating gives the same bytes.
	if err := generate(dir); err != nil {
		t.Fatal(err)
	}
	again, _ := os.ReadFile(filepath.Join(dir, "classify.1"))
	if string(again) != string(page) {
		t.Error("regenerating changed classify.1")
	}
}
