package classify

import (
	"bytes"
	"strings"
	"testing"
)

// TestRecordStrings: every string cut from a block keeps its value while
// later records fill that block and the next ones, whatever their sizes.
func TestRecordStrings(t *testing.T) {
	var rs recordStrings
	var want, got []string
	buf := make([]byte, 0, 2*stringBlock)
	for i, size := range []int{0, 1, 100, stringBlock - 200, 300, stringBlock, 2*stringBlock + 1, 5, stringBlock - 5, 7} {
		rec := bytes.Repeat([]byte{byte('a' + i)}, size)
		buf = append(buf[:0], rec...) // the reader reuses its buffer
		got = append(got, rs.text(buf))
		want = append(want, string(rec))
		for j := range buf {
			buf[j] = '!'
		}
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("record %d: %d bytes starting %q, want %d of %q", i, len(got[i]), strings.TrimSpace(got[i][:min(len(got[i]), 8)]), len(want[i]), want[i][:min(len(want[i]), 8)])
		}
	}
}
