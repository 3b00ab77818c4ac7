package audit

import (
	"encoding/json"
	"errors"
	"math"
	"strconv"
	"strings"
	"testing"
)

// RFC 8785 Appendix B: IEEE 754 doubles and their ECMAScript serialization.
func TestAppendNumberRFC8785AppendixB(t *testing.T) {
	tests := []struct {
		bits uint64
		want string
	}{
		{0x0000000000000000, "0"},
		{0x8000000000000000, "0"}, // -0
		{0x0000000000000001, "5e-324"},
		{0x8000000000000001, "-5e-324"},
		{0x7fefffffffffffff, "1.7976931348623157e+308"},
		{0xffefffffffffffff, "-1.7976931348623157e+308"},
		{0x4340000000000000, "9007199254740992"},
		{0xc340000000000000, "-9007199254740992"},
		{0x4430000000000000, "295147905179352830000"},
		{0x44b52d02c7e14af5, "9.999999999999997e+22"},
		{0x44b52d02c7e14af6, "1e+23"},
		{0x44b52d02c7e14af7, "1.0000000000000001e+23"},
		{0x444b1ae4d6e2ef4e, "999999999999999700000"},
		{0x444b1ae4d6e2ef4f, "999999999999999900000"},
		{0x444b1ae4d6e2ef50, "1e+21"},
		{0x3eb0c6f7a0b5ed8c, "9.999999999999997e-7"},
		{0x3eb0c6f7a0b5ed8d, "0.000001"},
		{0x41b3de4355555553, "333333333.3333332"},
		{0x41b3de4355555554, "333333333.33333325"},
		{0x41b3de4355555555, "333333333.3333333"},
		{0x41b3de4355555556, "333333333.3333334"},
		{0x41b3de4355555557, "333333333.33333343"},
		{0xbecbf647612f3696, "-0.0000033333333333333333"},
		{0x43143ff3c1cb0959, "1424953923781206.2"},
	}
	for _, tt := range tests {
		f := math.Float64frombits(tt.bits)
		if got := string(appendNumber(nil, f)); got != tt.want {
			t.Errorf("%016x (%g): got %s, want %s", tt.bits, f, got, tt.want)
		}
		// The same through the parser: the expected text is its own
		// canonical form.
		if got, err := CanonicalizeJSON([]byte(tt.want)); err != nil || string(got) != tt.want {
			t.Errorf("CanonicalizeJSON(%s) = %s, %v", tt.want, got, err)
		}
	}
}

// Where ECMAScript and strconv's 'g' format part ways.
func TestAppendNumberExponentRules(t *testing.T) {
	tests := []struct {
		in   float64
		want string
	}{
		{1, "1"},
		{-1.5, "-1.5"},
		{0.1, "0.1"},
		{1e-6, "0.000001"},
		{1e-7, "1e-7"},
		{1.5e-7, "1.5e-7"},
		{1.25e-6, "0.00000125"},
		{123e18, "123000000000000000000"},
		{1e20, "100000000000000000000"},
		{1e21, "1e+21"},
		{1.5e21, "1.5e+21"},
		{1e100, "1e+100"},
		{12345678.9, "12345678.9"},
		{9007199254740991, "9007199254740991"},
		{1 << 60, "1152921504606847000"},
		{4.5, "4.5"},
		{2e-3, "0.002"},
	}
	for _, tt := range tests {
		if got := string(appendNumber(nil, tt.in)); got != tt.want {
			t.Errorf("%v: got %s, want %s (strconv 'g': %s)", tt.in, got, tt.want, strconv.FormatFloat(tt.in, 'g', -1, 64))
		}
	}
}

func TestCanonicalizeJSON(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{
			// RFC 8785 §3.2.2 (its numbers, strings and literals).
			name: "rfc 8785 sample",
			in: `{
  "numbers": [333333333.33333329, 1E30, 4.50, 2e-3, 0.000000000000000000000000001],
  "string": "\u20ac$\u000F\u000aA'\u0042\u0022\u005c\\\"\/",
  "literals": [null, true, false]
}`,
			want: `{"literals":[null,true,false],"numbers":[333333333.3333333,1e+30,4.5,0.002,1e-27],"string":"€$\u000f\nA'B\"\\\\\"/"}`,
		},
		{
			// RFC 8785 §3.2.3: names sort by UTF-16 code units, so the
			// emoji (a surrogate pair, D83D…) comes before U+FB33.
			name: "rfc 8785 sorting",
			in: `{
  "\u20ac": "Euro Sign",
  "\r": "Carriage Return",
  "\ufb33": "Hebrew Letter Dalet With Dagesh",
  "1": "One",
  "\ud83d\ude00": "Emoji: Grinning Face",
  "\u0080": "Control",
  "\u00f6": "Latin Small Letter O With Diaeresis"
}`,
			want: "{\"\\r\":\"Carriage Return\",\"1\":\"One\",\"\u0080\":\"Control\",\"ö\":\"Latin Small Letter O With Diaeresis\"," +
				"\"€\":\"Euro Sign\",\"😀\":\"Emoji: Grinning Face\",\"\ufb33\":\"Hebrew Letter Dalet With Dagesh\"}",
		},
		{name: "nested objects sort too", in: `{"b":{"z":1,"a":[{"y":2,"x":1}]},"a":null}`, want: `{"a":null,"b":{"a":[{"x":1,"y":2}],"z":1}}`},
		{name: "html and line separators stay literal", in: `"\u003c\u003e\u0026 \u2028\u2029 <>&"`, want: "\"<>& \u2028\u2029 <>&\""},
		{name: "control characters", in: `"\u0000\u0001\b\t\n\f\r\u001f\u007f"`, want: "\"\\u0000\\u0001\\b\\t\\n\\f\\r\\u001f\u007f\""},
		{name: "solidus unescaped", in: `"a\/b"`, want: `"a/b"`},
		{name: "whitespace", in: " \t\r\n[ 1 , { } , [ ] ]\n", want: `[1,{},[]]`},
		{name: "negative zero", in: `[-0, -0.0, 0e10]`, want: `[0,0,0]`},
		{name: "big integers lose precision as doubles", in: `9007199254740993`, want: `9007199254740992`},
		{name: "underflow is zero", in: `1e-400`, want: `0`},
		{name: "prefix names sort first", in: `{"ab":1,"a":2,"":3}`, want: `{"":3,"a":2,"ab":1}`},
		{name: "emoji before private use area", in: `{"\ue000":1,"\ud800\udc00":2}`, want: "{\"\U00010000\":2,\"\ue000\":1}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalizeJSON([]byte(tt.in))
			if err != nil {
				t.Fatal(err)
			}
			if string(got) != tt.want {
				t.Errorf("got  %s\nwant %s", got, tt.want)
			}
			again, err := CanonicalizeJSON(got)
			if err != nil || string(again) != string(got) {
				t.Errorf("not idempotent: %s, %v", again, err)
			}
		})
	}
}

func TestCanonicalizeJSONRefuses(t *testing.T) {
	tests := []struct {
		name, in, want string
	}{
		{"empty", ``, "unexpected end of input"},
		{"duplicate name", `{"a":1,"b":2,"a":3}`, `duplicate member name "a"`},
		{"duplicate after unescaping", `{"a":1,"\u0061":2}`, `duplicate member name "a"`},
		{"nested duplicate", `[{"x":{"k":1,"k":1}}]`, `duplicate member name "k"`},
		{"trailing data", `{} {}`, "unexpected data after the JSON value"},
		{"trailing comma", `[1,]`, "unexpected character"},
		{"trailing comma in object", `{"a":1,}`, "expected a member name"},
		{"single quotes", `{'a':1}`, "expected a member name"},
		{"infinity", `1e400`, "out of the range"},
		{"negative infinity", `-1e400`, "out of the range"},
		{"NaN", `NaN`, "unexpected character"},
		{"leading zero", `01`, "unexpected data"},
		{"leading plus", `+1`, "unexpected character"},
		{"bare fraction", `1.`, "invalid number"},
		{"bare exponent", `1e`, "invalid number"},
		{"lone high surrogate", `"\ud800"`, "lone high surrogate"},
		{"high then not low", `"\ud800\u0041"`, "lone high surrogate"},
		{"lone low surrogate", `"\udc00"`, "lone low surrogate"},
		{"invalid utf-8", "\"\xff\"", "invalid UTF-8"},
		{"encoded surrogate", "\"\xed\xa0\x80\"", "invalid UTF-8"},
		{"raw control character", "\"a\nb\"", "control character"},
		{"bad escape", `"\x"`, "invalid escape"},
		{"short unicode escape", `"\u12"`, `invalid \u escape`},
		{"unterminated", `"abc`, "unterminated string"},
		{"unterminated object", `{"a":1`, "unexpected end of input in object"},
		{"bad literal", `tru`, "invalid literal"},
		{"too deep", strings.Repeat("[", 1001) + strings.Repeat("]", 1001), "nesting deeper than 1000"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := CanonicalizeJSON([]byte(tt.in))
			if err == nil {
				t.Fatalf("accepted, gave %s", got)
			}
			var se *SyntaxError
			if !errors.As(err, &se) {
				t.Errorf("error %T, want *SyntaxError", err)
			}
			if !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q lacks %q", err, tt.want)
			}
		})
	}
	// Deep but within bounds is fine.
	if _, err := CanonicalizeJSON([]byte(strings.Repeat("[", 1000) + strings.Repeat("]", 1000))); err != nil {
		t.Errorf("depth 1000: %v", err)
	}
}

func TestDuplicateNameIsQuotedAndBounded(t *testing.T) {
	long := strings.Repeat("k", 500)
	_, err := CanonicalizeJSON([]byte(`{"` + long + `":1,"` + long + `":2}`))
	if err == nil || len(err.Error()) > 150 {
		t.Errorf("error %q: want a short one", err)
	}
}

func TestCanonical(t *testing.T) {
	v := struct {
		B string          `json:"b"`
		A float64         `json:"a"`
		R json.RawMessage `json:"r"`
	}{B: "<x>&", A: 1e21, R: json.RawMessage(`{"z": 1, "y": [true]}`)}
	got, err := Canonical(v)
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"a":1e+21,"b":"<x>&","r":{"y":[true],"z":1}}`; string(got) != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	if _, err := Canonical(math.Inf(1)); err == nil {
		t.Error("Canonical(+Inf) succeeded")
	}
}

func TestCompareNames(t *testing.T) {
	ordered := []string{"", "\r", "1", "A", "a", "ab", "\u0080", "ö", "€", "\ud7ff", "\U00010000", "😀", "\U0010ffff", "\ue000", "\ufb33", "\uffff"}
	for i := range ordered {
		for j := range ordered {
			got := compareNames(ordered[i], ordered[j])
			switch {
			case i < j && got >= 0, i > j && got <= 0, i == j && got != 0:
				t.Errorf("compareNames(%q, %q) = %d", ordered[i], ordered[j], got)
			}
		}
	}
}
