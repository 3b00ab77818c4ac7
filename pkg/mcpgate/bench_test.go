package mcpgate_test

import (
	"context"
	"io"
	"sort"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/govkit/govkit/pkg/mcpgate"
)

// BenchmarkToolsCall is gate mcp's overhead per tools/call (issue 17: ≤ 1 ms
// median): an SDK client calling an in-process SDK server's tool over pipes,
// directly and through the proxy (the reducer's tool_call and tool_result,
// a signed receipt, the result rewritten with _meta). Each reports the
// median of its calls as median-µs/call; the overhead is the difference.
//
//	go test -run XXX -bench ToolsCall -benchtime 2000x ./pkg/mcpgate/
func BenchmarkToolsCall(b *testing.B) {
	const cfg = "mcp:\n  tools:\n    - {name: list, kind: resolve}\n"
	b.Run("direct", func(b *testing.B) {
		s := newTestServer(b)
		c := mcp.NewClient(&mcp.Implementation{Name: "bench", Version: "1"}, nil)
		cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: s.out, Writer: s.inW}, nil)
		if err != nil {
			b.Fatal(err)
		}
		defer cs.Close()
		benchCalls(b, cs)
	})
	b.Run("gate", func(b *testing.B) {
		s := newTestServer(b)
		p := startProxy(b, s, cfg, func(o *mcpgate.Options) { o.Log = io.Discard })
		cs := connect(b, p, nil)
		defer cs.Close()
		benchCalls(b, cs)
	})
}

func benchCalls(b *testing.B, cs *mcp.ClientSession) {
	params := &mcp.CallToolParams{Name: "list", Arguments: map[string]any{"dir": "/srv"}}
	call(b, cs, "list", params.Arguments.(map[string]any)) // warm: the session starts
	times := make([]time.Duration, 0, b.N)
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		res, err := cs.CallTool(context.Background(), params)
		times = append(times, time.Since(start))
		if err != nil || res.IsError {
			b.Fatalf("call %d: %v %+v", i, err, res)
		}
	}
	b.StopTimer()
	sort.Slice(times, func(i, j int) bool { return times[i] < times[j] })
	b.ReportMetric(float64(times[len(times)/2].Nanoseconds())/1e3, "median-µs/call")
}
