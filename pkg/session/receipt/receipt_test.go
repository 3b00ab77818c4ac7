package receipt

import (
	"bytes"
	"encoding/json"
	"errors"
	"reflect"
	"strings"
	"testing"
)

// testKey is the 32-byte key of the known-answer vector (and of
// testdata/script/gate_receipt.txtar): 31 characters and a newline.
var testKey = []byte("0123456789abcdef0123456789abcde\n")

func sample() Receipt {
	return Receipt{
		ReceiptID: "rcpt_00112233aabbccdd",
		SessionID: "s-1",
		TurnID:    "t-1",
		AgentID:   "writer",
		ToolID:    "file_locator",
		CallID:    "c-1",
		OK:        true,
		Inputs:    json.RawMessage(`{"search_criteria":"Story/SCN-outline.md","max_results":12}`),
		Outputs:   "Story/SCN-outline.md\n",
		SHA256:    "2d2d",
		FullSize:  21,
		FileRefs:  []FileRef{{Path: "Story/SCN-outline.md", ExcerptSHA256: "abcd"}},
		Timestamp: "2026-03-08T07:00:00.000000001Z",
	}
}

// TestKnownAnswer pins the signed bytes: a change to the encoding breaks
// every receipt already written, and must be a new domain version. The
// value was computed independently (Python hmac over the encoding the
// package doc describes), so it checks the doc as well as the code.
func TestKnownAnswer(t *testing.T) {
	r := sample()
	Sign(&r, testKey)
	const want = "f4c626042d2e69780bb1d487d346e2c5f947933ab6c3d0bcbec39e49650d6e36"
	if r.Signature != want {
		t.Errorf("signature %s, want %s", r.Signature, want)
	}
	if r.SignatureAlg != "HMAC-SHA256" {
		t.Errorf("alg %q", r.SignatureAlg)
	}
	if string(r.Inputs) != `{"max_results":12,"search_criteria":"Story/SCN-outline.md"}` {
		t.Errorf("inputs not canonical: %s", r.Inputs)
	}
}

func TestSignVerify(t *testing.T) {
	r := sample()
	Sign(&r, testKey)
	if err := Verify(r, testKey); err != nil {
		t.Fatalf("fresh receipt: %v", err)
	}
	for _, tc := range []struct {
		name string
		edit func(*Receipt)
		key  []byte
		want error
	}{
		{"wrong key", func(*Receipt) {}, []byte("another key of thirty-two bytes!"), ErrBadSignature},
		{"empty key", func(*Receipt) {}, nil, ErrNoKey},
		{"unknown alg", func(r *Receipt) { r.SignatureAlg = "HMAC-SHA1" }, testKey, ErrUnknownAlg},
		{"alg case", func(r *Receipt) { r.SignatureAlg = "hmac-sha256" }, testKey, ErrUnknownAlg},
		{"no alg", func(r *Receipt) { r.SignatureAlg = "" }, testKey, ErrUnknownAlg},
		{"short signature", func(r *Receipt) { r.Signature = r.Signature[:62] }, testKey, ErrBadSignature},
		{"upper-case hex", func(r *Receipt) { r.Signature = strings.ToUpper(r.Signature) }, testKey, nil},
		{"not hex", func(r *Receipt) { r.Signature = "zz" + r.Signature[2:] }, testKey, ErrBadSignature},
		{"empty signature", func(r *Receipt) { r.Signature = "" }, testKey, ErrBadSignature},
		{"inputs respaced", func(r *Receipt) {
			r.Inputs = json.RawMessage(" {\"search_criteria\" : \"Story/SCN-outline.md\",\n \"max_results\":12} ")
		}, testKey, nil},
		{"inputs number respelled", func(r *Receipt) {
			r.Inputs = json.RawMessage(`{"max_results":12.0,"search_criteria":"Story/SCN-outline.md"}`)
		}, testKey, ErrBadSignature},
		{"inputs duplicate key", func(r *Receipt) {
			r.Inputs = json.RawMessage(`{"max_results":1,"max_results":12,"search_criteria":"Story/SCN-outline.md"}`)
		}, testKey, ErrBadSignature},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := r
			c.FileRefs = append([]FileRef(nil), r.FileRefs...)
			tc.edit(&c)
			if err := Verify(c, tc.key); !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("Verify = %v, want %v", err, tc.want)
			}
		})
	}
}

// TestEveryFieldIsSigned changes each field of a signed receipt in turn,
// found by reflection so that a field added later is covered too (G-18).
func TestEveryFieldIsSigned(t *testing.T) {
	signed := sample()
	Sign(&signed, testKey)
	typ := reflect.TypeOf(signed)
	for i := 0; i < typ.NumField(); i++ {
		f := typ.Field(i)
		var edits []func(v reflect.Value)
		switch f.Type.Kind() {
		case reflect.String:
			edits = append(edits,
				func(v reflect.Value) { v.SetString(v.String() + "x") },
				func(v reflect.Value) {
					if v.String() == "" {
						v.SetString(" ")
					} else {
						v.SetString("")
					}
				})
		case reflect.Bool:
			edits = append(edits, func(v reflect.Value) { v.SetBool(!v.Bool()) })
		case reflect.Int:
			edits = append(edits, func(v reflect.Value) { v.SetInt(v.Int() + 1) }, func(v reflect.Value) { v.SetInt(-v.Int()) })
		case reflect.Slice:
			if f.Type == reflect.TypeOf(json.RawMessage(nil)) {
				edits = append(edits,
					func(v reflect.Value) {
						v.SetBytes([]byte(`{"max_results":13,"search_criteria":"Story/SCN-outline.md"}`))
					},
					func(v reflect.Value) { v.SetBytes(nil) })
			} else {
				edits = append(edits,
					func(v reflect.Value) {
						v.Set(reflect.ValueOf([]FileRef{{Path: "Story/other.md", ExcerptSHA256: "abcd"}}))
					},
					func(v reflect.Value) {
						v.Set(reflect.ValueOf([]FileRef{{Path: "Story/SCN-outline.md", ExcerptSHA256: "abce"}}))
					},
					func(v reflect.Value) { v.Set(reflect.ValueOf([]FileRef(nil))) },
					func(v reflect.Value) {
						v.Set(reflect.ValueOf([]FileRef{{Path: "Story/SCN-outline.md", ExcerptSHA256: "abcd"}, {}}))
					},
					// Bytes moved between a ref's two strings.
					func(v reflect.Value) {
						v.Set(reflect.ValueOf([]FileRef{{Path: "Story/SCN-outline.mda", ExcerptSHA256: "bcd"}}))
					})
			}
		default:
			t.Fatalf("field %s: kind %s has no edit: extend this test", f.Name, f.Type.Kind())
		}
		for j, edit := range edits {
			c := signed
			c.FileRefs = append([]FileRef(nil), signed.FileRefs...)
			edit(reflect.ValueOf(&c).Elem().Field(i))
			err := Verify(c, testKey)
			switch {
			case f.Name == "SignatureAlg":
				if !errors.Is(err, ErrUnknownAlg) {
					t.Errorf("%s edit %d: %v, want unknown alg", f.Name, j, err)
				}
			case !errors.Is(err, ErrBadSignature):
				t.Errorf("%s edit %d: %v, want bad signature", f.Name, j, err)
			}
		}
	}
}

// TestFieldBoundaries: bytes moved from one field to the next change the
// signature (the length prefixes make the encoding unambiguous).
func TestFieldBoundaries(t *testing.T) {
	a, b := sample(), sample()
	a.SessionID, a.TurnID = "s-1t", "-1"
	b.SessionID, b.TurnID = "s-1", "t-1"
	Sign(&a, testKey)
	Sign(&b, testKey)
	if a.Signature == b.Signature {
		t.Fatal("moving a byte between fields kept the signature")
	}
	a, b = sample(), sample()
	a.Outputs, a.Excerpt = "", "Story/SCN-outline.md\n"
	Sign(&a, testKey)
	if a.Signature == b.Signature {
		t.Fatal("outputs and excerpt share a signature")
	}
}

// TestJSONRoundTrip: what Sign produces verifies after encoding/json
// writes and reads it, however awkward the strings, and after the JSON is
// re-indented.
func TestJSONRoundTrip(t *testing.T) {
	for _, inputs := range []string{
		"{\"q\": \"<script>\", \"z\":[1, 2 ,{\"b\":null,\"a\":true}]}",
		"\xff{not json",
		`{"a":1,"a":2}`,
		`"\u2028\ufffd"`,
		"",
	} {
		r := sample()
		r.Outputs = "a<b>&c \u2028 \xff\xfe tail \x00"
		r.Error = "bad \xc3"
		r.Inputs = json.RawMessage(inputs)
		r.FileRefs[0].Path = "caf\xe9.md"
		Sign(&r, testKey)
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		for _, data := range [][]byte{b, indent(t, b)} {
			got, err := Parse(data)
			if err != nil {
				t.Fatalf("Parse: %v\n%s", err, data)
			}
			if err := Verify(got, testKey); err != nil {
				t.Errorf("inputs %q: round trip: %v\n%s", inputs, err, data)
			}
		}
	}
}

func indent(t *testing.T, b []byte) []byte {
	var buf bytes.Buffer
	if err := json.Indent(&buf, b, "", "    "); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func TestSignKeepsCallerIDs(t *testing.T) {
	r := Receipt{}
	Sign(&r, testKey)
	if r.ReceiptID != "" || r.Timestamp != "" {
		t.Errorf("Sign invented id %q or time %q", r.ReceiptID, r.Timestamp)
	}
	if string(r.Inputs) != "null" {
		t.Errorf("empty inputs signed as %s", r.Inputs)
	}
	if err := Verify(r, testKey); err != nil {
		t.Error(err)
	}
}

func TestIsID(t *testing.T) {
	for id, want := range map[string]bool{
		"rcpt_00112233aabbccdd":  true,
		"rcpt_00112233AABBCCDD":  false,
		"rcpt_00112233aabbccd":   false,
		"rcpt_00112233aabbccdde": false,
		"rcpt_00112233aabbccdg":  false,
		"rcpX_00112233aabbccdd":  false,
		"":                       false,
		"receipt-1":              false,
	} {
		if got := IsID(id); got != want {
			t.Errorf("IsID(%q) = %v", id, got)
		}
	}
}

func TestExcerpt(t *testing.T) {
	const emptySHA = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
	for _, tc := range []struct {
		name      string
		out       string
		limit     int
		want      string
		truncated bool
	}{
		{"fits", "hello", 5, "hello", false},
		{"cut ascii", "hello", 3, "hel", true},
		{"empty", "", 10, "", false},
		{"zero limit", "hello", 0, "", true},
		{"negative limit", "hello", -1, "", true},
		{"before 2-byte char", "abé", 2, "ab", true},
		{"inside 2-byte char", "abé", 3, "ab", true},
		{"after 2-byte char", "abéz", 4, "abé", true},
		{"inside 3-byte char", "a€b", 2, "a", true},
		{"inside 3-byte char late", "a€b", 3, "a", true},
		{"inside 4-byte char", "a😀b", 4, "a", true},
		{"whole 4-byte char", "a😀b", 5, "a😀", true},
		{"first char split", "😀", 2, "", true},
		{"not utf-8", "\x80\x80\x80\x80\x80\x80", 4, "\x80\x80\x80\x80", true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, sum, full, trunc := Excerpt([]byte(tc.out), tc.limit)
			if got != tc.want || trunc != tc.truncated || full != len(tc.out) {
				t.Errorf("Excerpt = %q %v %d, want %q %v %d", got, trunc, full, tc.want, tc.truncated, len(tc.out))
			}
			if len(got) > max(tc.limit, 0) && tc.truncated {
				t.Errorf("excerpt of %d bytes over the limit %d", len(got), tc.limit)
			}
			if tc.out == "" && sum != emptySHA {
				t.Errorf("sha256 of nothing = %s", sum)
			}
			if len(sum) != 64 {
				t.Errorf("sha256 %q", sum)
			}
		})
	}
}

func TestCanonical(t *testing.T) {
	for in, want := range map[string]string{
		``:                         `null`,
		`  `:                       `null`,
		`{"b":1, "a" : [1,2]}`:     `{"a":[1,2],"b":1}`,
		`{"a":{"d":1,"c":2}}`:      `{"a":{"c":2,"d":1}}`,
		`"<&>"`:                    `"\u003c\u0026\u003e"`,
		`"\u003c"`:                 `"\u003c"`,
		`"\u00e9"`:                 `"é"`,
		`1.50`:                     `1.50`,
		`[true,false,null]`:        `[true,false,null]`,
		`{"a":1,"a":2}`:            `"{\"a\":1,\"a\":2}"`,
		`{"a":1} {"b":2}`:          `"{\"a\":1} {\"b\":2}"`,
		`{"a":`:                    `"{\"a\":"`,
		`not json`:                 `"not json"`,
		"\xff":                     "\"\uFFFD\"",
		strings.Repeat("[", 300):   `"` + strings.Repeat("[", 300) + `"`,
		`{"":0,"é":1,"e":2,"E":3}`: `{"":0,"E":3,"e":2,"é":1}`,
	} {
		if got := string(Canonical(json.RawMessage(in))); got != want {
			t.Errorf("Canonical(%q) = %s, want %s", in, got, want)
		}
	}
}

func TestParse(t *testing.T) {
	r := sample()
	Sign(&r, testKey)
	good, _ := json.Marshal(r)
	replace := func(old, new string) string { return strings.Replace(string(good), old, new, 1) }
	for _, tc := range []struct {
		name, data, want string
	}{
		{"good", string(good), ""},
		{"not json", "{", "invalid JSON"},
		{"array", "[]", "not a JSON object"},
		{"unknown field", replace(`{"receipt_id"`, `{"approved":true,"receipt_id"`), `unknown field "approved"`},
		{"case variant", replace(`"tool_id"`, `"Tool_ID"`), `unknown field "Tool_ID"`},
		{"duplicate", replace(`{"receipt_id"`, `{"tool_id":"rm","receipt_id"`), `duplicate field "tool_id"`},
		{"missing signature", replace(`,"signature":"`+r.Signature+`"`, ""), `missing field "signature"`},
		{"missing alg", replace(`,"signature_alg":"HMAC-SHA256"`, ""), `missing field "signature_alg"`},
		{"wrong type", replace(`"full_size":21`, `"full_size":"21"`), `field "full_size"`},
		{"ref unknown key", replace(`"excerpt_sha256":"abcd"`, `"excerpt_sha256":"abcd","x":1`), `unknown field "file_refs[0].x"`},
		{"ref not object", replace(`[{"path":"Story/SCN-outline.md","excerpt_sha256":"abcd"}]`, `[1]`), `field "file_refs[0]": want an object`},
		{"refs not array", replace(`[{"path":"Story/SCN-outline.md","excerpt_sha256":"abcd"}]`, `{}`), `field "file_refs"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := Parse([]byte(tc.data))
			if tc.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				if err := Verify(got, testKey); err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("Parse error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestFieldsMatchStruct keeps Parse's list of names in step with the
// struct's JSON tags.
func TestFieldsMatchStruct(t *testing.T) {
	typ := reflect.TypeOf(Receipt{})
	if typ.NumField() != len(fields) {
		t.Errorf("%d struct fields, %d names", typ.NumField(), len(fields))
	}
	for i := 0; i < typ.NumField(); i++ {
		if tag := typ.Field(i).Tag.Get("json"); !fields[tag] {
			t.Errorf("field %s: tag %q not in fields", typ.Field(i).Name, tag)
		}
	}
}

func BenchmarkSignVerify(b *testing.B) {
	r := sample()
	r.Excerpt = strings.Repeat("x", 2000)
	// As the reducer writes them: json.Marshal of the args map, keys sorted.
	r.Inputs = json.RawMessage(`{"max_results":12,"search_criteria":"Story/SCN-outline.md"}`)
	b.ReportAllocs()
	for b.Loop() {
		c := r
		Sign(&c, testKey)
		if err := Verify(c, testKey); err != nil {
			b.Fatal(err)
		}
	}
}
