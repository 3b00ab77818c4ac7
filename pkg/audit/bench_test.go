package audit

import (
	"encoding/json"
	"testing"
)

// BenchmarkVerify is verify-chain's inner loop over records read from a
// database (DESIGN §10: ≥ 500k events/s): hash the stored body, check the
// links and the indexed columns.
func BenchmarkVerify(b *testing.B) {
	recs := sealedChain(b, 1024)
	for i := range recs {
		recs[i].HasApprovalID = true // as Scan reads them
	}
	b.SetBytes(int64(len(recs[0].Body)))
	b.ReportAllocs()
	v := NewVerifier()
	b.ResetTimer()
	for i := range b.N {
		r := recs[i%len(recs)]
		if i%len(recs) == 0 {
			v = NewVerifier()
		}
		v.Add(r)
	}
	b.StopTimer()
	if !v.Report().Verified {
		b.Fatal("chain does not verify")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(len(recs[0].Body)), "body-bytes")
}

// BenchmarkVerifyRow is BenchmarkVerify through AddRow, as the SQLite
// store's VerifyChain feeds it: columns as bytes, the timestamp as the
// stored text.
func BenchmarkVerifyRow(b *testing.B) {
	recs := sealedChain(b, 1024)
	rows := make([]Row, len(recs))
	for i, r := range recs {
		rows[i] = Row{
			Seq: r.Seq, EventID: []byte(r.EventID), Timestamp: []byte(r.Timestamp.Format("2006-01-02T15:04:05.000000000Z07:00")),
			EventType: []byte(r.EventType), TraceID: []byte(r.TraceID), SessionID: []byte(r.SessionID),
			Agent: []byte(r.Agent), ActionClass: []byte(r.ActionClass), ToolName: []byte(r.ToolName),
			PrevHash: []byte(r.PrevHash), EventHash: []byte(r.EventHash), Body: r.Body,
			ApprovalID: []byte(r.ApprovalID), HasApprovalID: true, // the column, compared with the body
		}
	}
	b.SetBytes(int64(len(recs[0].Body)))
	b.ReportAllocs()
	v := NewVerifier()
	b.ResetTimer()
	for i := range b.N {
		if i%len(rows) == 0 {
			v = NewVerifier()
		}
		v.AddRow(&rows[i%len(rows)])
	}
	b.StopTimer()
	if !v.Report().Verified {
		b.Fatal("chain does not verify")
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVerifyHashOnly is the floor: SHA-256 of the same bodies.
func BenchmarkVerifyHashOnly(b *testing.B) {
	recs := sealedChain(b, 1024)
	b.SetBytes(int64(len(recs[0].Body)))
	for i := range b.N {
		_ = Hash(recs[i%len(recs)].Body)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkVerifyExport is verify-chain --jsonl per line: parse the line,
// re-derive the canonical body, verify.
func BenchmarkVerifyExport(b *testing.B) {
	var lines [][]byte
	for _, rec := range sealedChain(b, 1024) {
		l, err := ExportLine(rec)
		if err != nil {
			b.Fatal(err)
		}
		lines = append(lines, l)
	}
	b.SetBytes(int64(len(lines[0])))
	b.ReportAllocs()
	v := NewVerifier()
	b.ResetTimer()
	for i := range b.N {
		if i%len(lines) == 0 {
			v = NewVerifier()
		}
		rec, err := ParseExportLine(lines[i%len(lines)])
		if err != nil {
			b.Fatal(err)
		}
		v.Add(rec)
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkSeal is auditd's writer per event.
func BenchmarkSeal(b *testing.B) {
	e := sampleEvent(1)
	b.ReportAllocs()
	prev := ZeroHash
	for i := range b.N {
		ev := e
		tool := *e.Tool
		ev.Tool = &tool
		rec, err := Seal(&ev, int64(i+1), prev, t0)
		if err != nil {
			b.Fatal(err)
		}
		prev = rec.EventHash
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkDecodeEvent is auditd's request decoding per event.
func BenchmarkDecodeEvent(b *testing.B) {
	raw, _ := json.Marshal(sampleEvent(1))
	var m map[string]any
	_ = json.Unmarshal(raw, &m)
	delete(m, "seq")
	delete(m, "timestamp")
	delete(m, "prev_hash")
	delete(m, "schema_version")
	raw, _ = json.Marshal(m)
	b.SetBytes(int64(len(raw)))
	b.ReportAllocs()
	for range b.N {
		if _, err := DecodeEvent(raw); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkScanBody is the column check's share of BenchmarkVerify.
func BenchmarkScanBody(b *testing.B) {
	recs := sealedChain(b, 64)
	b.SetBytes(int64(len(recs[0].Body)))
	for i := range b.N {
		var f bodyFields
		if !scanBody(recs[i%len(recs)].Body, &f) {
			b.Fatal("refused")
		}
	}
}
