package detect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
)

func TestEventWatchConfigValidate(t *testing.T) {
	good := EventWatchConfig{Hours: DefaultHours(time.UTC)}
	if err := good.Validate(); err != nil {
		t.Fatal(err)
	}
	for _, c := range []EventWatchConfig{
		{MaxEventsPerMinute: -1, Hours: good.Hours},
		{ClockSkew: -time.Second, Hours: good.Hours},
		{ApprovalMemory: -1, Hours: good.Hours},
		{Hours: Hours{Start: 5, End: 5}},
	} {
		if err := c.Validate(); err == nil {
			t.Errorf("%+v: valid", c)
		}
		if _, err := NewEventWatch(c, 0); err == nil {
			t.Errorf("%+v: NewEventWatch accepted it", c)
		}
	}
}

// watchApprovalEvent is auditd's record of approval id reaching st.
func watchApprovalEvent(seq int64, id string, st approval.Status, at time.Time) audit.Event {
	ev := watchEvent("agent-7", seq, at)
	ev.EventType, ev.ApprovalID, ev.ActionClass = audit.TypeApprovalDecided, id, audit.ActionDestructive
	if st == approval.Pending {
		ev.EventType = audit.TypeApprovalRequested
	}
	ev.Outcome = &audit.Outcome{Status: string(st)}
	return ev
}

func watchDestructive(seq int64, approvalID string, at time.Time) audit.Event {
	ev := watchEvent("agent-7", seq, at)
	ev.ActionClass, ev.ApprovalID = audit.ActionDestructive, approvalID
	ev.Resource = &audit.Resource{Type: "kubernetes", Name: "web"}
	return ev
}

// The stream of a day: each detection fires where it should, and only there.
func TestEventWatch(t *testing.T) {
	day := time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)
	lookups := map[string]approval.Status{"ap-auditd": approval.Approved, "ap-auditd-denied": approval.Denied}
	var asked []string
	lookup := func(ev audit.Event) approval.Status {
		asked = append(asked, ev.ApprovalID)
		return lookups[ev.ApprovalID]
	}
	w, err := NewEventWatch(EventWatchConfig{MaxEventsPerMinute: 3, Hours: DefaultHours(time.UTC)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := []audit.Event{
		watchEvent("a", 1, day),
		watchApprovalEvent(2, "ap-1", approval.Pending, day),
		watchDestructive(3, "ap-1", day), // pending: alert
		watchApprovalEvent(4, "ap-1", approval.Approved, day),
		watchDestructive(5, "ap-1", day),             // approved: none; agent-7's 4th event in the minute
		watchDestructive(6, "", day),                 // no approval: alert
		watchDestructive(7, "ap-auditd", day),        // auditd says approved: none
		watchDestructive(8, "ap-auditd", day),        // remembered: not asked again
		watchDestructive(9, "ap-auditd-denied", day), // alert
		watchDestructive(10, "ap-missing", day),      // unknown: alert
		watchEvent("a", 12, day.Add(time.Second)),    // seq 11 missing
		watchEvent("a", 13, day.Add(23*time.Hour)),   // 13:00 the next day: allowed
		watchEvent("b", 14, day.Add(9*time.Hour)),    // 23:00 the first day: off hours, and backwards
	}
	var got []string
	for _, ev := range evs {
		for _, a := range w.Observe(ev, false, lookup, day.Add(24*time.Hour)) {
			got = append(got, fmt.Sprintf("%d %s", a.Seq, a.Type))
		}
	}
	want := []string{
		"3 unauthorized_destructive",
		"5 high_volume",
		"6 unauthorized_destructive",
		"9 unauthorized_destructive",
		"10 unauthorized_destructive",
		"12 seq_gap",
		"14 timestamp_gap",
		"14 off_hours",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("alerts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(asked, ",") != "ap-auditd,ap-auditd-denied,ap-missing" {
		t.Errorf("asked auditd about %v", asked)
	}
}

// Without a lookup, an approval not seen on the stream is unknown.
func TestEventWatchNoLookup(t *testing.T) {
	w, _ := NewEventWatch(EventWatchConfig{Hours: Hours{Start: 0, End: 24}}, -1)
	alerts := w.Observe(watchDestructive(1, "ap-x", watchT0), true, nil, watchT0)
	if len(alerts) != 1 || alerts[0].Type != UnauthorizedDestructive || !strings.Contains(alerts[0].Message, "approval ap-x is unknown") {
		b, _ := json.Marshal(alerts)
		t.Fatalf("%s", b)
	}
}
