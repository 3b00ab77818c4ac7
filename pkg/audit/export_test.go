package audit

import (
	"bytes"
	"encoding/json"
	"reflect"
	"strings"
	"testing"
)

func TestExportLineRoundTrip(t *testing.T) {
	for _, rec := range sealedChain(t, 3) {
		line, err := ExportLine(rec)
		if err != nil {
			t.Fatal(err)
		}
		if bytes.ContainsAny(line, "\n\r") {
			t.Errorf("line holds a newline: %s", line)
		}
		// The line is the body with event_hash in its sorted place.
		want := strings.Replace(string(rec.Body), `"event_id":`, `"event_hash":"`+rec.EventHash+`","event_id":`, 1)
		if string(line) != want {
			t.Errorf("line\n got %s\nwant %s", line, want)
		}
		back, err := ParseExportLine(line)
		if err != nil {
			t.Fatal(err)
		}
		if !back.Timestamp.Equal(rec.Timestamp) {
			t.Errorf("timestamp %v, want %v", back.Timestamp, rec.Timestamp)
		}
		back.Timestamp = rec.Timestamp
		if !reflect.DeepEqual(back, rec) {
			t.Errorf("round trip\n got %+v\nwant %+v", back, rec)
		}
	}
}

func TestExportLineRefuses(t *testing.T) {
	rec := sealedChain(t, 1)[0]
	for name, body := range map[string]string{
		"not json":       `{"a"`,
		"not an object":  `[1]`,
		"has event_hash": `{"event_hash":"x","seq":1}`,
	} {
		r := rec
		r.Body = []byte(body)
		if _, err := ExportLine(r); err == nil || !strings.Contains(err.Error(), "export seq 1") {
			t.Errorf("%s: error %v", name, err)
		}
	}
}

func parseAll(t *testing.T, lines [][]byte) Report {
	t.Helper()
	v := NewVerifier()
	for i, l := range lines {
		rec, err := ParseExportLine(l)
		if err != nil {
			t.Fatalf("line %d: %v", i+1, err)
		}
		v.Add(rec)
	}
	return v.Report()
}

func exportLines(t *testing.T, n int) [][]byte {
	t.Helper()
	var lines [][]byte
	for _, rec := range sealedChain(t, n) {
		l, err := ExportLine(rec)
		if err != nil {
			t.Fatal(err)
		}
		lines = append(lines, l)
	}
	return lines
}

func TestVerifyExport(t *testing.T) {
	if rep := parseAll(t, exportLines(t, 4)); !rep.Verified || rep.TotalEvents != 4 {
		t.Errorf("intact export: %+v", rep)
	}

	// Re-formatting a line (indentation, member order) changes nothing the
	// hash covers: the body is re-derived canonically.
	lines := exportLines(t, 4)
	var m map[string]any
	if err := json.Unmarshal(lines[1], &m); err != nil {
		t.Fatal(err)
	}
	lines[1], _ = json.MarshalIndent(m, "", "  ")
	if rep := parseAll(t, lines); !rep.Verified {
		t.Errorf("re-formatted line: %+v", rep.BrokenLinks)
	}

	type link struct {
		seq  int64
		kind string
	}
	for _, tt := range []struct {
		name, old, new string
		want           []link
	}{
		{"indexed field", `"agent":"db-agent"`, `"agent":"db-agenT"`, []link{{2, KindHashMismatch}}},
		{"other field", `"UPDATE 1500"`, `"UPDATE 1"`, []link{{2, KindHashMismatch}}},
		{"member added", `"agent":`, `"extra":1,"agent":`, []link{{2, KindHashMismatch}}},
		{"event_hash", `"event_hash":"`, `"event_hash":"0`, []link{{2, KindHashMismatch}, {3, KindPrevMismatch}}},
		{"prev_hash", `"prev_hash":"`, `"prev_hash":"0`, []link{{2, KindPrevMismatch}, {2, KindHashMismatch}}},
		{"seq", `"seq":2`, `"seq":7`, []link{{7, KindSeqGap}, {7, KindHashMismatch}, {3, KindSeqGap}}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			lines := exportLines(t, 4)
			if !bytes.Contains(lines[1], []byte(tt.old)) {
				t.Fatalf("line lacks %s", tt.old)
			}
			lines[1] = bytes.Replace(lines[1], []byte(tt.old), []byte(tt.new), 1)
			rep := parseAll(t, lines)
			var got []link
			for _, l := range rep.BrokenLinks {
				got = append(got, link{l.Seq, l.Kind})
			}
			if !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestParseExportLineRefuses(t *testing.T) {
	const h = `"event_hash":"00"`
	tests := []struct {
		name, in, want string
	}{
		{"not json", `{"seq":1,`, "invalid JSON"},
		{"not an object", `[1]`, "must be a JSON object"},
		{"duplicate", `{"seq":1,"seq":1,` + h + `}`, "duplicate member name"},
		{"no event_hash", `{"seq":1}`, "no event_hash"},
		{"event_hash not a string", `{"seq":1,"event_hash":1}`, "event_hash must be a string"},
		{"no seq", `{` + h + `}`, "no seq"},
		{"fractional seq", `{"seq":1.5,` + h + `}`, "seq must be an integer"},
		{"string seq", `{"seq":"1",` + h + `}`, "seq must be an integer"},
		{"agent not a string", `{"agent":1,"seq":1,` + h + `}`, "agent must be a string"},
		{"bad timestamp", `{"seq":1,"timestamp":"yesterday",` + h + `}`, "timestamp is not an RFC 3339 time"},
		{"tool not an object", `{"seq":1,"tool":"ls",` + h + `}`, "tool must be an object {name, parameters, raw_command, result, error, duration_ms}"},
		{"tool name not a string", `{"seq":1,"tool":{"name":1},` + h + `}`, "tool.name must be a string"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := ParseExportLine([]byte(tt.in))
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %v, want %q", err, tt.want)
			}
		})
	}
}
