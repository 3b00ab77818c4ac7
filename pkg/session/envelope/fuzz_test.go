package envelope

import (
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
)

var updateCorpus = flag.Bool("update-corpus", false, "rewrite testdata/fuzz/FuzzParse from fuzzSeeds")

type fuzzSeed struct {
	name  string
	text  string
	after bool
}

// fuzzSeeds: a valid reply of each kind and one reply per rejection class.
// testdata/fuzz/FuzzParse holds the same, written by -update-corpus.
func fuzzSeeds() []fuzzSeed {
	final := `{"action":"final","nonce":"` + nonce + `"}`
	seeds := []fuzzSeed{
		{"valid-decision-tool", `{"action":"tool","tool":"ping","args":{},"nonce":"` + nonce + `"}`, true},
		{"valid-decision-final", final, true},
		{"valid-prose", "The outline lists 12 scenes.\nEvidence: \"12 scenes\" (Story/SCN-outline.md)", false},
		{"valid-think-then-call", "<think>which tool?</think>\n" + example(0), false},
		{"valid-orphan-close", "plan\n[/thinking]" + example(1), false},
		{"valid-free-form", call("free_form", `{"s":"\u00e9\ud83d\ude00","n":[1.5e3,-0,{"k":null}]}`), false},
		{"size", call("task_router", `{"user_request":"`+strings.Repeat("a", MaxMessageBytes)+`"}`), false},
		{"empty", "  ", false},
		{"extra-text", example(0) + " Done.", false},
		{"text-around", "Call: " + example(0), false},
		{"unknown-field", `{"tool":"ping","args":{},"nonce":"` + nonce + `","why":1}`, false},
		{"duplicate-key", `{"tool":"ping","tool":"ping","args":{},"nonce":"` + nonce + `"}`, false},
		{"trailing-comma", `{"tool":"ping","args":{},"nonce":"` + nonce + `",}`, false},
		{"single-quotes", `{'tool':'ping','args':{},'nonce':'` + nonce + `'}`, false},
		{"array", `["ping"]`, false},
		{"think-in-string", call("task_router", `{"user_request":"<think>x</think>"}`), false},
		{"multiple", example(0) + example(1), false},
		{"multiple-in-prose", "a " + example(0) + " b " + example(1), false},
		{"fence", "```json\n" + example(0) + "\n```", false},
		{"function-syntax", "file_locator(...)", false},
		{"tag", "<tool_call>" + example(0) + "</tool_call>", false},
		{"fragment", `next {"tool": "file_locator"`, false},
		{"cot", "Let me think. " + example(0), false},
		{"nonce-wrong", call("file_locator", locate, "ffffffffffffffffffffffff"), false},
		{"nonce-missing", `{"tool":"ping","args":{}}`, false},
		{"unknown-tool", call("rm_rf", `{}`), false},
		{"args-type", call("file_locator", `{"search_criteria":"a","max_results":"3"}`), false},
		{"args-enum", call("file_locator", `{"search_criteria":"a","scan_mode":"SLOW"}`), false},
		{"args-unknown", call("file_locator", `{"search_criteria":"a","x":1}`), false},
		{"args-required", call("canon_checker", `{}`), false},
		{"decision-missing-action", example(0), true},
		{"decision-prose", "Done.", true},
		{"decision-final-with-tool", `{"action":"final","tool":"ping","nonce":"` + nonce + `"}`, true},
	}
	for i := range seedExamples {
		seeds = append(seeds, fuzzSeed{"valid-seed-example-" + strconv.Itoa(i), example(i), false})
	}
	return seeds
}

// TestFuzzCorpus keeps testdata/fuzz/FuzzParse in step with fuzzSeeds.
func TestFuzzCorpus(t *testing.T) {
	dir := filepath.Join("testdata", "fuzz", "FuzzParse")
	for _, s := range fuzzSeeds() {
		want := fmt.Sprintf("go test fuzz v1\nstring(%s)\nbool(%t)\n", strconv.Quote(s.text), s.after)
		path := filepath.Join(dir, "seed-"+s.name)
		if *updateCorpus {
			if err := os.MkdirAll(dir, 0o755); err != nil {
				t.Fatal(err)
			}
			if err := os.WriteFile(path, []byte(want), 0o644); err != nil {
				t.Fatal(err)
			}
			continue
		}
		got, err := os.ReadFile(path)
		if err != nil || string(got) != want {
			t.Errorf("%s is stale or missing (go test -run TestFuzzCorpus -update-corpus): %v", path, err)
		}
	}
}

// FuzzParse: Parse never panics, is deterministic, returns a message or a
// rejection (never both), names exactly one of the seed's codes, and a
// ToolCall always names a registered tool, carries this turn's nonce and
// args that fit the tool's schema — checked against encoding/json's reading
// of the same text, so the gate and the tool cannot see different calls.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds() {
		f.Add(s.text, s.after)
	}
	s := seedSchema(f)
	codes := map[string]bool{InvalidFormat: true, UnknownTool: true, InvalidArgs: true, Multiple: true, NonceInvalid: true}
	buckets := map[string]bool{ToolSyntax: true, FormatError: true, CotLeak: true}
	f.Fuzz(func(t *testing.T, raw string, after bool) {
		if st := StripThinking(raw); len(st) > len(raw) || (!strings.ContainsAny(raw, "<[") && st != raw) {
			t.Fatalf("StripThinking grew or changed a tagless reply: %q", st)
		}
		msg, rej := Parse(raw, nonce, s, after)
		msg2, rej2 := Parse(raw, nonce, s, after)
		if !reflect.DeepEqual(msg, msg2) || !reflect.DeepEqual(rej, rej2) {
			t.Fatal("not deterministic")
		}
		if rej != nil {
			if msg.Kind != 0 || !codes[rej.Code] || !buckets[rej.Bucket] || rej.Detail == "" {
				t.Fatalf("rejection %+v with message %+v", *rej, msg)
			}
			return
		}
		switch msg.Kind {
		case ToolCall:
			var env struct {
				Action *string        `json:"action"`
				Tool   string         `json:"tool"`
				Args   map[string]any `json:"args"`
				Nonce  string         `json:"nonce"`
			}
			if err := json.Unmarshal([]byte(msg.Text), &env); err != nil {
				t.Fatalf("accepted call is not JSON to encoding/json: %v", err)
			}
			if !s.Has(msg.Tool) || env.Tool != msg.Tool || env.Nonce != nonce {
				t.Fatalf("tool %q (json %q) nonce %q", msg.Tool, env.Tool, env.Nonce)
			}
			if (env.Action != nil) != after || (after && *env.Action != "tool") {
				t.Fatalf("action %v after=%v", env.Action, after)
			}
			var args map[string]any
			if err := json.Unmarshal([]byte(msg.ArgsJSON), &args); err != nil || !reflect.DeepEqual(args, msg.Args) || !reflect.DeepEqual(env.Args, msg.Args) {
				t.Fatalf("args %#v, encoding/json %#v (%v)", msg.Args, args, err)
			}
			tool := s.tools[msg.Tool]
			for k, v := range msg.Args {
				if spec, ok := tool.args[k]; tool.checked && (!ok || spec.accepts(v) != "") {
					t.Fatalf("arg %q = %#v does not fit", k, v)
				}
			}
			for _, k := range tool.required {
				if _, ok := msg.Args[k]; !ok {
					t.Fatalf("required %q missing", k)
				}
			}
		case Final:
			var d struct{ Action, Nonce string }
			if err := json.Unmarshal([]byte(msg.Text), &d); err != nil || !after || d.Action != "final" || d.Nonce != nonce {
				t.Fatalf("final %q after=%v: %v", msg.Text, after, err)
			}
		case Prose:
			if after || msg.Text == "" || msg.Text != strings.TrimSpace(msg.Text) || msg.Text[0] == '{' {
				t.Fatalf("prose %q after=%v", msg.Text, after)
			}
		default:
			t.Fatalf("kind %d without a rejection", msg.Kind)
		}
	})
}
