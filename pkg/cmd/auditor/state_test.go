package auditor

import (
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/monitor"
)

var (
	hashA = strings.Repeat("a", 64)
	hashB = strings.Repeat("0b", 32)
)

func TestWriteState(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "state.json")
	st := monitor.State{SchemaVersion: 1, Cursor: &monitor.Cursor{Seq: 4, EventHash: hashA},
		Pin: &monitor.PinState{Pin: detect.Pin{Size: 3, Head: hashB}, VerifiedAt: time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC)}}
	for range 3 {
		if err := stateFile(path).Save(st); err != nil {
			t.Fatal(err)
		}
	}
	fi, err := os.Stat(path)
	if err != nil || fi.Mode().Perm() != 0o600 {
		t.Fatalf("mode %v, %v", fi.Mode(), err)
	}
	entries, _ := os.ReadDir(dir)
	if len(entries) != 1 {
		t.Fatalf("temporary files left: %v", entries)
	}
	got, exists, err := readState(path)
	if err != nil || !exists || !reflect.DeepEqual(got, st) {
		t.Fatalf("read back %+v, %v, %v", got, exists, err)
	}
	if _, exists, err := readState(filepath.Join(dir, "none.json")); exists || err != nil {
		t.Fatalf("missing file: %v %v", exists, err)
	}
	if _, _, err := readState(dir); err == nil || !strings.Contains(err.Error(), "not a regular file") {
		t.Fatalf("directory: %v", err)
	}
	if err := stateFile(filepath.Join(dir, "no", "such", "dir.json")).Save(st); err == nil {
		t.Fatal("wrote into a missing directory")
	}
}

// A corrupt or unwritable state file is an error naming it: exit 3 before
// anything is watched.
func TestStateFileErrors(t *testing.T) {
	isolate(t)
	d := startAuditd(t, nil)
	dir := t.TempDir()
	corrupt := filepath.Join(dir, "corrupt.json")
	os.WriteFile(corrupt, []byte(`{"schema_version":1,"cursor":{"seq":"x"}}`), 0o600)
	big := filepath.Join(dir, "big.json")
	os.WriteFile(big, []byte(strings.Repeat(" ", maxStateFile+1)), 0o600)
	tests := []struct {
		args []string
		want string
	}{
		{[]string{"--once", "--state", corrupt}, "auditor: error: state file " + corrupt + ": it is not a state file: "},
		{[]string{"--socket", d.Socket, "--state", corrupt}, "auditor: error: state file " + corrupt + ": it is not a state file"},
		{[]string{"--once", "--state", big}, "it is larger than 1048576 bytes"},
		{[]string{"--once", "--state", dir}, "it is not a regular file"},
		{[]string{"--once", "--state", filepath.Join(dir, "missing", "s.json")}, "auditor: error: creating the state file " + filepath.Join(dir, "missing", "s.json") + ": no such file or directory"},
	}
	for _, tt := range tests {
		r := auditor(t, nil, append(tt.args, "--audit-url", d.URL)...)
		r.want(3)
		if !strings.Contains(r.stderr.String(), tt.want) || !strings.Contains(r.stderr.String(), "auditor: hint: ") {
			t.Errorf("%q: stderr %q; want %q", tt.args, r.stderr.String(), tt.want)
		}
		if r.stdout.String() != "" {
			t.Errorf("%q: stdout %q", tt.args, r.stdout.String())
		}
	}
	if data, _ := os.ReadFile(corrupt); string(data) != `{"schema_version":1,"cursor":{"seq":"x"}}` {
		t.Errorf("the corrupt file was rewritten: %s", data)
	}
}
