package receipt

import (
	"bytes"
	"encoding/json"
	"testing"
)

// FuzzCanonical: the canonical form is one valid JSON value, a fixed
// point (canonical of canonical is itself), the same whether the fast
// check takes it as it is or it is re-encoded, and survives encoding/json's
// re-encoding byte for byte, which is what lets a signed receipt verify
// after it is written out.
func FuzzCanonical(f *testing.F) {
	for _, s := range []string{`{"b":1,"a":[1,2,{"d":null,"c":"<x>"}]}`, `"\u2028\ud800"`, `{"a":1,"a":2}`, `1e400`, `-0.0`, "\xff", ``, `[`, `{"":{"":""}}`, `{"a":"\u2028"}`, "{\"a\":\"\u2028\"}", `{"b":1,"a":2}`, `{"a":1,"a":1}`, `{"a\n":1,"a":2}`, `["\b\f\u0001"]`} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, raw []byte) {
		c := Canonical(raw)
		if slow := canonicalSlow(raw); len(bytes.TrimSpace(raw)) > 0 && !bytes.Equal(c, slow) {
			t.Fatalf("Canonical(%q): fast path %s, slow path %s", raw, c, slow)
		}
		if !json.Valid(c) {
			t.Fatalf("Canonical(%q) = %q is not JSON", raw, c)
		}
		if again := Canonical(c); !bytes.Equal(again, c) {
			t.Fatalf("not a fixed point: %q → %q", c, again)
		}
		out, err := json.Marshal(struct {
			V json.RawMessage `json:"v"`
		}{c})
		if err != nil {
			t.Fatal(err)
		}
		if want := `{"v":` + string(c) + `}`; string(out) != want {
			t.Fatalf("encoding/json rewrote %s as %s", c, out)
		}
	})
}

// FuzzParse: no input panics; what Parse accepts re-encodes to JSON that
// Parse accepts again with the same verdict from Verify; a receipt that
// verifies stops verifying when its JSON is changed in a signed field.
func FuzzParse(f *testing.F) {
	r := sample()
	Sign(&r, testKey)
	good, _ := json.Marshal(r)
	f.Add(good)
	f.Add([]byte(`{"receipt_id":"rcpt_00112233aabbccdd","signature_alg":"HMAC-SHA256","signature":"00"}`))
	f.Add([]byte(`{"receipt_id":1}`))
	f.Add([]byte(`{"file_refs":[{"path":"a"}],"receipt_id":"r","signature_alg":"x","signature":"y"}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		got, err := Parse(data)
		if err != nil {
			if err.Error() == "" {
				t.Fatal("empty error")
			}
			return
		}
		verdict := Verify(got, testKey)
		again, err := json.Marshal(got)
		if err != nil {
			t.Fatal(err)
		}
		back, err := Parse(again)
		if err != nil {
			t.Fatalf("re-encoded receipt does not parse: %v\n%s", err, again)
		}
		if v := Verify(back, testKey); (v == nil) != (verdict == nil) {
			t.Fatalf("verdict changed over a round trip: %v then %v", verdict, v)
		}
		if verdict == nil {
			back.TurnID += "x"
			if Verify(back, testKey) == nil {
				t.Fatal("a changed turn_id still verifies")
			}
		}
	})
}
