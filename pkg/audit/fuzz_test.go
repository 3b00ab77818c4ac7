package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

// FuzzCanonicalizeJSON: accepted input canonicalizes to valid JSON that means
// the same to encoding/json and is its own canonical form; valid JSON is
// refused only for the I-JSON reasons CanonicalizeJSON documents.
func FuzzCanonicalizeJSON(f *testing.F) {
	for _, s := range []string{
		`{"b":1,"a":[true,false,null,"x"]}`, `"\u20ac\ud83d\ude00\u0000"`, `[1e21,1e-7,-0,0.1]`,
		`{"\ue000":1,"\ud800\udc00":2}`, `{"a":1,"a":2}`, `1e400`, `"\ud800"`, "\"\xff\"", ` [ ] `,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalizeJSON(in)
		if err != nil {
			if !json.Valid(in) {
				return
			}
			for _, reason := range []string{"duplicate member name", "surrogate", "UTF-8", "out of the range", "nesting"} {
				if strings.Contains(err.Error(), reason) {
					return
				}
			}
			t.Fatalf("valid JSON %q refused: %v", in, err)
		}
		if !json.Valid(out) {
			t.Fatalf("output %q is not JSON", out)
		}
		again, err := CanonicalizeJSON(out)
		if err != nil || !bytes.Equal(again, out) {
			t.Fatalf("not idempotent: %q → %q (%v)", out, again, err)
		}
		var a, b any
		if err := json.Unmarshal(in, &a); err != nil {
			t.Fatalf("encoding/json refuses accepted input %q: %v", in, err)
		}
		if err := json.Unmarshal(out, &b); err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(a, b) {
			t.Fatalf("meaning changed: %q → %q", in, out)
		}
	})
}

// FuzzScanBody: the verifier's scanner never misreads a field: whenever both
// it and the full parser accept a body, they agree on every indexed field.
func FuzzScanBody(f *testing.F) {
	for _, rec := range sealedChain(f, 2) {
		f.Add(rec.Body)
	}
	f.Add([]byte(`{"agent":"a\"\u0062","tool":{"parameters":{"name":"x"},"name":"n"},"seq":12}`))
	f.Add([]byte(`{"seq":1,"x":[{"agent":"no"}]}`))
	f.Add([]byte(`{"approval_id":"apr_\u0031","data":{"approval_id":"no"}}`))
	f.Fuzz(func(t *testing.T, body []byte) {
		got := bodyFields{withApprovalID: true}
		if !scanBody(body, &got) {
			return
		}
		n, err := parseJSON(body)
		if err != nil {
			return // the scanner skips what the hash vouches for
		}
		if n.kind != kindObject {
			t.Fatalf("scanner accepted a non-object %q", body)
		}
		for name, val := range map[string][]byte{
			"event_id": got.eventID, "timestamp": got.timestamp, "event_type": got.eventType,
			"trace_id": got.traceID, "session_id": got.sessionID, "agent": got.agent,
			"action_class": got.actionClass, "prev_hash": got.prevHash, "approval_id": got.approvalID,
		} {
			want := ""
			if m := n.member(name); m != nil {
				if m.kind != kindString {
					t.Fatalf("scanner accepted non-string %s in %q", name, body)
				}
				want = m.str
			}
			if string(val) != want {
				t.Fatalf("%s: scanner read %q, parser %q, in %q", name, val, want, body)
			}
		}
		wantTool := ""
		if tool := n.member("tool"); tool != nil && tool.kind == kindObject {
			if m := tool.member("name"); m != nil {
				wantTool = m.str
			}
		}
		if string(got.toolName) != wantTool {
			t.Fatalf("tool.name: scanner read %q, parser %q, in %q", got.toolName, wantTool, body)
		}
		if m := n.member("seq"); (m != nil) != got.hasSeq || m != nil && m.num != float64(got.seq) {
			t.Fatalf("seq: scanner read %d (%v), in %q", got.seq, got.hasSeq, body)
		}
	})
}

// FuzzDecodeEvent: DecodeEvent never panics, and every event it accepts
// seals (into the bytes Canonical gives), verifies, exports, and
// round-trips: the body decodes (with
// encoding/json) to the sealed event, and decoding the body again as client
// input, once the server's fields are removed, gives the same event.
func FuzzDecodeEvent(f *testing.F) {
	for i := range 3 {
		e := sampleEvent(i)
		raw, _ := json.Marshal(e)
		var m map[string]any
		_ = json.Unmarshal(raw, &m)
		for _, k := range []string{"seq", "timestamp", "prev_hash", "schema_version"} {
			delete(m, k)
		}
		raw, _ = json.Marshal(m)
		f.Add(raw)
	}
	for _, s := range []string{
		`{"event_type":"x"}`, `{"event_type":"x","seq":1}`, `{"event_type":"x","tool":{"duration_ms":1e3,"result":"é"}}`,
		`{"event_type":"a","principal":{"roles":[]},"resource":{},"data":[1,{"b":2,"a":1}],"policy_decision":"x"}`,
		`{"event_type":"x","agent":"\u2028<>&\u0000"}`, `{"event_type":"x","tool":null,"agent":null}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		e, err := DecodeEvent(raw)
		if err != nil {
			return
		}
		sealed := e
		if sealed.EventID == "" {
			sealed.EventID = "evt_fuzz"
		}
		rec, err := Seal(&sealed, 1, ZeroHash, t0)
		if err != nil {
			t.Fatalf("accepted event does not seal: %v", err)
		}
		if generic, err := canonicalGeneric(sealed); err != nil || !bytes.Equal(generic, rec.Body) {
			t.Fatalf("body differs from Canonical (%v):\n%s\n%s", err, rec.Body, generic)
		}

		var back Event
		if err := json.Unmarshal(rec.Body, &back); err != nil {
			t.Fatalf("body %q: %v", rec.Body, err)
		}
		back.EventHash = sealed.EventHash
		if !reflect.DeepEqual(back, sealed) {
			t.Fatalf("body decodes to\n%+v\nwant\n%+v", back, sealed)
		}

		v := NewVerifier()
		v.Add(rec)
		if rep := v.Report(); !rep.Verified {
			t.Fatalf("sealed record does not verify: %+v\n%s", rep.BrokenLinks, rec.Body)
		}
		line, err := ExportLine(rec)
		if err != nil {
			t.Fatal(err)
		}
		parsed, err := ParseExportLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(parsed.Body, rec.Body) || parsed.EventHash != rec.EventHash {
			t.Fatalf("export line re-derives another body:\n%s\n%s", parsed.Body, rec.Body)
		}

		n, _ := parseJSON(rec.Body)
		client := n.without("seq")
		client = client.without("timestamp")
		client = client.without("prev_hash")
		again, err := DecodeEvent(appendNode(nil, &client))
		if err != nil {
			t.Fatalf("the body, as client input, is refused: %v", err)
		}
		again.Seq, again.Timestamp, again.PrevHash, again.SchemaVersion, again.EventHash =
			sealed.Seq, sealed.Timestamp, sealed.PrevHash, sealed.SchemaVersion, sealed.EventHash
		if !reflect.DeepEqual(again, sealed) {
			t.Fatalf("decoding the body again gives\n%+v\nwant\n%+v", again, sealed)
		}
	})
}

// FuzzParseEvent: an accepted event's Body is canonical JSON without
// event_hash, parses back to itself, and is what ParseExportLine reads
// from the same text when it carries an event_hash (verify-chain --proof
// hashes that Body, issue 19).
func FuzzParseEvent(f *testing.F) {
	for _, rec := range sealedChain(f, 2) {
		f.Add(rec.Body)
		line, err := ExportLine(rec)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(line)
	}
	f.Add([]byte(`{"seq":1,"event_hash":7}`))
	f.Add([]byte(`{"seq":1.5}`))
	f.Fuzz(func(t *testing.T, in []byte) {
		rec, err := ParseEvent(in)
		if err != nil {
			return
		}
		canon, err := CanonicalizeJSON(rec.Body)
		if err != nil || !bytes.Equal(canon, rec.Body) {
			t.Fatalf("body %q is not canonical (%v)", rec.Body, err)
		}
		again, err := ParseEvent(rec.Body)
		if err != nil || !bytes.Equal(again.Body, rec.Body) || again.Seq != rec.Seq || again.EventHash != "" {
			t.Fatalf("body %q does not parse back: %+v, %v", rec.Body, again, err)
		}
		if exp, err := ParseExportLine(in); err == nil {
			if !bytes.Equal(exp.Body, rec.Body) || exp.EventHash != rec.EventHash {
				t.Fatalf("ParseExportLine disagrees on %q", in)
			}
		} else if rec.EventHash != "" {
			t.Fatalf("ParseExportLine refuses %q: %v", in, err)
		}
	})
}

// FuzzIsCanonical: isCanonical, which lets Seal and Prepare keep a
// JSON-valued field as it is (issue 20), answers true only for input that
// CanonicalizeJSON accepts and returns unchanged, and true for what
// CanonicalizeJSON returns when its member names have no escapes.
func FuzzIsCanonical(f *testing.F) {
	for _, s := range []string{
		`{"a":[true,false,null,"x"],"b":1}`, `{"b":1,"a":2}`, `{"a":1,"a":1}`, `"\u001f\b\t\n\f\r\"\\"`,
		`"\u0008"`, `"\u001F"`, `"\/"`, `[1e21,1e-7,0.1,-5,100]`, `1E21`, `-0`, `1.0`, `01`, `1e400`,
		`{"\ue000":1,"\ud800\udc00":2}`, "{\"\xf0\x90\x80\x80\":2,\"\xee\x80\x80\":1}", "\"\xff\"", ` []`, `[] `,
		`{"a":{}}`, `[[[]]]`, `{"":0}`, `"é€😀"`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, in []byte) {
		out, err := CanonicalizeJSON(in)
		if isCanonical(in) && (err != nil || !bytes.Equal(out, in)) {
			t.Fatalf("isCanonical(%q), but CanonicalizeJSON gives %q (%v)", in, out, err)
		}
		if err == nil && !bytes.Contains(out, []byte(`\`)) && !isCanonical(out) {
			t.Fatalf("canonical %q (from %q) not recognized", out, in)
		}
	})
}
