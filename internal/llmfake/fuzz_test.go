package llmfake

import (
	"bytes"
	"encoding/json"
	"reflect"
	"testing"
)

// FuzzLoad: a script Load accepts holds only steps a server accepts, and
// writing those steps back out as a script loads the same steps.
func FuzzLoad(f *testing.F) {
	f.Add([]byte("{\"text\":\"hi\"}\n# c\n\n{\"hang\":true}\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		steps, err := Load(bytes.NewReader(data))
		if err != nil {
			return
		}
		var script bytes.Buffer
		for i, s := range steps {
			if err := s.check(); err != nil {
				t.Fatalf("step %d loaded but fails its check: %v", i+1, err)
			}
			line := map[string]any{}
			b, _ := json.Marshal(s)
			json.Unmarshal(b, &line)
			if s.Delay > 0 {
				line["delay"] = s.Delay.String()
			}
			b, err := json.Marshal(line)
			if err != nil {
				t.Fatal(err)
			}
			script.Write(append(b, '\n'))
		}
		again, err := Load(&script)
		if err != nil {
			t.Fatalf("written back, the script does not load: %v\n%s", err, script.Bytes())
		}
		if len(steps) == 0 && len(again) == 0 {
			return
		}
		if !reflect.DeepEqual(normalize(again), normalize(steps)) {
			t.Fatalf("round trip changed the steps:\n%+v\n%+v", steps, again)
		}
	})
}

// normalize compacts tool call arguments, which a script may space out.
func normalize(steps []Step) []Step {
	out := append([]Step(nil), steps...)
	for i := range out {
		calls := append([]FakeCall(nil), out[i].ToolCalls...)
		for j := range calls {
			var b bytes.Buffer
			if json.Compact(&b, calls[j].Args) == nil {
				calls[j].Args = b.Bytes()
			}
		}
		out[i].ToolCalls = calls
	}
	return out
}
