package approval

import (
	"encoding/json"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// replayLog is a small chain with its approvals table, built by hand (not
// through New and Decide) so that it holds whatever a test needs:
//
//	seq 1  approval_requested  apr_a (quorum 1)
//	seq 2  approval_decided    apr_a approved by bob
//	seq 3  approval_requested  apr_b (quorum 2)
//	seq 4  tool_execution
//	seq 5  approval_voted      apr_b, bob's approval (1 of 2)
//
// and rows apr_a at seq 2, apr_b at seq 5.
type replayLog struct {
	recs []audit.Record
	rows []TableRow
}

func request(id string, quorum int) Request {
	res := audit.Resource{Type: "database", Name: "prod-db"}
	return Request{
		SchemaVersion: SchemaVersion, ID: id, CreatedAt: t0, ExpiresAt: t0.Add(DefaultTTL), Status: Pending,
		RequestedBy: "alice", Resource: res, Action: "write", Tool: "psql", RawCommand: "DELETE FROM sessions",
		Quorum: quorum, ActionHash: ActionHash(res, "write", "psql", "DELETE FROM sessions"), Votes: []Vote{},
	}
}

// record appends r's state as an approval event of type typ at the next
// seq.
func (l *replayLog) record(t testing.TB, typ string, r Request) int64 {
	t.Helper()
	data, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	return l.event(t, audit.Event{EventType: typ, ApprovalID: r.ID, Data: data})
}

func (l *replayLog) event(t testing.TB, ev audit.Event) int64 {
	t.Helper()
	seq := int64(len(l.recs) + 1)
	ev.SchemaVersion, ev.Seq, ev.EventID, ev.Timestamp = audit.SchemaVersion, seq, fmt.Sprintf("evt_%d", seq), t0
	body, err := json.Marshal(ev)
	if err != nil {
		t.Fatal(err)
	}
	l.recs = append(l.recs, audit.Record{Seq: seq, EventID: ev.EventID, EventType: ev.EventType, Body: body})
	return seq
}

// put sets r's row as the store does.
func (l *replayLog) put(t testing.TB, r Request, seq int64) {
	t.Helper()
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	row := TableRow{ID: r.ID, Status: string(r.Status), RequestedBy: r.RequestedBy,
		CreatedAt: r.CreatedAt.Format("2006-01-02T15:04:05.000000000Z07:00"), ExpiresAt: r.ExpiresAt.Format("2006-01-02T15:04:05.000000000Z07:00"),
		Seq: seq, Request: body}
	if i := slices.IndexFunc(l.rows, func(x TableRow) bool { return x.ID == r.ID }); i >= 0 {
		l.rows[i] = row
		return
	}
	l.rows = append(l.rows, row)
}

func newReplayLog(t testing.TB) (*replayLog, Request, Request) {
	l := &replayLog{}
	a := request("apr_a", 1)
	l.record(t, audit.TypeApprovalRequested, a)
	decided := t0.Add(time.Minute)
	a.Votes = append(a.Votes, Vote{By: "bob", Decision: Approve, At: decided})
	a.Status, a.DecidedAt = Approved, &decided
	l.put(t, a, l.record(t, audit.TypeApprovalDecided, a))

	b := request("apr_b", 2)
	l.record(t, audit.TypeApprovalRequested, b)
	l.event(t, audit.Event{EventType: audit.TypeToolExecution, Agent: "sre-bot"})
	b.Votes = append(b.Votes, Vote{By: "bob", Decision: Approve, At: decided})
	l.put(t, b, l.record(t, audit.TypeApprovalVoted, b))
	return l, a, b
}

func (l *replayLog) check(t testing.TB, origin int64, settled bool) []Mismatch {
	t.Helper()
	p := NewReplay(origin)
	for _, rec := range l.recs {
		if err := p.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	return p.Check(l.rows, settled)
}

// editRow changes the JSON of id's row with edit, leaving its columns.
func (l *replayLog) editRow(t testing.TB, id string, edit func(r *Request)) {
	t.Helper()
	i := slices.IndexFunc(l.rows, func(x TableRow) bool { return x.ID == id })
	var r Request
	if err := json.Unmarshal(l.rows[i].Request, &r); err != nil {
		t.Fatal(err)
	}
	edit(&r)
	body, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	l.rows[i].Request = body
}

func (l *replayLog) row(id string) *TableRow {
	return &l.rows[slices.IndexFunc(l.rows, func(x TableRow) bool { return x.ID == id })]
}

func TestReplayCheck(t *testing.T) {
	type want struct {
		id, kind string
		seq      int64
		fields   []string
		detail   string // a substring
	}
	for _, tc := range []struct {
		name    string
		edit    func(t *testing.T, l *replayLog, a, b Request)
		settled bool
		origin  int64
		want    []want
	}{
		{name: "intact"},
		{name: "intact, settled", settled: true},
		{
			name: "status edited, JSON and column",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_b", func(r *Request) { r.Status = Approved })
				l.row("apr_b").Status = "approved"
			},
			want: []want{{"apr_b", MismatchDiffers, 5, []string{"status", "column.status"},
				`status, column.status differ from the chain at seq 5 (approval_voted): status "approved" in the table, "pending" in the chain; status column "approved" in the table, "pending" in the chain`}},
		},
		{
			name: "status column alone",
			edit: func(t *testing.T, l *replayLog, a, b Request) { l.row("apr_b").Status = "approved" },
			want: []want{{"apr_b", MismatchDiffers, 5, []string{"column.status"}, "column.status differs from the chain at seq 5"}},
		},
		{
			name: "made-up voter added",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_b", func(r *Request) {
					r.Votes = append(r.Votes, Vote{By: "mallory", Decision: Approve, At: t0.Add(2 * time.Minute)})
				})
			},
			want: []want{{"apr_b", MismatchDiffers, 5, []string{"votes"},
				`votes [bob:approve, mallory:approve] in the table, [bob:approve] in the chain`}},
		},
		{
			name: "a vote's author changed",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_a", func(r *Request) { r.Votes[0].By = "carol" })
			},
			want: []want{{"apr_a", MismatchDiffers, 2, []string{"votes"}, `votes[0].by "carol" in the table, "bob" in the chain`}},
		},
		{
			name: "quorum lowered",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_b", func(r *Request) { r.Quorum = 1 })
			},
			want: []want{{"apr_b", MismatchDiffers, 5, []string{"quorum"}, "quorum 1 in the table, 2 in the chain"}},
		},
		{
			name: "action_hash changed",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_a", func(r *Request) { r.ActionHash = ActionHash(r.Resource, "write", "psql", "DROP TABLE users") })
			},
			want: []want{{"apr_a", MismatchDiffers, 2, []string{"action_hash"}, "action_hash differs from the chain at seq 2 (approval_decided)"}},
		},
		{
			name: "raw_command and resource changed",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_a", func(r *Request) { r.RawCommand, r.Resource.Name = "DROP TABLE users", "users-db" })
			},
			want: []want{{"apr_a", MismatchDiffers, 2, []string{"resource", "raw_command"}, `resource.name "users-db" in the table, "prod-db" in the chain`}},
		},
		{
			name: "expires_at moved, JSON and column",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_b", func(r *Request) { r.ExpiresAt = r.ExpiresAt.Add(24 * time.Hour) })
				l.row("apr_b").ExpiresAt = t0.Add(DefaultTTL + 24*time.Hour).Format(time.RFC3339)
			},
			want: []want{{"apr_b", MismatchDiffers, 5, []string{"expires_at", "column.expires_at"}, `expires_at "2026-11-22T10:05:00Z" in the table, "2026-11-21T10:05:00Z" in the chain`}},
		},
		{
			name: "an unknown field added",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.row("apr_a").Request = []byte(strings.Replace(string(l.row("apr_a").Request), `{`, `{"consumed_by":"mallory",`, 1))
			},
			want: []want{{"apr_a", MismatchDiffers, 2, []string{"consumed_by"}, `consumed_by "mallory" in the table, none in the chain`}},
		},
		{
			name: "same instants in other offsets, votes null: equal",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.editRow(t, "apr_b", func(r *Request) {
					r.CreatedAt = r.CreatedAt.In(time.FixedZone("CEST", 2*3600))
					r.Votes[0].At = r.Votes[0].At.In(time.FixedZone("X", -5*3600))
				})
				l.row("apr_b").ExpiresAt = t0.Add(DefaultTTL).In(time.FixedZone("CEST", 2*3600)).Format(time.RFC3339)
				l.row("apr_a").Request = []byte(strings.Replace(string(l.row("apr_a").Request), `"decided_at"`, `"policy_decision":{},"decided_at"`, 1))
				l.record(t, audit.TypeApprovalRequested, request("apr_c", 1))
				c := request("apr_c", 1)
				c.Votes = nil
				l.put(t, c, 6)
			},
		},
		{
			name: "row without events",
			edit: func(t *testing.T, l *replayLog, a, b Request) { l.put(t, request("apr_forged", 1), 4) },
			want: []want{{"apr_forged", MismatchNotInChain, 4, nil, "not in the chain: no approval event records this request, yet its row claims seq 4"}},
		},
		{
			name: "row deleted",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.rows = slices.DeleteFunc(l.rows, func(r TableRow) bool { return r.ID == "apr_a" })
			},
			want: []want{{"apr_a", MismatchMissing, 2, nil, "missing from the table: the chain records this request (last at seq 2, approval_decided)"}},
		},
		{
			name: "the newest change not put yet: tolerated unless settled",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				b.Votes = append(b.Votes, Vote{By: "carol", Decision: Approve, At: t0.Add(2 * time.Minute)})
				b.Status = Approved
				l.record(t, audit.TypeApprovalDecided, b)
			},
		},
		{
			name:    "the newest change not put, settled",
			settled: true,
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				b.Status = Denied
				l.record(t, audit.TypeApprovalDecided, b)
			},
			want: []want{{"apr_b", MismatchStale, 6, []string{"status", "column.status"},
				`stale: the row is the state of seq 5, but the chain changed the request since, last at seq 6 (approval_decided): status "pending" in the table, "denied" in the chain`}},
		},
		{
			name: "a new request not put yet: tolerated",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.record(t, audit.TypeApprovalRequested, request("apr_c", 1))
			},
		},
		{
			name:    "a new request not put yet, settled",
			settled: true,
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.record(t, audit.TypeApprovalRequested, request("apr_c", 1))
			},
			want: []want{{"apr_c", MismatchMissing, 6, nil, "missing from the table"}},
		},
		{
			name: "a row rolled back behind a later change of another request",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.put(t, request("apr_a", 1), 1) // back to pending: approvable again
			},
			want: []want{{"apr_a", MismatchStale, 2, []string{"status", "votes", "decided_at", "column.status"},
				`stale: the row is the state of seq 1, but the chain changed the request since, last at seq 2 (approval_decided): status "pending" in the table, "approved" in the chain; votes none in the table, [bob:approve] in the chain;`}},
		},
		{
			name: "a row rolled back two changes, the newest not put",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				b.Status = Denied
				l.record(t, audit.TypeApprovalDecided, b)
				l.put(t, request("apr_b", 2), 3)
			},
			want: []want{{"apr_b", MismatchStale, 6, []string{"status", "votes", "column.status"}, "the row is the state of seq 3, but the chain changed the request since, last at seq 6"}},
		},
		{
			name: "two changes not put",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.record(t, audit.TypeApprovalRequested, request("apr_c", 1))
				l.record(t, audit.TypeApprovalRequested, request("apr_d", 1))
			},
			want: []want{{"apr_c", MismatchMissing, 6, nil, "missing from the table"}},
		},
		{
			name: "the row claims another request's event",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.row("apr_b").Seq = 2
				l.row("apr_a").Seq = 7
			},
			want: []want{
				{"apr_a", MismatchUnknownSeq, 2, nil, "the row claims seq 7, which is no approval event of this request; the chain's last for it is seq 2 (approval_decided)"},
				{"apr_b", MismatchUnknownSeq, 5, nil, "the row claims seq 2, which is no approval event"},
			},
		},
		{
			name: "unreadable row",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.row("apr_a").Request = []byte(`["not", "a request"]`)
			},
			want: []want{{"apr_a", MismatchUnreadable, 2, nil, "unreadable row: the request column is not a request: not a JSON object"}},
		},
		{
			name: "unreadable approval event",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				l.event(t, audit.Event{EventType: audit.TypeApprovalExpired, ApprovalID: "apr_b", Data: json.RawMessage(`{"id":"apr_b"}`)})
			},
			want: []want{{"apr_b", MismatchUnreadable, 6, nil, `unreadable approval event: event evt_6 (seq 6): approval data does not describe approval "apr_b"`}},
		},
		{
			name: "a lowered quorum carried into the chain by the next vote",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				b.Quorum, b.Status = 1, Denied
				b.Votes = append(b.Votes, Vote{By: "carol", Decision: Deny, Reason: "no", At: t0.Add(2 * time.Minute)})
				l.put(t, b, l.record(t, audit.TypeApprovalDecided, b))
			},
			want: []want{{"apr_b", MismatchHistory, 6, []string{"quorum"},
				"history: the event at seq 6 (approval_decided) changed what auditd never changes, from a state read from an edited table: quorum 2 at seq 5, 1 at seq 6"}},
		},
		{
			name: "a made-up vote carried into the chain by the next vote",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				b.Status = Approved
				b.Votes = append(b.Votes, Vote{By: "mallory", Decision: Approve, At: t0}, Vote{By: "carol", Decision: Approve, At: t0.Add(2 * time.Minute)})
				l.put(t, b, l.record(t, audit.TypeApprovalDecided, b))
			},
			want: []want{{"apr_b", MismatchHistory, 6, []string{"votes"},
				"votes [bob:approve] at seq 5, [bob:approve, mallory:approve, carol:approve] at seq 6"}},
		},
		{
			name: "a past vote rewritten, and a decided request pending again",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				a.Status, a.DecidedAt = Pending, nil
				a.Votes[0].By = "mallory"
				l.put(t, a, l.record(t, audit.TypeApprovalVoted, a))
			},
			want: []want{{"apr_a", MismatchHistory, 6, []string{"votes", "status"}, `status "approved" at seq 2, pending again at seq 6`}},
		},
		{
			name: "a request that entered the chain decided",
			edit: func(t *testing.T, l *replayLog, a, b Request) {
				c := request("apr_c", 1)
				c.Status = Approved
				c.Votes = []Vote{{By: "bob", Decision: Approve, At: t0}}
				l.put(t, c, l.record(t, audit.TypeApprovalDecided, c))
			},
			want: []want{{"apr_c", MismatchHistory, 6, nil,
				`history: the chain's first event of this request is at seq 6 (approval_decided, status "approved", 1 votes), not a new pending request`}},
		},
		{
			name:   "events before the origin are not approvals",
			origin: 2,
			want:   []want{{"apr_a", MismatchNotInChain, 2, nil, "not in the chain"}},
		},
	} {
		t.Run(tc.name, func(t *testing.T) {
			l, a, b := newReplayLog(t)
			if tc.edit != nil {
				tc.edit(t, l, a, b)
			}
			got := l.check(t, tc.origin, tc.settled)
			if len(got) != len(tc.want) {
				t.Fatalf("%d mismatches, want %d:\n%s", len(got), len(tc.want), dump(got))
			}
			for i, w := range tc.want {
				g := got[i]
				if g.ApprovalID != w.id || g.Kind != w.kind || g.Seq != w.seq || !strings.Contains(g.Detail, w.detail) ||
					(w.fields != nil && !slices.Equal(g.Fields, w.fields)) {
					t.Errorf("mismatch %d:\n%s\nwant %+v", i, dump(got[i:i+1]), w)
				}
				if g.Seq > 0 && g.Kind != MismatchNotInChain && g.EventID != fmt.Sprintf("evt_%d", g.Seq) {
					t.Errorf("mismatch %d names event %q, want that of seq %d", i, g.EventID, g.Seq)
				}
				if l := g.Link(); l.Kind != audit.KindApprovalMismatch || l.ApprovalID != g.ApprovalID || l.Detail != g.Detail || l.Seq != g.Seq {
					t.Errorf("Link() = %+v", l)
				}
			}
		})
	}
}

func dump(ms []Mismatch) string {
	var b strings.Builder
	for _, m := range ms {
		fmt.Fprintf(&b, "  %s %s seq %d %s fields %v: %s\n", m.ApprovalID, m.Kind, m.Seq, m.EventID, m.Fields, m.Detail)
	}
	return b.String()
}

// A whole log may be fed: other events are skipped, order is enforced.
func TestReplayAddOrder(t *testing.T) {
	l, _, _ := newReplayLog(t)
	p := NewReplay(0)
	for _, rec := range l.recs[:2] {
		if err := p.Add(rec); err != nil {
			t.Fatal(err)
		}
	}
	if err := p.Add(l.recs[0]); err == nil || !strings.Contains(err.Error(), "seq 1 after seq 2") {
		t.Errorf("out of order: %v", err)
	}
	// Not JSON, and not an approval event by its column: not ours to judge
	// (verification's column_mismatch is).
	if err := p.Add(audit.Record{Seq: 9, EventType: "tool_execution", Body: []byte("{")}); err != nil {
		t.Fatal(err)
	}
	if got := p.Check(nil, true); len(got) != 1 || got[0].Kind != MismatchMissing {
		t.Errorf("Check = %s", dump(got))
	}
}

// Details stay one bounded line whatever a tampered row holds.
func TestReplayDetailBounded(t *testing.T) {
	l, _, _ := newReplayLog(t)
	l.editRow(t, "apr_a", func(r *Request) {
		r.Status = "approved\x1b[2J\nok"
		r.RequestedBy = strings.Repeat("m", 5000)
		r.Reason = strings.Repeat("é", 3000)
		for i := range 50 {
			r.Votes = append(r.Votes, Vote{By: fmt.Sprintf("v%d", i), Decision: Approve})
		}
	})
	got := l.check(t, 0, false)
	if len(got) != 1 {
		t.Fatalf("%s", dump(got))
	}
	d := got[0].Detail
	if len(d) > maxDetail+len("…") || strings.ContainsAny(d, "\n\x1b") || !strings.HasSuffix(d, "…") {
		t.Errorf("detail (%d bytes): %q", len(d), d)
	}
}

// A row may hold anything an intruder writes: Check reads it without
// failing, a mismatch always names the row's approval and says why in one
// bounded line, and the row as auditd put it, re-encoded in any layout,
// agrees with the chain.
func FuzzReplayRow(f *testing.F) {
	l, _, _ := newReplayLog(f)
	orig := l.row("apr_a").Request
	f.Add(orig, "approved", int64(2))
	f.Add([]byte(`{"id":"apr_a","status":"approved","votes":null,"quorum":1.0}`), "approved", int64(2))
	f.Add([]byte(`{"votes":[{"by":"\u001b[2J","decision":1}],"resource":{"type":[]}}`), "pending", int64(1))
	f.Add([]byte(`not json`), "", int64(-1))
	f.Fuzz(func(t *testing.T, body []byte, status string, seq int64) {
		l, _, _ := newReplayLog(t)
		row := l.row("apr_a")
		row.Request, row.Status, row.Seq = body, status, seq
		ms := l.check(t, 0, false)
		for _, m := range ms {
			if m.ApprovalID == "" || m.Detail == "" || len(m.Detail) > maxDetail+len("…") || strings.ContainsAny(m.Detail, "\n\r\t") {
				t.Fatalf("mismatch %+v", m)
			}
		}
		var v any
		if status != "approved" || seq != 2 || json.Unmarshal(body, &v) != nil {
			return
		}
		var want any
		if err := json.Unmarshal(orig, &want); err != nil {
			t.Fatal(err)
		}
		if reflect.DeepEqual(v, want) && len(ms) != 0 {
			t.Fatalf("the row as put, re-encoded as %s: %s", body, dump(ms))
		}
	})
}
