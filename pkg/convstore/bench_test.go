package convstore

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
)

// BenchmarkSave measures one durable Save (WAL, synchronous=FULL: a sync of
// the WAL per call) of a transition that appends two messages (a user
// message and the assistant's answer) with a 4 KiB snapshot, the cost the
// executor pays before every transition's effects (B-07a).
func BenchmarkSave(b *testing.B) {
	s, _ := openTest(b)
	ctx := context.Background()
	c := conv("c-bench", 0)
	mustCreate(b, s, c)
	pad := strings.Repeat("x", 4<<10)
	body := json.RawMessage(fmt.Sprintf(`{"role":"assistant","text":%q}`, strings.Repeat("y", 500)))
	var seq int64
	for b.Loop() {
		c.Snapshot = json.RawMessage(fmt.Sprintf(`{"id":"c-bench","last_seq":%d,"pad":%q}`, seq+2, pad))
		msgs := []Message{
			{Seq: seq + 1, Role: "user", Body: body},
			{Seq: seq + 2, Role: "assistant", Body: body},
		}
		if err := s.Save(ctx, c, msgs); err != nil {
			b.Fatal(err)
		}
		seq += 2
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "saves/s")
}
