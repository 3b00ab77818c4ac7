package detect

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// FuzzEventWatch drives the auditor's detections with arbitrary streams
// (agents, time steps forward and back, seq jumps, destructive actions)
// and checks what must hold whatever the input: no panic; high_volume only
// above the threshold and at most once per agent per minute of event time;
// off_hours only outside the allowed hours and once per agent per period;
// seq_gap exactly where the seq is not the previous plus one.
func FuzzEventWatch(f *testing.F) {
	f.Add([]byte{0, 1, 0, 1, 2, 1, 0, 9, 3, 200, 1, 0})
	f.Add([]byte("a burst of events from one agent, then another, at night"))
	f.Fuzz(func(t *testing.T, data []byte) {
		paris := time.FixedZone("X", 3600)
		w, err := NewEventWatch(EventWatchConfig{MaxEventsPerMinute: 3, Hours: Hours{Start: 6, End: 22, Loc: paris}, ClockSkew: time.Minute}, 0)
		if err != nil {
			t.Fatal(err)
		}
		at := watchT0
		seq := int64(0)
		lastVolume := map[string]time.Time{}
		offSeen := map[string]bool{}
		for i := 0; i+2 < len(data); i += 3 {
			op, arg, step := data[i], data[i+1], data[i+2]
			agent := fmt.Sprintf("agent-%d", op%4)
			// Time moves by up to ~4 minutes forward, sometimes back.
			d := time.Duration(step) * time.Second
			if op&0x40 != 0 {
				d = -d
			}
			at = at.Add(d)
			prevSeq := seq
			seq++
			if op&0x80 != 0 {
				seq += int64(arg % 5)
			}
			ev := watchEvent(agent, seq, at)
			if op&0x20 != 0 {
				ev.ActionClass = audit.ActionDestructive
				ev.ApprovalID = fmt.Sprintf("ap-%d", arg%3)
			}
			alerts := w.Observe(ev, op&0x10 != 0, nil, at.Add(time.Duration(arg)*time.Second))
			gaps := 0
			for _, a := range alerts {
				switch a.Type {
				case HighVolume:
					if a.Count <= a.Threshold || a.Agent != agent {
						t.Fatalf("high_volume %+v", a)
					}
					if last, ok := lastVolume[agent]; ok && at.Sub(last) < VolumeWindow && !at.Before(last) {
						t.Fatalf("two high_volume alerts for %s within a minute: %s, %s", agent, last, at)
					}
					lastVolume[agent] = at
				case OffHours:
					var det OffHoursDetails
					if err := json.Unmarshal(a.Details, &det); err != nil {
						t.Fatal(err)
					}
					if (Hours{Start: 6, End: 22, Loc: paris}).Allowed(at) {
						t.Fatalf("off_hours at an allowed time %s", at.In(paris))
					}
					key := agent + " " + det.Period
					if offSeen[key] {
						t.Fatalf("off_hours twice for %s", key)
					}
					offSeen[key] = true
				case SeqGap:
					gaps++
				case UnauthorizedDestructive, TimestampGap:
				default:
					t.Fatalf("unexpected alert %+v", a)
				}
				if a.Seq != seq || a.SchemaVersion != 1 || a.Message == "" {
					t.Fatalf("alert %+v for seq %d", a, seq)
				}
			}
			if want := seq != prevSeq+1; (gaps == 1) != want || gaps > 1 {
				t.Fatalf("seq %d after %d: %d seq_gap alerts", seq, prevSeq, gaps)
			}
		}
	})
}
