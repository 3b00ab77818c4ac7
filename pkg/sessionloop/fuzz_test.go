package sessionloop

import (
	"bytes"
	"context"
	"io"
	"testing"
	"testing/iotest"
)

// FuzzLineReader (the synchronous reader: the splitting is the same, and
// coverage from another goroutine would make the fuzzer's unstable):
// whatever the input and however it is read, the lines are
// the input's, split at newlines with a trailing \r dropped; a line is
// reported too long exactly when it is over the bound; no more than the
// bound is ever held.
func FuzzLineReader(f *testing.F) {
	f.Add([]byte("a\nbb\r\n\nccc"), uint8(2), false)
	f.Add([]byte("12345678\n123456789\nok"), uint8(8), true)
	f.Add([]byte("\r\r\n\n\r"), uint8(0), false)
	f.Fuzz(func(t *testing.T, in []byte, max uint8, oneByte bool) {
		var want [][]byte
		if len(in) > 0 {
			want = bytes.Split(bytes.TrimSuffix(in, []byte{'\n'}), []byte{'\n'})
		}
		var r io.Reader = bytes.NewReader(in)
		if oneByte {
			r = iotest.OneByteReader(r)
		}
		lr := newSyncLineReader(r, int(max), 7)
		defer lr.stop()
		for i := 0; ; i++ {
			line, tooLong, err := lr.next(context.Background(), func() error { return nil })
			if err == io.EOF {
				if i != len(want) {
					t.Fatalf("%d lines, want %d", i, len(want))
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if i >= len(want) {
				t.Fatalf("line %d beyond the input's %d", i+1, len(want))
			}
			w := bytes.TrimSuffix(want[i], []byte{'\r'})
			if tooLong != (len(w) > int(max)) {
				t.Fatalf("line %d (%d bytes, bound %d): tooLong %t", i+1, len(w), max, tooLong)
			}
			if !tooLong && !bytes.Equal(line, w) {
				t.Fatalf("line %d = %q, want %q", i+1, line, w)
			}
			if len(lr.carry) > int(max)+1 {
				t.Fatalf("holds %d bytes, bound %d", len(lr.carry), max)
			}
		}
	})
}
