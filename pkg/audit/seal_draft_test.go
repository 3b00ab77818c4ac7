package audit

import (
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"
)

// Draft.Seal must give byte for byte the record Seal gives: the stored body
// and its hash are the chain (DESIGN §6).
func TestDraftSealMatchesSeal(t *testing.T) {
	var full Event
	fill(t, reflect.ValueOf(&full).Elem(), "e")
	full.EventID = "evt-full"
	// Member names that sort before, between and after the chain members,
	// also by UTF-16 code units (U+1F600 is a surrogate pair, which sorts
	// before U+FFFD), nested where a naive search would find them.
	tricky := json.RawMessage(`{"seq":1,"prev_hash":"x","timestamp":"t","prev_hash0":[{"seq":2}],` +
		`"pr":"\"prev_hash\":\"","sep":"\\","seq\u00e9":{"a":"}"},"\ud83d\ude00":"]","\ufffd":null,"zz":[]}`)
	cases := map[string]Event{
		"sample":      sampleEvent(7),
		"every field": full,
		"minimal":     {EventID: "evt-1"},
		"only before prev_hash": {EventID: "e", ActionClass: "read", Agent: "a", EventType: "x",
			Outcome: &Outcome{Status: "seq"}, PolicyDecision: tricky},
		"only after timestamp": {EventID: "e", TraceID: "t", Tool: &Tool{Name: "n", Parameters: tricky, Result: `"seq":1,"timestamp":"`}},
		"between the chain members": {EventID: "e", Principal: &Principal{UserID: `"prev_hash":`, Roles: []string{"}"}},
			Resource: &Resource{Name: `\`, Tags: []string{"\"", "seq"}}, SessionID: `"timestamp":"x"`},
		"nested chain names in data": {EventID: "e", Data: tricky, ApprovalID: "ap\\"},
		"escapes and invalid utf-8":  {EventID: "e", Tool: &Tool{RawCommand: "a\"b\\\x00\xff", Error: "\u2028"}, ApprovalID: "\xc3"},
		"long result":                {EventID: "e", Tool: &Tool{Result: strings.Repeat("é", MaxResult+3)}},
	}
	prev := strings.Repeat("0f", 32)
	at := time.Date(2026, 3, 9, 15, 4, 5, 6, time.FixedZone("X", 3600))
	for name, e := range cases {
		t.Run(name, func(t *testing.T) {
			for _, seq := range []int64{1, 9, 10, 123456789, maxSafeInteger} {
				checkDraftSeal(t, e, seq, prev, at)
			}
		})
	}
}

// Random events built from pieces that stress the splice.
func TestDraftSealMatchesSealRandom(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	texts := []string{"", "a", "seq", "prev_hash", `"seq":1`, `","prev_hash":"`, "\\", "\"", "}", "]", "{", "é", "\U0001F600", "\x7f", "\n"}
	raws := []string{"", "null", "1e2", `"seq"`, `[{"seq":0}]`, `{"timestamp":{"prev_hash":[]}}`,
		`{"\uffff":1,"\ud800\udc00":2,"a":{"seq":"}"}}`, `{"z":"\\","a":"\""}`}
	pick := func(list []string) string { return list[r.IntN(len(list))] + list[r.IntN(len(list))] }
	for i := range 500 {
		e := Event{
			EventID: fmt.Sprintf("evt-%d%s", i, pick(texts)), EventType: pick(texts), TraceID: pick(texts),
			SessionID: pick(texts), Agent: pick(texts), ActionClass: pick(texts), ApprovalID: pick(texts),
			Data: json.RawMessage(raws[r.IntN(len(raws))]), PolicyDecision: json.RawMessage(raws[r.IntN(len(raws))]),
		}
		if r.IntN(2) == 0 {
			e.Tool = &Tool{Name: pick(texts), Parameters: json.RawMessage(raws[r.IntN(len(raws))]),
				Result: pick(texts), DurationMS: r.Int64N(1 << 40)}
		}
		if r.IntN(2) == 0 {
			e.Principal = &Principal{UserID: pick(texts), Roles: []string{pick(texts)}}
		}
		seq := 1 + r.Int64N(maxSafeInteger)
		prev := Hash([]byte(e.EventID))
		at := time.Unix(r.Int64N(1<<34), r.Int64N(1e9))
		checkDraftSeal(t, e, seq, prev, at)
	}
}

// checkDraftSeal compares Prepare+Draft.Seal with Seal for one event.
func checkDraftSeal(t *testing.T, e Event, seq int64, prev string, at time.Time) {
	t.Helper()
	d, err := Prepare(clone(e))
	if err != nil {
		t.Fatalf("Prepare: %v", err)
	}
	got, err := d.Seal(seq, prev, at)
	if err != nil {
		t.Fatalf("Draft.Seal: %v", err)
	}
	orig := clone(e)
	want, err := Seal(&orig, seq, prev, at)
	if err != nil {
		t.Fatalf("Seal: %v", err)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("seq %d: Draft.Seal differs from Seal:\n got %+v\n     %s\nwant %+v\n     %s", seq, got, got.Body, want, want.Body)
	}
}

// clone copies e deeply enough that Seal's edits do not reach the original.
func clone(e Event) Event {
	if e.Tool != nil {
		tool := *e.Tool
		e.Tool = &tool
	}
	return e
}

// Prepare and Draft.Seal refuse what Seal refuses, with the same errors.
func TestDraftSealRefuses(t *testing.T) {
	tests := []struct {
		name string
		edit func(*Event)
		seq  int64
		prev string
		at   time.Time
	}{
		{"no event id", func(e *Event) { e.EventID = "" }, 1, ZeroHash, t0},
		{"invalid utf-8 session", func(e *Event) { e.SessionID = "\xff" }, 1, ZeroHash, t0},
		{"invalid utf-8 tool name", func(e *Event) { e.Tool.Name = "\xff" }, 1, ZeroHash, t0},
		{"bad parameters", func(e *Event) { e.Tool.Parameters = json.RawMessage(`{"a":1,"a":2}`) }, 1, ZeroHash, t0},
		{"bad policy decision", func(e *Event) { e.PolicyDecision = json.RawMessage(`[`) }, 1, ZeroHash, t0},
		{"bad data", func(e *Event) { e.Data = json.RawMessage(`1 2`) }, 1, ZeroHash, t0},
		{"seq zero", func(*Event) {}, 0, ZeroHash, t0},
		{"seq beyond 2^53", func(*Event) {}, maxSafeInteger + 1, ZeroHash, t0},
		{"upper-case prev", func(*Event) {}, 1, strings.Repeat("AB", 32), t0},
		{"year 10000", func(*Event) {}, 1, ZeroHash, time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			e := sampleEvent(1)
			tt.edit(&e)
			orig := clone(e)
			_, want := Seal(&orig, tt.seq, tt.prev, tt.at)
			if want == nil {
				t.Fatal("Seal accepted it")
			}
			d, err := Prepare(clone(e))
			if err == nil {
				_, err = d.Seal(tt.seq, tt.prev, tt.at)
			}
			if err == nil || err.Error() != want.Error() {
				t.Errorf("error %v, want %v (Seal's)", err, want)
			}
		})
	}
}

// Prepare leaves the caller's event alone: auditd's writer may seal a
// request's event again after a failed batch.
func TestPrepareKeepsTheEvent(t *testing.T) {
	e := sampleEvent(1)
	e.Tool.Result = strings.Repeat("x", MaxResult+1)
	e.Tool.Parameters = json.RawMessage(` {"b":1, "a":2} `)
	before := clone(e)
	if _, err := Prepare(e); err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(*e.Tool, *before.Tool) {
		t.Errorf("Prepare edited the tool: %+v", e.Tool)
	}
}

func TestLocateMembers(t *testing.T) {
	tests := []struct {
		body string
		want string // the three values, space-separated; "" for an error
	}{
		{`{"prev_hash":"","seq":0,"timestamp":"t"}`, `"" 0 "t"`},
		{`{"a":{"seq":1},"prev_hash":"p","s":[1,{"x":"]"}],"seq":2,"t":"\"","timestamp":"3","z":null}`, `"p" 2 "3"`},
		{`{"a":"\"prev_hash\":\"x\"","prev_hash":"p","seq":1,"timestamp":"t"}`, `"p" 1 "t"`},
		{`{"prev_hash":"p","seq":1}`, ""},
		{`{"data":{"prev_hash":"p","seq":1,"timestamp":"t"}}`, ""},
	}
	for _, tt := range tests {
		at, err := locateMembers([]byte(tt.body))
		got := ""
		if err == nil {
			b := tt.body
			got = b[at[0].start:at[0].end] + " " + b[at[1].start:at[1].end] + " " + b[at[2].start:at[2].end]
		}
		if got != tt.want {
			t.Errorf("locateMembers(%s) = %q (%v), want %q", tt.body, got, err, tt.want)
		}
	}
}

// BenchmarkDraftSeal is auditd's writer per event since the handlers
// prepare events: compare BenchmarkSeal.
func BenchmarkDraftSeal(b *testing.B) {
	d, err := Prepare(sampleEvent(1))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	prev := ZeroHash
	for i := range b.N {
		rec, err := d.Seal(int64(i+1), prev, t0)
		if err != nil {
			b.Fatal(err)
		}
		prev = rec.EventHash
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "events/s")
}

// BenchmarkPrepare is the part of sealing that auditd's handlers do.
func BenchmarkPrepare(b *testing.B) {
	e := sampleEvent(1)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Prepare(e); err != nil {
			b.Fatal(err)
		}
	}
}
