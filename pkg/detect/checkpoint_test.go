package detect

import (
	"encoding/json"
	"strings"
	"testing"
	"time"
)

func TestCheckpointAlert(t *testing.T) {
	now := time.Date(2026, 1, 15, 14, 30, 0, 0, time.UTC)
	for _, c := range []struct {
		d       CheckpointDetails
		typ     string
		message string
	}{
		{CheckpointDetails{Kind: HeadShrank, PinnedSize: 10, CurrentSize: 7}, HeadRegressed, "Audit log shrank: it is at size 7, but a checkpoint of size 10"},
		{CheckpointDetails{Kind: CheckpointUnverified, Reason: "checkpoint not signed by a known key"}, CheckpointInconsistent, "Audit log checkpoint not trusted: checkpoint not signed"},
		{CheckpointDetails{Kind: CheckpointForked, PinnedSize: 10, CurrentSize: 10, PinnedRoot: "A=", CurrentRoot: "B="}, CheckpointInconsistent, "Audit log forked: the checkpoint of size 10 has root B="},
		{CheckpointDetails{Kind: CheckpointNotExtension, PinnedSize: 10, CurrentSize: 12, Reason: "proof does not verify"}, CheckpointInconsistent, "Audit log rewritten: the checkpoint of size 12 does not extend"},
		{CheckpointDetails{Kind: CheckpointRewritten, PinnedSize: 10, Reason: "x"}, CheckpointInconsistent, "Audit log rewritten: its first 10 events"},
		{CheckpointDetails{Kind: CheckpointOtherLog, Origin: "a", CurrentOrigin: "b"}, CheckpointInconsistent, `Audit log checkpoint of another log: origin "b"`},
	} {
		a := CheckpointAlert(c.d, now)
		var d CheckpointDetails
		if err := json.Unmarshal(a.Details, &d); err != nil {
			t.Fatal(err)
		}
		if a.Type != c.typ || a.Severity != Critical || !strings.HasPrefix(a.Message, c.message) || d.PinnedBy != PinnedByCheckpoint || d.Kind != c.d.Kind || !a.Timestamp.Equal(now) {
			t.Errorf("%s: %+v %+v", c.d.Kind, a, d)
		}
	}
}

func TestCheckpointWatchOnce(t *testing.T) {
	var w CheckpointWatch
	d := CheckpointDetails{Kind: CheckpointForked, Origin: "o", PinnedSize: 10, PinnedRoot: "A=", CurrentSize: 10, CurrentRoot: "B="}
	if _, ok := w.Observe(d, time.Time{}); !ok {
		t.Fatal("first observation: no alert")
	}
	if _, ok := w.Observe(d, time.Time{}); ok {
		t.Error("second observation alerted again")
	}
	d.CurrentRoot = "C="
	if _, ok := w.Observe(d, time.Time{}); !ok {
		t.Error("another fork: no alert")
	}
}
