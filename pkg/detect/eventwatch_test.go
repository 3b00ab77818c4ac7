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

// watchCmd is the destructive command agent-7 runs in the watch tests.
const watchCmd = "kubectl delete deployment web"

var watchRes = audit.Resource{Type: "kubernetes", Name: "web"}

// watchApprovalEvent is auditd's record of r's latest change: the whole
// request in its data, as auditd appends it.
func watchApprovalEvent(t *testing.T, seq int64, r approval.Request, at time.Time) audit.Event {
	t.Helper()
	ev, err := approval.Event(&r, "agent-7")
	if err != nil {
		t.Fatal(err)
	}
	ev.SchemaVersion, ev.Seq, ev.EventID, ev.Timestamp = 1, seq, fmt.Sprintf("evt-%d", seq), at
	return ev
}

// watchDestructive is agent-7 running watchCmd, citing approvalID.
func watchDestructive(seq int64, approvalID string, at time.Time) audit.Event {
	ev := destructiveRun(fmt.Sprintf("evt-%d", seq), "agent-7", "agent-7", watchRes, watchCmd, approvalID, at)
	ev.Seq = seq
	return ev
}

// watchApproval is approval id for watchCmd by agent-7, taken to st
// (consumed at at).
func watchApproval(t *testing.T, id string, st approval.Status, at time.Time) approval.Request {
	return approvalAt(t, id, "agent-7", watchRes, watchCmd, st, at.Add(-time.Minute), at)
}

// The stream of a day: each detection fires where it should, and only there.
func TestEventWatch(t *testing.T) {
	day := time.Date(2026, 1, 15, 14, 0, 0, 0, time.UTC)
	lookups := map[string]approval.Request{
		"ap-auditd":        watchApproval(t, "ap-auditd", approval.Consumed, day),
		"ap-auditd-denied": watchApproval(t, "ap-auditd-denied", approval.Denied, day),
		"ap-auditd-orders": approvalAt(t, "ap-auditd-orders", "agent-7", audit.Resource{Type: "database", Name: "orders"},
			"psql -c 'DROP TABLE orders'", approval.Consumed, day.Add(-time.Minute), day),
		"ap-auditd-spent": watchApproval(t, "ap-auditd-spent", approval.Consumed, day),
	}
	// What auditd's events say cited each approval, before the stream
	// this watch replays: ap-auditd-spent was used already.
	cited := map[string][]audit.Event{
		"ap-auditd-spent": {watchEvent("a", -1, day), watchDestructive(0, "ap-auditd-spent", day)},
	}
	cited["ap-auditd-spent"][0].ApprovalID = "ap-auditd-spent"
	var asked []string
	lookup := func(ev audit.Event) (approval.Request, []audit.Event, bool) {
		asked = append(asked, ev.ApprovalID)
		r, ok := lookups[ev.ApprovalID]
		var earlier []audit.Event
		for _, c := range cited[ev.ApprovalID] {
			if c.Seq < ev.Seq {
				earlier = append(earlier, c)
			}
		}
		return r, earlier, ok
	}
	w, err := NewEventWatch(EventWatchConfig{MaxEventsPerMinute: 3, Hours: DefaultHours(time.UTC)}, 0)
	if err != nil {
		t.Fatal(err)
	}
	evs := []audit.Event{
		watchEvent("a", 1, day),
		watchApprovalEvent(t, 2, watchApproval(t, "ap-1", approval.Pending, day), day),
		watchDestructive(3, "ap-1", day), // pending: alert
		watchApprovalEvent(t, 4, watchApproval(t, "ap-1", approval.Approved, day), day),
		watchDestructive(5, "ap-1", day), // approved, not consumed: alert; agent-7's 4th event in the minute
		watchApprovalEvent(t, 6, watchApproval(t, "ap-1", approval.Consumed, day), day),
		watchDestructive(7, "ap-1", day),              // consumed for it: none
		watchDestructive(8, "ap-1", day),              // second use: alert
		watchDestructive(9, "", day),                  // no approval: alert
		watchDestructive(10, "ap-auditd", day),        // auditd says consumed for it: none
		watchDestructive(11, "ap-auditd", day),        // remembered, not asked again; second use: alert
		watchDestructive(12, "ap-auditd-denied", day), // alert
		watchDestructive(13, "ap-auditd-orders", day), // consumed for another action: alert
		watchDestructive(14, "ap-auditd-spent", day),  // auditd's events show seq 0 used it: alert
		watchDestructive(15, "ap-missing", day),       // unknown: alert
		watchEvent("a", 17, day.Add(time.Second)),     // seq 16 missing
		watchEvent("a", 18, day.Add(23*time.Hour)),    // 13:00 the next day: allowed
		watchEvent("b", 19, day.Add(9*time.Hour)),     // 23:00 the first day: off hours, and backwards
	}
	var got []string
	for _, ev := range evs {
		for _, a := range w.Observe(ev, false, lookup, day.Add(24*time.Hour)) {
			got = append(got, fmt.Sprintf("%d %s", a.Seq, a.Type))
		}
	}
	want := []string{
		"3 unauthorized_destructive",
		"5 unauthorized_destructive",
		"5 high_volume",
		"8 unauthorized_destructive",
		"9 unauthorized_destructive",
		"11 unauthorized_destructive",
		"12 unauthorized_destructive",
		"13 unauthorized_destructive",
		"14 unauthorized_destructive",
		"15 unauthorized_destructive",
		"17 seq_gap",
		"19 timestamp_gap",
		"19 off_hours",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("alerts\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if strings.Join(asked, ",") != "ap-auditd,ap-auditd-denied,ap-auditd-orders,ap-auditd-spent,ap-missing" {
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
