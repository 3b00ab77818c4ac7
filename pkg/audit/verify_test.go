package audit

import (
	"bytes"
	"encoding/json"
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

// Each tampering produces exactly the kinds documented on Verifier.
func TestVerifierTampering(t *testing.T) {
	rehash := func(r *Record) { r.EventHash = Hash(r.Body) }
	edit := func(r *Record, old, new string) {
		if !bytes.Contains(r.Body, []byte(old)) {
			panic("body lacks " + old)
		}
		r.Body = bytes.Replace(r.Body, []byte(old), []byte(new), 1)
	}
	type link struct {
		seq  int64
		kind string
	}
	tests := []struct {
		name   string
		tamper func([]Record) []Record
		want   []link
	}{
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
	for _, tt := range tests {
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
