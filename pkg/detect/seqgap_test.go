package detect

import (
	"encoding/json"
	"fmt"
	"testing"
)

func TestSeqWatch(t *testing.T) {
	tests := []struct {
		name  string
		after int64
		seqs  []int64
		want  []string // "got expected missing" per alert
	}{
		{name: "in order", after: 0, seqs: []int64{1, 2, 3}},
		{name: "resumed", after: 41, seqs: []int64{42, 43}},
		{name: "first missing", after: 0, seqs: []int64{2, 3}, want: []string{"2 1 1"}},
		{name: "hole", after: 0, seqs: []int64{1, 2, 5, 6}, want: []string{"5 3 2"}},
		{name: "backwards", after: 0, seqs: []int64{1, 2, 3, 2, 3}, want: []string{"2 4 0"}},
		{name: "repeat", after: 0, seqs: []int64{1, 1, 2}, want: []string{"1 2 0"}},
		{name: "unknown start", after: -1, seqs: []int64{17, 18, 20}, want: []string{"20 19 1"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w := NewSeqWatch(tt.after)
			var got []string
			for _, s := range tt.seqs {
				a, ok := w.Observe(watchEvent("a", s, watchT0), watchT0)
				if !ok {
					continue
				}
				var d SeqGapDetails
				if err := json.Unmarshal(a.Details, &d); err != nil {
					t.Fatal(err)
				}
				if a.Type != SeqGap || a.Severity != Critical || a.Seq != s || d.Got != s {
					t.Errorf("alert %+v", a)
				}
				got = append(got, fmt.Sprintf("%d %d %d", d.Got, d.Expected, d.Missing))
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("alerts %v; want %v", got, tt.want)
			}
			if last, ok := w.Last(); len(tt.seqs) > 0 && (!ok || last != tt.seqs[len(tt.seqs)-1]) {
				t.Errorf("Last = %d, %v", last, ok)
			}
		})
	}
}
