package sessionloop

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"

	"github.com/govkit/govkit/pkg/session"
)

// roundTripEvents is a recorded-looking agent session: a session_start
// declaring tools, then read calls and their results, with a search now
// and then. Stamps are left to the driver.
func roundTripEvents(n int) []byte {
	var b bytes.Buffer
	b.WriteString(`{"type":"session_start","schema_version":1,"session_id":"bench","workspace_root":".","tools":[{"name":"list_hosts","kind":"resolve"},{"name":"read_file","kind":"read"},{"name":"search","kind":"search"},{"name":"restart","kind":"write"}],"config":{"read":{"max_reads":100000000,"max_total_lines":2000000000}}}` + "\n")
	for i := 1; i < n; i += 2 {
		fmt.Fprintf(&b, `{"type":"tool_call","call_id":"c%d","name":"read_file","args":{"path":"pkg/a%d.go","start_line":1,"end_line":40}}`+"\n", i, i%50)
		fmt.Fprintf(&b, `{"type":"tool_result","call_id":"c%d","ok":true,"lines":40,"chars":1200}`+"\n", i)
	}
	return b.Bytes()
}

// BenchmarkRoundTrip is gate session's loop over stdio without the pipes:
// read a line, decode, stamp, Transition, encode each effect, write.
// Target (issue 16): ≥ 50k events/s on one core (go test -cpu 1).
func BenchmarkRoundTrip(b *testing.B) {
	const n = 10000
	in := roundTripEvents(n)
	cfg := Config{Options: session.Options{ReceiptKey: []byte("bench key")}, Dir: b.TempDir()}
	var out countingDiscard
	b.SetBytes(int64(len(in)))
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		if err := Run(context.Background(), cfg, bytes.NewReader(in), &out); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(n*b.N)/b.Elapsed().Seconds(), "events/s")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(n*b.N), "ns/event")
	b.ReportMetric(float64(out.n)/float64(n*b.N), "out-bytes/event")
}

type countingDiscard struct{ n int64 }

func (c *countingDiscard) Write(p []byte) (int, error) {
	c.n += int64(len(p))
	return io.Discard.Write(p)
}
