package intent

import (
	"bytes"
	"encoding/json"
	"testing"
)

// reflectJSON is how MarshalJSON encoded a result before AppendJSON: the
// reference AppendJSON must match byte for byte.
func reflectJSON(t testing.TB, r Result) []byte {
	type plain Result
	if r.Reasons == nil {
		r.Reasons = []Reason{}
	}
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(struct {
		SchemaVersion int `json:"schema_version"`
		plain
	}{1, plain(r)}); err != nil {
		t.Fatal(err)
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n"))
}

// Property: AppendJSON writes what encoding/json writes, for any command
// and reason text (control characters, invalid UTF-8, U+2028, < > &).
func FuzzAppendJSON(f *testing.F) {
	for _, s := range []string{"ls -la", "a\x00b\x1f\"\\<>&", "\xff\xfe", "\u2028\u2029", "\b\f\n\r\t", "héllo ✓"} {
		f.Add(s, s)
	}
	f.Fuzz(func(t *testing.T, cmd, detail string) {
		for _, r := range []Result{
			Classify(cmd),
			{Command: cmd, Intent: WriteOrUnknown, Reasons: []Reason{{Code: CodeDestructive, Detail: detail}, {Code: CodeEval, Detail: cmd}}, SuggestedRewrite: detail, AutoRecoverable: true},
		} {
			got, want := r.AppendJSON(nil), reflectJSON(t, r)
			if !bytes.Equal(got, want) {
				t.Fatalf("AppendJSON\n%s\nencoding/json\n%s", got, want)
			}
		}
	})
}

func TestAppendJSONCorpus(t *testing.T) {
	for _, c := range loadCorpus(t, "testdata/commands.jsonl") {
		r := Classify(c.Cmd)
		if got, want := r.AppendJSON(nil), reflectJSON(t, r); !bytes.Equal(got, want) {
			t.Errorf("%q:\n%s\n%s", c.Cmd, got, want)
		}
	}
}

// TestPlainWord: the eight-byte test never passes a byte that needs
// escaping or a second look, in any position, whatever its neighbours.
func TestPlainWord(t *testing.T) {
	for _, fill := range []byte{'a', ' ', '~', 0x7f, '!', '#', '[', ']'} {
		for b := 0; b < 256; b++ {
			for pos := 0; pos < 8; pos++ {
				var v uint64
				for i := 0; i < 8; i++ {
					c := uint64(fill)
					if i == pos {
						c = uint64(b)
					}
					v |= c << (8 * i)
				}
				plain := b < 0x80 && jsonPlain[b]
				if got := plainWord(v); got && !plain {
					t.Fatalf("byte %#x at %d among %q: plain", b, pos, fill)
				} else if !got && plain {
					t.Errorf("byte %#x at %d among %q: not plain", b, pos, fill)
				}
			}
		}
	}
}
