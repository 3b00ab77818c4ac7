package envelope

import (
	"strings"
)

// thinkingTags are the reasoning blocks stripped before validation (seed
// 002 Evidence Validation (Backend): "strips <think>/[thinking] style tags
// via stripThinkingTags"). Matched without regard to case.
var thinkingTags = []struct{ open, close string }{
	{"<think>", "</think>"},
	{"<thinking>", "</thinking>"},
	{"[think]", "[/think]"},
	{"[thinking]", "[/thinking]"},
}

// StripThinking removes reasoning blocks from a reply. A block that is never
// closed runs to the end of the reply. A closing tag before any opening one
// (the opener was part of the chat template, seed 002's "orphan closing tag
// handling") ends reasoning that began with the reply: everything before it
// goes. A reply without tags is returned as is, without allocating.
func StripThinking(s string) string {
	at, tag, open := nextThinkingTag(s, 0)
	if at < 0 {
		return s
	}
	var b strings.Builder
	pos, first := 0, true
	for ; at >= 0; at, tag, open = nextThinkingTag(s, pos) {
		if open < 0 {
			// A stray closing tag: the reasoning before it is dropped if it
			// is the reply's first tag; later, only the tag goes.
			if !first {
				b.WriteString(s[pos:at])
			}
			pos, first = at+len(tag), false
			continue
		}
		first = false
		b.WriteString(s[pos:at])
		body := at + len(tag)
		end := indexFold(s[body:], thinkingTags[open].close)
		if end < 0 {
			return b.String()
		}
		pos = body + end + len(thinkingTags[open].close)
	}
	b.WriteString(s[pos:])
	return b.String()
}

// nextThinkingTag finds the first thinking tag at or after from: its offset,
// its text, and the index of its pair when it opens a block (-1 when it
// closes one). at is -1 when there is none.
func nextThinkingTag(s string, from int) (at int, tag string, open int) {
	for i := from; i < len(s); i++ {
		if c := s[i]; c != '<' && c != '[' {
			j := strings.IndexAny(s[i:], "<[")
			if j < 0 {
				break
			}
			i += j
		}
		for k, t := range thinkingTags {
			if hasPrefixFold(s[i:], t.open) {
				return i, t.open, k
			}
			if hasPrefixFold(s[i:], t.close) {
				return i, t.close, -1
			}
		}
	}
	return -1, "", -1
}

// cotPrefaces open a reply that leaks its reasoning (seed 002 Non-Negotiable
// Rules and Evidence Validation: "chain-of-thought preface rejected"). The
// seed names no wording, so these are the prefaces small local models put
// before an answer; lower case, matched at the start of the stripped reply
// without regard to case, ending at a word boundary.
var cotPrefaces = []string{
	"let me think",
	"let me reason",
	"let me analyze",
	"let me work through",
	"let's think",
	"let us think",
	"thinking:",
	"thinking process:",
	"thought:",
	"thoughts:",
	"reasoning:",
	"chain of thought",
	"chain-of-thought",
	"step 1:",
	"step 1.",
	"step one:",
	"first, let me",
	"first, i need to",
	"okay, so",
	"okay, let me",
	"okay, let's",
	"ok, so",
	"alright, let me",
	"alright, let's",
	"hmm,",
	"the user wants",
	"the user is asking",
	"the user asked",
}

// cotPreface reports the preface text opens with.
func cotPreface(text string) (string, bool) {
	for _, p := range cotPrefaces {
		if hasPrefixFold(text, p) && (len(text) == len(p) || !isWordByte(p[len(p)-1]) || !isWordByte(text[len(p)])) {
			return text[:len(p)], true
		}
	}
	return "", false
}

// toolSyntaxMarkers are non-envelope ways of calling a tool (seed 002 Core
// Principles: "no function-like syntax"; Strict Tool Call Protocol: "no
// markdown, no code fences"): fenced JSON, the tags of native tool-calling
// chat templates, JSON keys of the envelope, and the nonce placeholder.
// Lower case, matched without regard to case.
var toolSyntaxMarkers = []string{
	"```json",
	"```tool",
	"```function",
	"<tool_call",
	"</tool_call",
	"<tool_use",
	"<function_call",
	"<function=",
	"<|tool_call",
	"<|python_tag|>",
	"tool_nonce",
}

// envelopeKeys open an envelope or decision object; `{"tool"` and its
// siblings in prose are a call attempt.
var envelopeKeys = []string{"tool", "args", "nonce", "action"}

// parseProse handles a reply that does not start with '{'.
func parseProse(text, nonce string, s *Schema, afterToolResult bool) (Message, *Rejection) {
	n := countOpeners(text, 2)
	if n >= 2 {
		return Message{}, reject(Multiple, FormatError, "more than one JSON object in the message")
	}
	for _, m := range toolSyntaxMarkers {
		if indexFold(text, m) >= 0 {
			return Message{}, reject(InvalidFormat, ToolSyntax, "tool syntax in prose: "+m)
		}
	}
	if n == 1 {
		// A whole envelope with words around it is a JSON call with extra
		// text (Acceptance Test 5); a piece of one is tool syntax.
		d := decoder{s: text, pos: opener(text, 0)}
		var f fields
		if d.top(&f) {
			return Message{}, reject(InvalidFormat, FormatError, "text around the JSON object")
		}
		return Message{}, reject(InvalidFormat, ToolSyntax, "tool-call fragment in prose")
	}
	if m := callSyntax(text, nonce, s); m != "" {
		return Message{}, reject(InvalidFormat, ToolSyntax, "tool syntax in prose: "+m)
	}
	if afterToolResult {
		return Message{}, reject(InvalidFormat, FormatError, "decision JSON required after a tool result")
	}
	return Message{Kind: Prose, Text: text}, nil
}

// callSyntax reports the first sign of a call written some other way: a
// registered tool as a function (`file_locator(`), an envelope key in JSON
// form (`"tool":`, `'tool':`), or the turn's nonce.
func callSyntax(text, nonce string, s *Schema) string {
	if s != nil {
		for _, name := range s.calls {
			if functionCall(text, name) {
				return name + "("
			}
		}
	}
	// Not "args" or "action": ordinary keys in JSON a final answer may quote.
	for _, k := range []string{"tool", "nonce"} {
		if jsonKey(text, k, '"') || jsonKey(text, k, '\'') {
			return `"` + k + `":`
		}
	}
	// A nonce is random and long; in prose it means the model is writing
	// a call. A short one (tests) could match ordinary words.
	if len(nonce) >= 8 && strings.Contains(text, nonce) {
		return "the turn's nonce"
	}
	return ""
}

// functionCall: name (lower case) at a word start, then '('. Not with a
// blank between: "the file_locator (our search tool)" is prose.
func functionCall(text, name string) bool {
	for from := 0; from < len(text); {
		i := indexFold(text[from:], name)
		if i < 0 {
			return false
		}
		i += from
		j := i + len(name)
		if (i == 0 || !isWordByte(text[i-1])) && j < len(text) && text[j] == '(' {
			return true
		}
		from = i + 1
	}
	return false
}

// jsonKey: the key in quote marks followed, after blanks, by ':'.
func jsonKey(text, key string, quote byte) bool {
	for from := 0; from < len(text); {
		i := strings.IndexByte(text[from:], quote)
		if i < 0 {
			return false
		}
		i += from
		rest := text[i+1:]
		if hasPrefixFold(rest, key) && len(rest) > len(key) && rest[len(key)] == quote {
			j := i + 1 + len(key) + 1
			for j < len(text) && isBlank(text[j]) {
				j++
			}
			if j < len(text) && text[j] == ':' {
				return true
			}
		}
		from = i + 1
	}
	return false
}

// countOpeners counts, up to limit, the places where an envelope or
// decision object opens: '{', blanks, then one of its keys in double
// quotes and ':'.
func countOpeners(text string, limit int) int {
	n := 0
	for from := 0; from < len(text) && n < limit; {
		i := opener(text, from)
		if i < 0 {
			break
		}
		n++
		from = i + 1
	}
	return n
}

func opener(text string, from int) int {
	for from < len(text) {
		i := strings.IndexByte(text[from:], '{')
		if i < 0 {
			return -1
		}
		i += from
		j := i + 1
		for j < len(text) && isBlank(text[j]) {
			j++
		}
		for _, k := range envelopeKeys {
			if jsonKeyAt(text, j, k) {
				return i
			}
		}
		from = i + 1
	}
	return -1
}

// jsonKeyAt: at i, "key" then blanks then ':'.
func jsonKeyAt(text string, i int, key string) bool {
	if i >= len(text) || text[i] != '"' || !strings.HasPrefix(text[i+1:], key) {
		return false
	}
	j := i + 1 + len(key)
	if j >= len(text) || text[j] != '"' {
		return false
	}
	for j++; j < len(text) && isBlank(text[j]); j++ {
	}
	return j < len(text) && text[j] == ':'
}

func isBlank(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func isWordByte(c byte) bool {
	return c == '_' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// hasPrefixFold: s starts with prefix (lower-case ASCII), ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for i := 0; i < len(prefix); i++ {
		c := s[i]
		if c >= 'A' && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[i] {
			return false
		}
	}
	return true
}

// indexFold finds sub (lower-case ASCII, non-empty) in s, ignoring ASCII
// case.
func indexFold(s, sub string) int {
	first := sub[0]
	upper := first
	if first >= 'a' && first <= 'z' {
		upper = first - ('a' - 'A')
	}
	for i := 0; i+len(sub) <= len(s); i++ {
		if c := s[i]; (c == first || c == upper) && hasPrefixFold(s[i:], sub) {
			return i
		}
	}
	return -1
}
