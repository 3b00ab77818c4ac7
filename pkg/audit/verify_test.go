package audit

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"strings"
	"testing"
	"time"
)

func verify(recs []Record) Report {
	v := NewVerifier()
	for _, r := range recs {
		v.Add(r)
	}
	return v.Report()
}

func TestVerifierIntactChain(t *testing.T) {
	recs := sealedChain(t, 5)
	rep := verify(recs)
	want := Report{
		Verified: true, TotalEvents: 5, BrokenLinks: []BrokenLink{},
		FirstEvent: &EventRef{Seq: 1, EventID: recs[0].EventID, Timestamp: recs[0].Timestamp, EventHash: recs[0].EventHash},
		LastEvent:  &EventRef{Seq: 5, EventID: recs[4].EventID, Timestamp: recs[4].Timestamp, EventHash: recs[4].EventHash},
	}
	if !reflect.DeepEqual(rep, want) {
		t.Errorf("got  %+v\nwant %+v", rep, want)
	}
	out, _ := json.Marshal(verify(nil))
	if want := `{"verified":true,"total_events":0,"broken_links":[],"first_event":null,"last_event":null}`; string(out) != want {
		t.Errorf("empty chain: got %s, want %s", out, want)
	}
}

type link struct {
	seq  int64
	kind string
}

// tampering is one way to tamper with a 5-record chain, and the broken
// links it must produce.
type tampering struct {
	name   string
	tamper func([]Record) []Record
	want   []link
}

// tamperings are the tamperings documented on Verifier.
func tamperings() []tampering {
	rehash := func(r *Record) { r.EventHash = Hash(r.Body) }
	edit := func(r *Record, old, new string) {
		if !bytes.Contains(r.Body, []byte(old)) {
			panic("body lacks " + old)
		}
		r.Body = bytes.Replace(r.Body, []byte(old), []byte(new), 1)
	}
	return []tampering{
		{"body byte of a non-indexed field", func(r []Record) []Record {
			edit(&r[2], "UPDATE 1500", "UPDATE 1501")
			return r
		}, []link{{3, KindHashMismatch}}},
		{"body byte of an indexed field", func(r []Record) []Record {
			edit(&r[2], `"agent":"db-agent"`, `"agent":"db-agenT"`)
			return r
		}, []link{{3, KindHashMismatch}, {3, KindColumnMismatch}}},
		{"body no longer JSON", func(r []Record) []Record {
			r[2].Body = r[2].Body[:len(r[2].Body)-1]
			return r
		}, []link{{3, KindHashMismatch}, {3, KindColumnMismatch}}},
		{"body changed and rehashed", func(r []Record) []Record {
			edit(&r[2], "UPDATE 1500", "UPDATE 0")
			rehash(&r[2])
			return r
		}, []link{{4, KindPrevMismatch}}},
		{"last body changed and rehashed: undetectable", func(r []Record) []Record {
			edit(&r[4], "UPDATE 1500", "UPDATE 0")
			rehash(&r[4])
			return r
		}, nil},
		{"event_hash column changed", func(r []Record) []Record {
			r[2].EventHash = strings.Repeat("f", 64)
			return r
		}, []link{{3, KindHashMismatch}, {4, KindPrevMismatch}}},
		{"prev_hash column changed", func(r []Record) []Record {
			r[2].PrevHash = strings.Repeat("e", 64)
			return r
		}, []link{{3, KindPrevMismatch}, {3, KindColumnMismatch}}},
		{"prev_hash changed in the body only", func(r []Record) []Record {
			edit(&r[2], r[2].PrevHash, strings.Repeat("e", 64))
			return r
		}, []link{{3, KindHashMismatch}, {3, KindColumnMismatch}}},
		{"prev_hash changed in body and column, rehashed", func(r []Record) []Record {
			edit(&r[2], r[2].PrevHash, strings.Repeat("e", 64))
			r[2].PrevHash = strings.Repeat("e", 64)
			rehash(&r[2])
			return r
		}, []link{{3, KindPrevMismatch}, {4, KindPrevMismatch}}},
		{"agent column changed", func(r []Record) []Record {
			r[2].Agent = "someone-else"
			return r
		}, []link{{3, KindColumnMismatch}}},
		{"tool name column changed", func(r []Record) []Record {
			r[1].ToolName = ""
			return r
		}, []link{{2, KindColumnMismatch}}},
		{"timestamp column changed", func(r []Record) []Record {
			r[1].Timestamp = r[1].Timestamp.Add(time.Nanosecond)
			return r
		}, []link{{2, KindColumnMismatch}}},
		{"event_id column changed", func(r []Record) []Record {
			r[1].EventID = "evt_other"
			return r
		}, []link{{2, KindColumnMismatch}}},
		{"seq column changed", func(r []Record) []Record {
			r[1].Seq = 20
			return r
		}, []link{{20, KindSeqGap}, {20, KindColumnMismatch}, {3, KindSeqGap}}},
		{"middle record deleted", func(r []Record) []Record {
			return append(r[:2:2], r[3:]...)
		}, []link{{4, KindSeqGap}, {4, KindPrevMismatch}}},
		{"first record deleted", func(r []Record) []Record {
			return r[1:]
		}, []link{{2, KindSeqGap}, {2, KindPrevMismatch}}},
		{"last records deleted: undetectable", func(r []Record) []Record {
			return r[:3]
		}, nil},
		{"two records swapped", func(r []Record) []Record {
			r[1], r[2] = r[2], r[1]
			return r
		}, []link{{3, KindSeqGap}, {3, KindPrevMismatch}, {2, KindSeqGap}, {2, KindPrevMismatch}, {4, KindSeqGap}, {4, KindPrevMismatch}}},
		{"record repeated", func(r []Record) []Record {
			return append(r[:3:3], r[2:]...)
		}, []link{{3, KindSeqGap}, {3, KindPrevMismatch}}},
	}
}

// Each tampering produces exactly the kinds documented on Verifier.
func TestVerifierTampering(t *testing.T) {
	for _, tt := range tamperings() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.tamper(sealedChain(t, 5))
			rep := verify(recs)
			var got []link
			for _, l := range rep.BrokenLinks {
				got = append(got, link{l.Seq, l.Kind})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("broken links\n got %v\nwant %v", got, tt.want)
			}
			if rep.Verified != (len(tt.want) == 0) {
				t.Errorf("verified = %v", rep.Verified)
			}
			if rep.TotalEvents != int64(len(recs)) {
				t.Errorf("total %d, want %d", rep.TotalEvents, len(recs))
			}
		})
	}
}

func TestVerifierEventIDInLinks(t *testing.T) {
	recs := sealedChain(t, 2)
	recs[1].Agent = "x"
	rep := verify(recs)
	if len(rep.BrokenLinks) != 1 || rep.BrokenLinks[0].EventID != recs[1].EventID {
		t.Errorf("got %+v", rep.BrokenLinks)
	}
}

func TestVerifierCapsBrokenLinks(t *testing.T) {
	recs := sealedChain(t, 3)
	v := NewVerifier()
	for range MaxBrokenLinks + 500 {
		v.Add(recs[2]) // wrong seq, wrong prev every time
	}
	rep := v.Report()
	if len(rep.BrokenLinks) != MaxBrokenLinks || v.BrokenCount() != 2*(MaxBrokenLinks+500) || rep.Verified {
		t.Errorf("%d links listed, %d counted, verified %v", len(rep.BrokenLinks), v.BrokenCount(), rep.Verified)
	}
	// The report is a copy.
	rep.BrokenLinks[0].Kind = "x"
	if v.Report().BrokenLinks[0].Kind == "x" {
		t.Error("Report shares its slice with the verifier")
	}
}

// A timestamp column that is the same instant in another zone agrees.
func TestVerifierTimestampZones(t *testing.T) {
	recs := sealedChain(t, 1)
	recs[0].Timestamp = recs[0].Timestamp.In(time.FixedZone("X", -5*3600))
	if rep := verify(recs); !rep.Verified {
		t.Errorf("%+v", rep.BrokenLinks)
	}
}

func TestScanBody(t *testing.T) {
	recs := sealedChain(t, 1)
	var f bodyFields
	if !scanBody(recs[0].Body, &f) {
		t.Fatal("scanBody refused a sealed body")
	}
	got := map[string]string{
		"event_id": string(f.eventID), "timestamp": string(f.timestamp), "event_type": string(f.eventType),
		"trace_id": string(f.traceID), "session_id": string(f.sessionID), "agent": string(f.agent),
		"action_class": string(f.actionClass), "tool": string(f.toolName), "prev_hash": string(f.prevHash),
	}
	want := map[string]string{
		"event_id": recs[0].EventID, "timestamp": "2026-03-09T14:00:00.123456789Z", "event_type": "tool_execution",
		"trace_id": "trace-0", "session_id": "sess-42", "agent": "db-agent", "action_class": "write",
		"tool": "run_sql", "prev_hash": ZeroHash,
	}
	if !reflect.DeepEqual(got, want) || f.seq != 1 || !f.hasSeq {
		t.Errorf("got %v seq %d, want %v", got, f.seq, want)
	}

	for _, tt := range []struct {
		in string
		ok bool
	}{
		{`{}`, true},
		{` { "agent" : "a\"b\u0041" , "x" : [ { "y" : "}" } , 1.5e3 , null , true , false ] } `, true},
		{`{"tool":null}`, true},
		{`{"tool":{"parameters":{"name":"not this"},"name":"ls"}}`, true},
		{`{"seq":-3}`, true},
		{`{"seq":1.0}`, false},
		{`{"seq":01}`, false},
		{`{"seq":99999999999999999999}`, false},
		{`{"seq":"1"}`, false},
		{`{"agent":1}`, false},
		{`{"agent":"a","agent":"a"}`, false},
		{`{"tool":{"name":"a","name":"b"}}`, false},
		{`{"tool":{},"tool":{}}`, false},
		{`{"tool":"ls"}`, false},
		{`{"x":[1,}`, false},
		{`{"x":{"a"}}`, true}, // inside a skipped value only brackets and strings count
		{`{"x":{"a"]}`, false},
		{`{"x":[}`, false},
		{`{"x":tru}`, false},
		{`{"x":"\ud800"}`, true}, // not one of ours: skipped, the hash vouches for it
		{`{"agent":"\ud800"}`, false},
		{`{} x`, false},
		{`[]`, false},
		{``, false},
		{`{"a":1`, false},
		{strings.Repeat(`{"x":`, 1100) + `1` + strings.Repeat(`}`, 1100), false},
	} {
		var f bodyFields
		if got := scanBody([]byte(tt.in), &f); got != tt.ok {
			t.Errorf("scanBody(%.60s) = %v, want %v", tt.in, got, tt.ok)
		}
	}
	var esc bodyFields
	scanBody([]byte(`{"agent":"a\"b\u0041"}`), &esc)
	if string(esc.agent) != `a"bA` {
		t.Errorf("escaped agent read as %q", esc.agent)
	}
}

func TestPlainRun(t *testing.T) {
	slow := func(b []byte, i int) int {
		for ; i < len(b); i++ {
			if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
				return i
			}
		}
		return i
	}
	// Every special byte at every position, after every other byte value
	// (borrows), and random bytes.
	for _, special := range []byte{'"', '\\', 0, 0x1f} {
		for _, filler := range []byte{0x20, 0x21, 0x23, 0x5b, 0x5d, 0x7f, 0x80, 0xff, 0x01} {
			for n := range 20 {
				for at := 0; at <= n; at++ {
					b := bytes.Repeat([]byte{filler}, n)
					if at < n {
						b[at] = special
					}
					for start := 0; start <= n; start++ {
						if got, want := plainRun(b, start), slow(b, start); got != want {
							t.Fatalf("plainRun(%q, %d) = %d, want %d", b, start, got, want)
						}
					}
				}
			}
		}
	}
	b := make([]byte, 4096)
	for i := range b {
		b[i] = byte(i*2654435761>>13) | 0x20 // mostly plain
		if i%97 == 0 {
			b[i] = byte(i)
		}
	}
	for start := range b {
		if got, want := plainRun(b, start), slow(b, start); got != want {
			t.Fatalf("at %d: got %d, want %d", start, got, want)
		}
	}
}

// sameVerdict fails t unless got and want report the same and count the
// same broken links.
func sameVerdict(t *testing.T, got, want *Verifier) {
	t.Helper()
	if g, w := got.Report(), want.Report(); !reflect.DeepEqual(g, w) {
		t.Errorf("report\n got %+v\nwant %+v", g, w)
	}
	if g, w := got.BrokenCount(), want.BrokenCount(); g != w {
		t.Errorf("broken count %d, want %d", g, w)
	}
}

// verifyParts verifies recs split at cuts, each part by its own
// Verifier started after the record before it, and joins the verdicts.
func verifyParts(recs []Record, cuts ...int) *Verifier {
	v := NewVerifier()
	from := 0
	for _, to := range append(cuts, len(recs)) {
		w := NewVerifier()
		if from > 0 {
			w = NewVerifierAfter(recs[from-1].Seq, recs[from-1].EventHash)
		}
		for _, r := range recs[from:to] {
			w.Add(r)
		}
		v.Join(w)
		from = to
	}
	return v
}

func verifierOf(recs []Record) *Verifier {
	v := NewVerifier()
	for _, r := range recs {
		v.Add(r)
	}
	return v
}

// Verifying a chain in parts and joining the verdicts is verifying it
// whole, wherever the parts are cut, empty parts included.
func TestVerifierJoin(t *testing.T) {
	for _, tt := range tamperings() {
		t.Run(tt.name, func(t *testing.T) {
			recs := tt.tamper(sealedChain(t, 5))
			want := verifierOf(recs)
			for a := 0; a <= len(recs); a++ {
				for b := a; b <= len(recs); b++ {
					sameVerdict(t, verifyParts(recs, a, b), want)
				}
			}
		})
	}
}

// The joined report lists the first MaxBrokenLinks links of all parts.
func TestVerifierJoinCapsBrokenLinks(t *testing.T) {
	recs := sealedChain(t, 3)
	var bad []Record
	for i := range MaxBrokenLinks + 500 {
		r := recs[i%3]
		r.Seq, r.EventID = int64(i%7), fmt.Sprintf("evt_%d", i) // a seq_gap most times, a prev_mismatch every time
		bad = append(bad, r)
	}
	want := verifierOf(bad)
	for _, cuts := range [][]int{
		{0}, {1}, {MaxBrokenLinks / 2}, {MaxBrokenLinks/2 - 1, MaxBrokenLinks/2 + 1},
		{MaxBrokenLinks - 1}, {MaxBrokenLinks}, {len(bad) - 1}, {len(bad)},
		{100, 200, 300, 400, 500, 600, 700, 800, 900, 1000, 1100},
	} {
		sameVerdict(t, verifyParts(bad, cuts...), want)
	}
}

// AddRow, reading the timestamp column's text, gives Add's verdict on the
// record a store reads from the same row (an unparsable text is the zero
// time), whatever the column and the body hold.
func TestVerifierAddRow(t *testing.T) {
	const fixed = "2006-01-02T15:04:05.000000000Z07:00" // the SQLite store's form
	rowOf := func(r Record, ts string) *Row {
		return &Row{
			Seq: r.Seq, EventID: []byte(r.EventID), Timestamp: []byte(ts), EventType: []byte(r.EventType),
			TraceID: []byte(r.TraceID), SessionID: []byte(r.SessionID), Agent: []byte(r.Agent),
			ActionClass: []byte(r.ActionClass), ToolName: []byte(r.ToolName), PrevHash: []byte(r.PrevHash),
			EventHash: []byte(r.EventHash), Body: r.Body,
			ApprovalID: []byte(r.ApprovalID), HasApprovalID: r.HasApprovalID,
		}
	}
	check := func(t *testing.T, recs []Record, stamps []string) {
		t.Helper()
		byAdd, byRow := NewVerifier(), NewVerifier()
		for i, r := range recs {
			byRow.AddRow(rowOf(r, stamps[i]))
			r.Timestamp, _ = time.Parse(time.RFC3339Nano, stamps[i])
			byAdd.Add(r)
		}
		sameVerdict(t, byRow, byAdd)
	}

	t.Run("tamperings", func(t *testing.T) {
		for _, tt := range tamperings() {
			recs := tt.tamper(sealedChain(t, 5))
			var stamps []string
			for _, r := range recs {
				stamps = append(stamps, r.Timestamp.UTC().Format(fixed))
			}
			check(t, recs, stamps)
		}
	})

	const bodyTS = "2026-03-09T14:00:00.123456789Z" // sealedChain's first
	columns := []string{
		bodyTS, "2026-03-09T14:00:00.123456789000Z", "2026-03-09T14:00:00.123456789+00:00",
		"2026-03-09T15:00:00.123456789+01:00", "2026-03-09T14:00:00.12345678Z", "2026-03-09T14:00:00Z",
		"0001-01-01T00:00:00Z", "2026-02-30T14:00:00Z", "yesterday", "",
	}
	for _, body := range []string{bodyTS, "2026-03-09T14:00:00.1234567890Z", "2026-03-09T14:00:00.120000000Z",
		"2026-03-09T15:00:00.123456789+01:00", "0001-01-01T00:00:00Z", "yesterday", ""} {
		recs := sealedChain(t, 1)
		recs[0].Body = bytes.Replace(recs[0].Body, []byte(bodyTS), []byte(body), 1)
		recs[0].EventHash = Hash(recs[0].Body)
		for _, col := range columns {
			t.Run(body+" vs "+col, func(t *testing.T) { check(t, recs, []string{col}) })
		}
	}
}

// The approval_id column is how watchers find an approval's earlier uses
// (DESIGN §11 "one use per approval", issue 13): from a store that has it
// (HasApprovalID), cleared, changed or set it is a column_mismatch, through
// Add and AddRow alike; NULL and the empty string both agree with a body
// citing none; and a store without the column (a database older than it)
// verifies as before, approval_id in the body not read at all.
func TestVerifierApprovalIDColumn(t *testing.T) {
	// Record 2 cites apr_1; every record holds a nested approval_id, which
	// is not the event's.
	chain := func(t *testing.T, hasColumn bool) []Record {
		recs := make([]Record, 0, 4)
		prev := ZeroHash
		for i := range 4 {
			e := sampleEvent(i + 1)
			e.Data = json.RawMessage(`{"approval_id":"apr_nested"}`)
			if i == 1 {
				e.ApprovalID = "apr_1"
			}
			rec, err := Seal(&e, int64(i+1), prev, t0.Add(time.Duration(i)*time.Second))
			if err != nil {
				t.Fatal(err)
			}
			rec.HasApprovalID = hasColumn
			recs = append(recs, rec)
			prev = rec.EventHash
		}
		return recs
	}
	// rebody replaces the body of recs[i] and rehashes it, relinking the
	// next record, as a writer with database access could: only the
	// columns can disagree then.
	rebody := func(recs []Record, i int, old, new string) {
		if !bytes.Contains(recs[i].Body, []byte(old)) {
			panic("body lacks " + old)
		}
		recs[i].Body = bytes.Replace(recs[i].Body, []byte(old), []byte(new), 1)
		recs[i].EventHash = Hash(recs[i].Body)
		if i+1 < len(recs) {
			recs[i+1].PrevHash = recs[i].EventHash // the column; its body still names the old hash
		}
	}
	for _, tt := range []struct {
		name      string
		hasColumn bool
		tamper    func([]Record)
		want      []link
	}{
		{"column agrees", true, func([]Record) {}, nil},
		{"column cleared", true, func(r []Record) { r[1].ApprovalID = "" }, []link{{2, KindColumnMismatch}}},
		{"column changed", true, func(r []Record) { r[1].ApprovalID = "apr_2" }, []link{{2, KindColumnMismatch}}},
		{"column set on an event citing none", true, func(r []Record) { r[2].ApprovalID = "apr_1" }, []link{{3, KindColumnMismatch}}},
		{"column set to the nested approval_id", true, func(r []Record) { r[0].ApprovalID = "apr_nested" }, []link{{1, KindColumnMismatch}}},
		{"body approval_id not a string", true, func(r []Record) {
			rebody(r, 1, `"approval_id":"apr_1"`, `"approval_id":1`)
		}, []link{{2, KindColumnMismatch}, {3, KindColumnMismatch}}},
		{"body approval_id twice", true, func(r []Record) {
			rebody(r, 1, `"approval_id":"apr_1"`, `"approval_id":"apr_1","approval_id":"apr_1"`)
		}, []link{{2, KindColumnMismatch}, {3, KindColumnMismatch}}},
		{"absent column: cleared is not seen", false, func(r []Record) { r[1].ApprovalID = "" }, nil},
		{"absent column: changed is not seen", false, func(r []Record) { r[1].ApprovalID = "apr_2" }, nil},
		// As before the column: approval_id is passed over, not read.
		{"absent column: body approval_id not a string", false, func(r []Record) {
			rebody(r, 1, `"approval_id":"apr_1"`, `"approval_id":1`)
		}, []link{{3, KindColumnMismatch}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			recs := chain(t, tt.hasColumn)
			tt.tamper(recs)
			byAdd, byRow := NewVerifier(), NewVerifier()
			for _, r := range recs {
				byAdd.Add(r)
				byRow.AddRow(&Row{
					Seq: r.Seq, EventID: []byte(r.EventID), Timestamp: []byte(r.Timestamp.Format(time.RFC3339Nano)),
					EventType: []byte(r.EventType), TraceID: []byte(r.TraceID), SessionID: []byte(r.SessionID),
					Agent: []byte(r.Agent), ActionClass: []byte(r.ActionClass), ToolName: []byte(r.ToolName),
					PrevHash: []byte(r.PrevHash), EventHash: []byte(r.EventHash), Body: r.Body,
					ApprovalID: []byte(r.ApprovalID), HasApprovalID: r.HasApprovalID,
				})
			}
			var got []link
			for _, l := range byAdd.Report().BrokenLinks {
				got = append(got, link{l.Seq, l.Kind})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("broken links\n got %v\nwant %v", got, tt.want)
			}
			sameVerdict(t, byRow, byAdd)
		})
	}

	// NULL and '' (nil and empty bytes) both agree with a body citing none.
	recs := chain(t, true)
	for _, id := range [][]byte{nil, {}} {
		v := NewVerifier()
		for _, r := range recs[:1] {
			v.AddRow(&Row{
				Seq: r.Seq, EventID: []byte(r.EventID), Timestamp: []byte(r.Timestamp.Format(time.RFC3339Nano)),
				EventType: []byte(r.EventType), TraceID: []byte(r.TraceID), SessionID: []byte(r.SessionID),
				Agent: []byte(r.Agent), ActionClass: []byte(r.ActionClass), ToolName: []byte(r.ToolName),
				PrevHash: []byte(r.PrevHash), EventHash: []byte(r.EventHash), Body: r.Body,
				ApprovalID: id, HasApprovalID: true,
			})
		}
		if rep := v.Report(); !rep.Verified {
			t.Errorf("approval_id %#v on an event citing none: %+v", id, rep.BrokenLinks)
		}
	}
}

// Approval mismatches (issue 13) make the verdict false, are listed after
// the chain's links however many those are, are bounded on their own, and
// survive a Join, from an empty part too.
func TestVerifierApprovalMismatches(t *testing.T) {
	recs := sealedChain(t, 3)
	m := BrokenLink{Seq: 2, EventID: recs[1].EventID, Kind: "ignored", ApprovalID: "apr_1", Detail: "status differs"}

	v := verifierOf(recs)
	v.AddApprovalMismatch(m)
	rep := v.Report()
	want := m
	want.Kind = KindApprovalMismatch
	if rep.Verified || v.BrokenCount() != 1 || !reflect.DeepEqual(rep.BrokenLinks, []BrokenLink{want}) || rep.TotalEvents != 3 {
		t.Errorf("report %+v, count %d", rep, v.BrokenCount())
	}
	out, _ := json.Marshal(rep.BrokenLinks[0])
	if w := `{"seq":2,"event_id":"` + recs[1].EventID + `","kind":"approval_mismatch","approval_id":"apr_1","detail":"status differs"}`; string(out) != w {
		t.Errorf("JSON %s, want %s", out, w)
	}
	if out, _ := json.Marshal(BrokenLink{Seq: 1, Kind: KindSeqGap}); string(out) != `{"seq":1,"event_id":"","kind":"seq_gap"}` {
		t.Errorf("a chain link's JSON changed: %s", out)
	}

	// A chain with more broken links than are listed.
	v = NewVerifier()
	for range MaxBrokenLinks + 5 {
		v.Add(recs[2])
	}
	for range MaxBrokenLinks + 5 {
		v.AddApprovalMismatch(m)
	}
	rep = v.Report()
	if len(rep.BrokenLinks) != 2*MaxBrokenLinks || rep.BrokenLinks[MaxBrokenLinks-1].Kind == KindApprovalMismatch ||
		rep.BrokenLinks[MaxBrokenLinks].Kind != KindApprovalMismatch || v.BrokenCount() != 2*(MaxBrokenLinks+5)+MaxBrokenLinks+5 {
		t.Errorf("%d links listed, %d counted", len(rep.BrokenLinks), v.BrokenCount())
	}

	// Joined: into a verifier, and from one that saw no record.
	whole := verifierOf(recs)
	whole.AddApprovalMismatch(m)
	parts := verifyParts(recs, 1)
	w := NewVerifier()
	w.AddApprovalMismatch(m)
	parts.Join(w)
	sameVerdict(t, parts, whole)
}
