package envelope

import (
	"encoding/json"
	"os"
	"reflect"
	"strings"
	"testing"
)

// nonce is a turn's nonce as a driver would mint it: random and long.
const nonce = "7f3c9a1e4b2d8f60a5c3e7b1"

// seedSchema is seed 002's five tools (testdata/seed002_tools.json), plus a
// tool declared without arg specs (unchecked) and one with an empty arg map
// (no args).
func seedSchema(tb testing.TB) *Schema {
	tb.Helper()
	raw, err := os.ReadFile("testdata/seed002_tools.json")
	if err != nil {
		tb.Fatal(err)
	}
	var doc struct {
		Tools map[string]map[string]ArgSpec `json:"tools"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		tb.Fatal(err)
	}
	doc.Tools["free_form"] = nil
	doc.Tools["ping"] = map[string]ArgSpec{}
	s, err := NewSchema(doc.Tools)
	if err != nil {
		tb.Fatal(err)
	}
	return s
}

// call is an envelope for the turn's nonce; n replaces it when set.
func call(tool, args string, n ...string) string {
	use := nonce
	if len(n) > 0 {
		use = n[0]
	}
	return `{"tool":"` + tool + `","args":` + args + `,"nonce":"` + use + `"}`
}

// seedExamples are seed 002's Prompt Tools (JSON-Only Example Formats),
// with <TOOL_NONCE> filled in.
var seedExamples = []string{
	`{"tool":"file_locator","args":{"search_criteria":"Story/SCN-outline.md","scan_mode":"FAST_SCAN","max_results":12,"include_globs":false,"dry_run":false},"nonce":"<TOOL_NONCE>"}`,
	`{"tool":"outline_analyzer","args":{"outline_path":"Story/SCN-outline.md","mode":"structure","dry_run":false},"nonce":"<TOOL_NONCE>"}`,
	`{"tool":"canon_checker","args":{"scene_path":"Story/Scenes/scene.md","canon_paths":["Story/Compendium/Canon.md"],"mode":"strict","dry_run":false},"nonce":"<TOOL_NONCE>"}`,
	`{"tool":"task_router","args":{"user_request":"...","dry_run":false},"nonce":"<TOOL_NONCE>"}`,
	`{"tool":"search_issues","args":{"tags":["tag"],"status":"open","priority":"normal"},"nonce":"<TOOL_NONCE>"}`,
}

func example(i int) string { return strings.Replace(seedExamples[i], "<TOOL_NONCE>", nonce, 1) }

const locate = `{"search_criteria":"Story/SCN-outline.md"}`

type parseCase struct {
	name   string
	raw    string
	after  bool   // afterToolResult
	kind   Kind   // when accepted
	code   string // when rejected
	bucket string
	detail string // substring of the detail, when set
}

func runParse(t *testing.T, cases []parseCase) {
	t.Helper()
	s := seedSchema(t)
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			msg, rej := Parse(tc.raw, nonce, s, tc.after)
			if tc.code == "" {
				if rej != nil {
					t.Fatalf("rejected %+v, want %s", *rej, tc.kind)
				}
				if msg.Kind != tc.kind {
					t.Fatalf("kind %s, want %s", msg.Kind, tc.kind)
				}
				return
			}
			if rej == nil {
				t.Fatalf("accepted as %s, want %s/%s", msg.Kind, tc.code, tc.bucket)
			}
			if msg.Kind != 0 || msg.Args != nil {
				t.Fatalf("a rejection came with a message %+v", msg)
			}
			if rej.Code != tc.code || rej.Bucket != tc.bucket || !strings.Contains(rej.Detail, tc.detail) {
				t.Fatalf("got %+v, want %s/%s with %q", *rej, tc.code, tc.bucket, tc.detail)
			}
		})
	}
}

// TestSeedExamples: each of the seed's JSON-only examples is accepted as is,
// with its args decoded as encoding/json would (G-01, G-06).
func TestSeedExamples(t *testing.T) {
	s := seedSchema(t)
	for i := range seedExamples {
		raw := example(i)
		msg, rej := Parse(raw, nonce, s, false)
		if rej != nil {
			t.Fatalf("example %d rejected: %+v", i, *rej)
		}
		var want struct {
			Tool string         `json:"tool"`
			Args map[string]any `json:"args"`
		}
		if err := json.Unmarshal([]byte(raw), &want); err != nil {
			t.Fatal(err)
		}
		if msg.Kind != ToolCall || msg.Tool != want.Tool || !reflect.DeepEqual(msg.Args, want.Args) || msg.Text != raw {
			t.Fatalf("example %d: %+v, want %+v", i, msg, want)
		}
		if !json.Valid([]byte(msg.ArgsJSON)) || !strings.HasPrefix(msg.ArgsJSON, `{`) || !strings.Contains(raw, `"args":`+msg.ArgsJSON) {
			t.Fatalf("example %d: ArgsJSON %q", i, msg.ArgsJSON)
		}
	}
}

// TestQuickSmoke is seed 002's Quick Smoke Tests that fall to the parser.
func TestQuickSmoke(t *testing.T) {
	runParse(t, []parseCase{
		{name: "JSON-only tool call accepted on first try", raw: example(0), kind: ToolCall},
		{name: "wrong nonce", raw: call("file_locator", locate, "0000000000000000deadbeef"), code: NonceInvalid, bucket: FormatError},
		{name: "extra text", raw: example(0) + "\nI will now look at the results.", code: InvalidFormat, bucket: FormatError},
		{name: "tool syntax file_locator(...)", raw: `Sure. file_locator(search_criteria="Story/SCN-outline.md") and then I'll report.`, code: InvalidFormat, bucket: ToolSyntax, detail: "file_locator("},
	})
}

// TestAcceptance4 — an agent attempts a tool call in plain text: rejected
// (G-07).
func TestAcceptance4(t *testing.T) {
	runParse(t, []parseCase{
		{name: "function syntax", raw: `file_locator(...)`, code: InvalidFormat, bucket: ToolSyntax, detail: "file_locator("},
		{name: "mid-sentence", raw: `I'll run canon_checker("Story/Scenes/scene.md") next.`, code: InvalidFormat, bucket: ToolSyntax, detail: "canon_checker("},
		{name: "a name before a parenthesis is prose", raw: "The canon_checker (our comparison tool) found no conflict.", kind: Prose},
		{name: "upper case", raw: `FILE_LOCATOR(scenes)`, code: InvalidFormat, bucket: ToolSyntax},
		{name: "hyphenated prompt id", raw: `Calling file-locator(scenes)`, code: InvalidFormat, bucket: ToolSyntax, detail: "file-locator("},
		{name: "namespaced", raw: `functions.search_issues(status="open")`, code: InvalidFormat, bucket: ToolSyntax},
		{name: "json fence", raw: "```json\n" + example(0) + "\n```", code: InvalidFormat, bucket: ToolSyntax, detail: "```json"},
		{name: "tool fence", raw: "```tool_call\nfile_locator scenes\n```", code: InvalidFormat, bucket: ToolSyntax},
		{name: "tool_call tag", raw: "<tool_call>" + example(0) + "</tool_call>", code: InvalidFormat, bucket: ToolSyntax, detail: "<tool_call"},
		{name: "function tag", raw: `<function=file_locator>{"search_criteria":"x"}</function>`, code: InvalidFormat, bucket: ToolSyntax},
		{name: "fragment", raw: `Next: {"tool": "file_locator", "args": {`, code: InvalidFormat, bucket: ToolSyntax, detail: "fragment"},
		{name: "tool key without brace", raw: `I would send "tool": "file_locator" now.`, code: InvalidFormat, bucket: ToolSyntax, detail: `"tool":`},
		{name: "single-quoted key", raw: `Calling with 'tool': 'file_locator'`, code: InvalidFormat, bucket: ToolSyntax},
		{name: "placeholder", raw: `Use nonce <TOOL_NONCE> for this.`, code: InvalidFormat, bucket: ToolSyntax, detail: "tool_nonce"},
		{name: "the turn's nonce in prose", raw: `The nonce is ` + nonce + `, calling the locator.`, code: InvalidFormat, bucket: ToolSyntax, detail: "nonce"},
		{name: "single quotes are not JSON", raw: `{'tool':'file_locator','args':{},'nonce':'` + nonce + `'}`, code: InvalidFormat, bucket: FormatError, detail: "invalid JSON"},
		{name: "mentioning a tool is not calling it", raw: "The file_locator tool found Story/SCN-outline.md.\nEvidence: receipt r-1", kind: Prose},
		{name: "an unregistered function is prose", raw: "Call print(x) to see it.", kind: Prose},
	})
}

// TestAcceptance5 — tool call JSON with extra text: rejected, nothing runs
// (G-01, G-27).
func TestAcceptance5(t *testing.T) {
	runParse(t, []parseCase{
		{name: "text after", raw: example(0) + " Done.", code: InvalidFormat, bucket: FormatError, detail: "extra text"},
		{name: "text before", raw: "Here is the call: " + example(0), code: InvalidFormat, bucket: FormatError, detail: "around"},
		{name: "text both sides", raw: "Call:\n" + example(1) + "\nThanks", code: InvalidFormat, bucket: FormatError},
		{name: "evidence after", raw: example(0) + "\nEvidence: Story/SCN-outline.md", code: InvalidFormat, bucket: FormatError},
		{name: "closing fence after", raw: example(0) + "\n```", code: InvalidFormat, bucket: FormatError},
		{name: "surrounding blanks are fine", raw: "\n\t " + example(0) + " \n", kind: ToolCall},
	})
}

// TestAcceptance6 — tool call JSON with a wrong nonce: rejected (G-04).
func TestAcceptance6(t *testing.T) {
	runParse(t, []parseCase{
		{name: "wrong", raw: call("file_locator", locate, "ffffffffffffffffffffffff"), code: NonceInvalid, bucket: FormatError},
		{name: "previous turn", raw: call("file_locator", locate, "0b1c2d3e4f5061728394a5b6"), code: NonceInvalid, bucket: FormatError},
		{name: "placeholder", raw: call("file_locator", locate, "<TOOL_NONCE>"), code: NonceInvalid, bucket: FormatError},
		{name: "other case", raw: call("file_locator", locate, strings.ToUpper(nonce)), code: NonceInvalid, bucket: FormatError},
		{name: "prefix", raw: call("file_locator", locate, nonce[:10]), code: NonceInvalid, bucket: FormatError},
		{name: "empty", raw: call("file_locator", locate, ""), code: NonceInvalid, bucket: FormatError},
		{name: "missing", raw: `{"tool":"file_locator","args":` + locate + `}`, code: NonceInvalid, bucket: FormatError},
		{name: "a number", raw: `{"tool":"file_locator","args":` + locate + `,"nonce":7}`, code: NonceInvalid, bucket: FormatError},
		{name: "escaped but equal is equal", raw: `{"tool":"file_locator","args":` + locate + `,"nonce":"\u0037` + nonce[1:] + `"}`, kind: ToolCall},
		{name: "nonce before registry", raw: call("rm_rf", `{}`, "ffffffffffffffffffffffff"), code: NonceInvalid, bucket: FormatError},
		{name: "decision with a wrong nonce", raw: `{"action":"final","nonce":"x"}`, after: true, code: NonceInvalid, bucket: FormatError},
	})
}

// TestEmptyTurnNonce: a turn without a nonce accepts no call, not even one
// whose nonce is empty too.
func TestEmptyTurnNonce(t *testing.T) {
	_, rej := Parse(call("ping", `{}`, ""), "", seedSchema(t), false)
	if rej == nil || rej.Code != NonceInvalid {
		t.Fatalf("got %+v", rej)
	}
}

func TestMultiple(t *testing.T) {
	runParse(t, []parseCase{
		{name: "concatenated", raw: example(0) + example(1), code: Multiple, bucket: FormatError},
		{name: "on two lines", raw: example(0) + "\n" + example(1), code: Multiple, bucket: FormatError},
		{name: "separated by text", raw: example(0) + " and then " + example(1), code: Multiple, bucket: FormatError},
		{name: "inside prose", raw: "First " + example(0) + " then " + example(3), code: Multiple, bucket: FormatError},
		{name: "array of calls", raw: "[" + example(0) + "," + example(1) + "]", code: Multiple, bucket: FormatError},
		{name: "a second object of any kind", raw: example(0) + `{"x":1}`, code: Multiple, bucket: FormatError},
		{name: "two decisions", raw: `{"action":"final","nonce":"` + nonce + `"}{"action":"final","nonce":"` + nonce + `"}`, after: true, code: Multiple, bucket: FormatError},
		{name: "keys in another order", raw: `{"nonce":"` + nonce + `","tool":"ping","args":{}} {"args":{},"tool":"ping","nonce":"` + nonce + `"}`, code: Multiple, bucket: FormatError},
	})
}

func TestFormat(t *testing.T) {
	big := call("task_router", `{"user_request":"`+strings.Repeat("a", MaxMessageBytes)+`"}`)
	deep := call("free_form", `{"a":`+strings.Repeat("[", 100)+strings.Repeat("]", 100)+`}`)
	runParse(t, []parseCase{
		{name: "over 64 KiB", raw: big, code: InvalidFormat, bucket: FormatError, detail: "65536"},
		{name: "empty", raw: "", code: InvalidFormat, bucket: FormatError, detail: "empty"},
		{name: "blank", raw: " \n\t", code: InvalidFormat, bucket: FormatError, detail: "empty"},
		{name: "only thinking", raw: "<think>I should call file_locator</think>", code: InvalidFormat, bucket: FormatError, detail: "empty"},
		{name: "unknown top-level field", raw: `{"tool":"ping","args":{},"nonce":"` + nonce + `","reason":"x"}`, code: InvalidFormat, bucket: FormatError, detail: `unknown field "reason"`},
		{name: "fields are case-sensitive", raw: `{"Tool":"ping","args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `"Tool"`},
		{name: "action at the first step", raw: `{"action":"tool","tool":"ping","args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `unknown field "action"`},
		{name: "final decision at the first step", raw: `{"action":"final","nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `"action"`},
		{name: "first unknown field is named", raw: `{"zz":1,"action":"tool","tool":"ping","args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `"zz"`},
		{name: "duplicate tool", raw: `{"tool":"ping","tool":"file_locator","args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `duplicate key "tool"`},
		{name: "duplicate nonce", raw: `{"tool":"ping","args":{},"nonce":"x","nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: "duplicate"},
		{name: "duplicate arg", raw: call("file_locator", `{"search_criteria":"a","search_criteria":"b"}`), code: InvalidFormat, bucket: FormatError, detail: `duplicate key "search_criteria"`},
		{name: "duplicate arg among many", raw: call("free_form", `{"a1":0,"a2":0,"a3":0,"a4":0,"a5":0,"a6":0,"a7":0,"a8":0,"a9":0,"a10":0,"a11":0,"a12":0,"a13":0,"a14":0,"a15":0,"a16":0,"a17":0,"a18":0,"a3":1}`), code: InvalidFormat, bucket: FormatError, detail: `duplicate key "a3"`},
		{name: "many args, none twice", raw: call("free_form", `{"a1":0,"a2":0,"a3":0,"a4":0,"a5":0,"a6":0,"a7":0,"a8":0,"a9":0,"a10":0,"a11":0,"a12":0,"a13":0,"a14":0,"a15":0,"a16":0,"a17":0,"a18":0,"a19":1}`), kind: ToolCall},
		{name: "duplicate nested key", raw: call("free_form", `{"a":{"b":1,"b":2}}`), code: InvalidFormat, bucket: FormatError, detail: `duplicate key "b"`},
		{name: "trailing comma", raw: `{"tool":"ping","args":{},"nonce":"` + nonce + `",}`, code: InvalidFormat, bucket: FormatError, detail: "invalid JSON"},
		{name: "trailing comma in args", raw: call("file_locator", `{"search_criteria":"a",}`), code: InvalidFormat, bucket: FormatError},
		{name: "trailing comma in array", raw: call("canon_checker", `{"scene_path":"a","canon_paths":["b",]}`), code: InvalidFormat, bucket: FormatError},
		{name: "comment", raw: `{"tool":"ping", /* x */ "args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError},
		{name: "unterminated", raw: `{"tool":"ping","args":{}`, code: InvalidFormat, bucket: FormatError, detail: "invalid JSON"},
		{name: "leading zero", raw: call("file_locator", `{"search_criteria":"a","max_results":012}`), code: InvalidFormat, bucket: FormatError},
		{name: "NaN", raw: call("free_form", `{"a":NaN}`), code: InvalidFormat, bucket: FormatError},
		{name: "number out of range", raw: call("free_form", `{"a":1e400}`), code: InvalidFormat, bucket: FormatError, detail: "range"},
		{name: "bad UTF-8", raw: call("task_router", "{\"user_request\":\"a\xffb\"}"), code: InvalidFormat, bucket: FormatError, detail: "UTF-8"},
		{name: "lone surrogate", raw: call("task_router", `{"user_request":"\ud800x"}`), code: InvalidFormat, bucket: FormatError, detail: "surrogate"},
		{name: "control character", raw: call("task_router", "{\"user_request\":\"a\tb\"}"), code: InvalidFormat, bucket: FormatError, detail: "control"},
		{name: "bad escape", raw: call("task_router", `{"user_request":"\x"}`), code: InvalidFormat, bucket: FormatError, detail: "escape"},
		{name: "too deep", raw: deep, code: InvalidFormat, bucket: FormatError, detail: "deep"},
		{name: "missing tool", raw: `{"args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `missing "tool"`},
		{name: "tool not a string", raw: `{"tool":["ping"],"args":{},"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `"tool" must`},
		{name: "missing args", raw: `{"tool":"ping","nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `missing "args"`},
		{name: "args null", raw: `{"tool":"ping","args":null,"nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError, detail: `"args" must`},
		{name: "args a string", raw: `{"tool":"ping","args":"{}","nonce":"` + nonce + `"}`, code: InvalidFormat, bucket: FormatError},
		{name: "a JSON array", raw: `["file_locator"]`, code: InvalidFormat, bucket: FormatError, detail: "array"},
		{name: "a JSON object that is no envelope", raw: `{"answer":42}`, code: InvalidFormat, bucket: FormatError, detail: `"answer"`},
		{name: "thinking tag inside a string", raw: call("task_router", `{"user_request":"a <think>b</think> c"}`), code: InvalidFormat, bucket: FormatError, detail: "thinking tag"},
	})
}

func TestUnknownTool(t *testing.T) {
	runParse(t, []parseCase{
		{name: "unregistered", raw: call("rm_rf", `{}`), code: UnknownTool, bucket: FormatError, detail: `"rm_rf"`},
		{name: "ids are case-sensitive", raw: call("File_Locator", locate), code: UnknownTool, bucket: FormatError},
		{name: "prompt id is not the runtime id", raw: call("file-locator", locate), code: UnknownTool, bucket: FormatError},
		{name: "empty id", raw: call("", `{}`), code: UnknownTool, bucket: FormatError},
		{name: "in a decision", raw: `{"action":"tool","tool":"rm_rf","args":{},"nonce":"` + nonce + `"}`, after: true, code: UnknownTool, bucket: FormatError},
	})
}

// TestArgs: types, allowed keys, enums, required keys (G-06).
func TestArgs(t *testing.T) {
	fl := func(extra string) string { return call("file_locator", `{"search_criteria":"a",`+extra+`}`) }
	runParse(t, []parseCase{
		{name: "all types", raw: fl(`"scan_mode":"DEEP_SCAN","max_results":3,"include_globs":true,"dry_run":false`), kind: ToolCall},
		{name: "int written as 3.0", raw: fl(`"max_results":3.0`), kind: ToolCall},
		{name: "int written as 1e2", raw: fl(`"max_results":1e2`), kind: ToolCall},
		{name: "negative int", raw: fl(`"max_results":-1`), kind: ToolCall},
		{name: "unknown arg", raw: fl(`"path":"x"`), code: InvalidArgs, bucket: FormatError, detail: `unknown arg "path"`},
		{name: "arg keys are case-sensitive", raw: fl(`"Scan_Mode":"FAST_SCAN"`), code: InvalidArgs, bucket: FormatError, detail: `"Scan_Mode"`},
		{name: "first bad key is named", raw: fl(`"max_results":"3","zz":1`), code: InvalidArgs, bucket: FormatError, detail: `"max_results"`},
		{name: "int as string", raw: fl(`"max_results":"12"`), code: InvalidArgs, bucket: FormatError, detail: `"max_results": want int`},
		{name: "int with a fraction", raw: fl(`"max_results":12.5`), code: InvalidArgs, bucket: FormatError, detail: "want int"},
		{name: "int beyond 2^53", raw: fl(`"max_results":1e300`), code: InvalidArgs, bucket: FormatError, detail: "want int"},
		{name: "bool as string", raw: fl(`"dry_run":"false"`), code: InvalidArgs, bucket: FormatError, detail: "want bool"},
		{name: "null", raw: fl(`"dry_run":null`), code: InvalidArgs, bucket: FormatError, detail: "want bool"},
		{name: "enum", raw: fl(`"scan_mode":"fast_scan"`), code: InvalidArgs, bucket: FormatError, detail: "FAST_SCAN|DEEP_SCAN"},
		{name: "string as number", raw: call("task_router", `{"user_request":5}`), code: InvalidArgs, bucket: FormatError, detail: "want string"},
		{name: "string[]", raw: call("canon_checker", `{"scene_path":"s","canon_paths":["a","b"]}`), kind: ToolCall},
		{name: "empty string[]", raw: call("canon_checker", `{"scene_path":"s","canon_paths":[]}`), kind: ToolCall},
		{name: "string[] with a number", raw: call("canon_checker", `{"scene_path":"s","canon_paths":["a",1]}`), code: InvalidArgs, bucket: FormatError, detail: "want string[]"},
		{name: "string[] as string", raw: call("canon_checker", `{"scene_path":"s","canon_paths":"a"}`), code: InvalidArgs, bucket: FormatError},
		{name: "missing required", raw: call("canon_checker", `{"canon_paths":["a"]}`), code: InvalidArgs, bucket: FormatError, detail: `missing required arg "scene_path"`},
		{name: "enum on status", raw: call("search_issues", `{"status":"pending"}`), code: InvalidArgs, bucket: FormatError, detail: "open|closed|all"},
		{name: "number arg unregistered", raw: call("search_issues", `{"minInterestLevel":2}`), kind: ToolCall},
		{name: "a tool with no args", raw: call("ping", `{}`), kind: ToolCall},
		{name: "a tool with no args given one", raw: call("ping", `{"x":1}`), code: InvalidArgs, bucket: FormatError, detail: `unknown arg "x"`},
		{name: "a tool without an arg schema takes any object", raw: call("free_form", `{"x":[1,{"y":null}],"z":"w"}`), kind: ToolCall},
		{name: "long key names are cut", raw: fl(`"` + strings.Repeat("k", 500) + `":1`), code: InvalidArgs, bucket: FormatError, detail: "…"},
	})
}

// TestArgsDecoded: values arrive as encoding/json would give them, escapes
// undone.
func TestArgsDecoded(t *testing.T) {
	msg, rej := Parse(call("free_form", `{"s":"a\"b\\c\u00e9\ud83d\ude00\n","n":-1.5e1,"b":true,"l":["x"],"o":{"k":null}}`), nonce, seedSchema(t), false)
	if rej != nil {
		t.Fatal(*rej)
	}
	want := map[string]any{"s": "a\"b\\c\u00e9\U0001F600\n", "n": -15.0, "b": true, "l": []any{"x"}, "o": map[string]any{"k": nil}}
	if !reflect.DeepEqual(msg.Args, want) {
		t.Fatalf("args %#v", msg.Args)
	}
}

// TestCoT: a chain-of-thought preface is rejected into cot_leak; thinking
// tags are stripped before validation (G-25).
func TestCoT(t *testing.T) {
	runParse(t, []parseCase{
		{name: "let me think before a call", raw: "Let me think about which tool to use.\n" + example(0), code: InvalidFormat, bucket: CotLeak, detail: "Let me think"},
		{name: "thinking:", raw: "Thinking: the outline is in Story/.\nEvidence: x", code: InvalidFormat, bucket: CotLeak},
		{name: "reasoning:", raw: "REASONING: x", code: InvalidFormat, bucket: CotLeak},
		{name: "step 1", raw: "Step 1: find the outline.", code: InvalidFormat, bucket: CotLeak},
		{name: "okay so", raw: "Okay, so the user wants the outline.", code: InvalidFormat, bucket: CotLeak},
		{name: "the user wants", raw: "The user wants a summary.", code: InvalidFormat, bucket: CotLeak},
		{name: "after a stripped block", raw: "<think>x</think>\nLet me think again.", code: InvalidFormat, bucket: CotLeak},
		{name: "after a tool result too", raw: "Let me think. " + `{"action":"final","nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: CotLeak},
		{name: "at a word boundary only", raw: "Thoughtful readers will find the outline in Story/SCN-outline.md.", kind: Prose},
		{name: "not at the start", raw: "The outline is there. Let me think of nothing else.", kind: Prose},
		{name: "think block before a call", raw: "<think>I need file_locator(...) here</think>\n" + example(0), kind: ToolCall},
		{name: "THINKING block before a call", raw: "[THINKING]plan[/THINKING]" + example(0), kind: ToolCall},
		{name: "orphan closing tag", raw: "the template opened the block\n</think>\n" + example(0), kind: ToolCall},
		{name: "think block in a final answer", raw: "<thinking>hmm</thinking>The outline has 12 scenes.", kind: Prose},
		{name: "unclosed block hides nothing", raw: example(0) + "<think>and now", kind: ToolCall},
	})
}

// TestDecision: after each tool result only decision JSON is accepted
// (G-10).
func TestDecision(t *testing.T) {
	final := `{"action":"final","nonce":"` + nonce + `"}`
	tool := `{"action":"tool","tool":"file_locator","args":` + locate + `,"nonce":"` + nonce + `"}`
	runParse(t, []parseCase{
		{name: "final", raw: final, after: true, kind: Final},
		{name: "final, keys reversed", raw: `{"nonce":"` + nonce + `","action":"final"}`, after: true, kind: Final},
		{name: "another tool", raw: tool, after: true, kind: ToolCall},
		{name: "a bare envelope", raw: example(0), after: true, code: InvalidFormat, bucket: FormatError, detail: `needs "action"`},
		{name: "prose", raw: "The outline has 12 scenes.\nEvidence: receipt r-1", after: true, code: InvalidFormat, bucket: FormatError, detail: "decision JSON required"},
		{name: "unknown action", raw: `{"action":"finish","nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError, detail: `"action" must`},
		{name: "action not a string", raw: `{"action":1,"nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError},
		{name: "action in capitals", raw: `{"action":"FINAL","nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError},
		{name: "final with a tool", raw: `{"action":"final","tool":"ping","nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError, detail: `"tool"`},
		{name: "final with args", raw: `{"action":"final","args":{},"nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError, detail: `"args"`},
		{name: "final with an answer", raw: `{"action":"final","answer":"x","nonce":"` + nonce + `"}`, after: true, code: InvalidFormat, bucket: FormatError, detail: `"answer"`},
		{name: "final without a nonce", raw: `{"action":"final"}`, after: true, code: NonceInvalid, bucket: FormatError},
		{name: "tool decision, bad args", raw: `{"action":"tool","tool":"file_locator","args":{},"nonce":"` + nonce + `"}`, after: true, code: InvalidArgs, bucket: FormatError},
		{name: "decision with text", raw: final + " All done.", after: true, code: InvalidFormat, bucket: FormatError},
		{name: "decision in a fence", raw: "```json\n" + final + "\n```", after: true, code: InvalidFormat, bucket: ToolSyntax},
	})
}

// TestProse: an answer with no tool-call attempt is a Prose message whose
// Text is the stripped, trimmed reply.
func TestProse(t *testing.T) {
	s := seedSchema(t)
	msg, rej := Parse("  <think>plan</think>\nThe outline lists 12 scenes.\nEvidence: \"12 scenes\" (Story/SCN-outline.md)\n", nonce, s, false)
	if rej != nil || msg.Kind != Prose || msg.Tool != "" || msg.Args != nil {
		t.Fatalf("%+v %+v", msg, rej)
	}
	if want := "The outline lists 12 scenes.\nEvidence: \"12 scenes\" (Story/SCN-outline.md)"; msg.Text != want {
		t.Fatalf("text %q", msg.Text)
	}
}

// TestNilSchema: with no registry every call is an unknown tool; prose is
// still prose.
func TestNilSchema(t *testing.T) {
	if _, rej := Parse(call("ping", `{}`), nonce, nil, false); rej == nil || rej.Code != UnknownTool {
		t.Fatalf("got %+v", rej)
	}
	if msg, rej := Parse("hello", nonce, nil, false); rej != nil || msg.Kind != Prose {
		t.Fatalf("got %+v %+v", msg, rej)
	}
}

// TestOneCode: every rejection names exactly one of the seed's codes and one
// bucket (G-03).
func TestOneCode(t *testing.T) {
	codes := map[string]bool{InvalidFormat: true, UnknownTool: true, InvalidArgs: true, Multiple: true, NonceInvalid: true}
	buckets := map[string]bool{ToolSyntax: true, FormatError: true, CotLeak: true}
	s := seedSchema(t)
	for _, raw := range fuzzSeeds() {
		for _, after := range []bool{false, true} {
			msg, rej := Parse(raw.text, nonce, s, after)
			if (rej == nil) == (msg.Kind == 0) {
				t.Fatalf("%q: message %+v and rejection %+v", raw.text, msg, rej)
			}
			if rej != nil && (!codes[rej.Code] || !buckets[rej.Bucket] || rej.Detail == "") {
				t.Fatalf("%q: rejection %+v", raw.text, *rej)
			}
		}
	}
}

func TestKindString(t *testing.T) {
	for k, want := range map[Kind]string{0: "none", ToolCall: "tool_call", Final: "final", Prose: "prose", 9: "none"} {
		if k.String() != want {
			t.Errorf("%d: %s", k, k)
		}
	}
}

func TestStopHook(t *testing.T) {
	_, rej := Parse(call("ping", `{}`, "stale-nonce-0000"), nonce, seedSchema(t), false)
	if rej == nil || rej.StopHook() != "STOP_HOOK: tool_call_rejected (tool_call_nonce_invalid)" {
		t.Fatalf("%+v", rej)
	}
}
