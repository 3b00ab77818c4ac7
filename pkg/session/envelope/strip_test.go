package envelope

import "testing"

// TestStripThinking: seed 002's stripThinkingTags, with its orphan closing
// tag handling (G-25).
func TestStripThinking(t *testing.T) {
	for _, tc := range []struct{ name, in, want string }{
		{"no tags", "plain answer", "plain answer"},
		{"brackets that are no tags", "see [1] and <b>bold</b>", "see [1] and <b>bold</b>"},
		{"think block", "<think>plan</think>answer", "answer"},
		{"thinking block", "a<thinking>plan</thinking>b", "ab"},
		{"bracket thinking", "[thinking]plan[/thinking]answer", "answer"},
		{"bracket think", "[think]plan[/think]answer", "answer"},
		{"any case", "<THINK>plan</Think>answer", "answer"},
		{"two blocks", "<think>a</think>x<think>b</think>y", "xy"},
		{"mixed styles", "<think>a</think>x[thinking]b[/thinking]y", "xy"},
		{"a block closes with its own tag", "<think>a[/thinking]b</think>c", "c"},
		{"unclosed runs to the end", "answer<think>and then", "answer"},
		{"orphan closing tag first", "reasoning the template opened\n</think>\nanswer", "\nanswer"},
		{"stray closing tag later", "<think>a</think>x</think>y", "xy"},
		{"nested: the first close ends the block, the second is stray", "<think>a<think>b</think>c</think>d", "cd"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := StripThinking(tc.in); got != tc.want {
				t.Fatalf("got %q, want %q", got, tc.want)
			}
		})
	}
}

// TestStripThinkingNoAlloc: the common reply has no tags and costs nothing.
func TestStripThinkingNoAlloc(t *testing.T) {
	raw := example(0)
	if n := testing.AllocsPerRun(100, func() { _ = StripThinking(raw) }); n != 0 {
		t.Fatalf("%v allocations", n)
	}
}
