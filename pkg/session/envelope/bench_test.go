package envelope

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkParse parses seed 002's file_locator example: a valid call with
// five args of four types, the llm_text hot path.
func BenchmarkParse(b *testing.B) {
	s := seedSchema(b)
	raw := example(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Parse(raw, nonce, s, false); rej != nil {
			b.Fatal(*rej)
		}
	}
}

// BenchmarkParseThinking is the same call behind a reasoning block.
func BenchmarkParseThinking(b *testing.B) {
	s := seedSchema(b)
	raw := "<think>The outline is probably in Story/. I should locate it first.</think>\n" + example(0)
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Parse(raw, nonce, s, false); rej != nil {
			b.Fatal(*rej)
		}
	}
}

// BenchmarkParseProse is a final answer scanned for tool-call attempts.
func BenchmarkParseProse(b *testing.B) {
	s := seedSchema(b)
	raw := "The outline lists 12 scenes; scene 4 contradicts the canon on the ship's name.\n" +
		"Evidence: \"The Meridian left port at dawn\" (Story/Scenes/scene4.md, line 12), receipt rcpt-0001"
	b.ReportAllocs()
	for b.Loop() {
		if msg, rej := Parse(raw, nonce, s, false); rej != nil || msg.Kind != Prose {
			b.Fatal(rej)
		}
	}
}

// BenchmarkParseManyArgs is a hostile call at the size limit, thousands of
// args: the duplicate-key check must stay linear.
func BenchmarkParseManyArgs(b *testing.B) {
	s := seedSchema(b)
	var args strings.Builder
	for i := 0; args.Len() < MaxMessageBytes-200; i++ {
		if i > 0 {
			args.WriteByte(',')
		}
		args.WriteString(`"` + strconv.Itoa(i) + `":0`)
	}
	raw := call("free_form", "{"+args.String()+"}")
	b.ReportAllocs()
	for b.Loop() {
		if _, rej := Parse(raw, nonce, s, false); rej != nil {
			b.Fatal(*rej)
		}
	}
}
