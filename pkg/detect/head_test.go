package detect

import (
	"encoding/json"
	"strings"
	"testing"
)

func TestCheckHead(t *testing.T) {
	h := func(c byte) string { return strings.Repeat(string(c), 64) }
	pin := Pin{Size: 10, Head: h('a')}
	tests := []struct {
		name string
		pin  Pin
		cur  ChainHead
		kind string // "" means no alert
	}{
		{"no pin", Pin{}, ChainHead{Size: 0}, ""},
		{"same", pin, ChainHead{Size: 10, AtPin: h('a')}, ""},
		{"grown", pin, ChainHead{Size: 50, AtPin: h('a')}, ""},
		{"shrank", pin, ChainHead{Size: 7}, HeadShrank},
		{"emptied", pin, ChainHead{Size: 0}, HeadShrank},
		{"rewritten", pin, ChainHead{Size: 12, AtPin: h('b')}, HeadRewritten},
		{"hole at pin", pin, ChainHead{Size: 12, AtPin: ""}, HeadRewritten},
	}
	for _, tt := range tests {
		a, ok := CheckHead(tt.pin, PinnedByVerification, tt.cur, watchT0)
		if ok != (tt.kind != "") {
			t.Errorf("%s: alert %v", tt.name, ok)
			continue
		}
		if !ok {
			continue
		}
		var d HeadDetails
		if err := json.Unmarshal(a.Details, &d); err != nil {
			t.Fatal(err)
		}
		if a.Type != HeadRegressed || a.Severity != Critical || a.Seq != 10 || d.Kind != tt.kind || d.PinnedSize != 10 ||
			d.PinnedHead != h('a') || d.CurrentSize != tt.cur.Size || d.PinnedBy != PinnedByVerification {
			t.Errorf("%s: %+v %+v", tt.name, a, d)
		}
	}
	a, _ := CheckHead(pin, PinnedByStream, ChainHead{Size: 7}, watchT0)
	if want := "Audit log shrank: it ends at seq 7, but seq 10 (head aaaaaaaaaaaa…) was pinned by stream; events were deleted from its tail"; a.Message != want {
		t.Errorf("message %q; want %q", a.Message, want)
	}
}

// head_regressed: once per pin and kind, not every check.
func TestHeadWatch(t *testing.T) {
	pin := Pin{Size: 10, Head: strings.Repeat("a", 64)}
	var w HeadWatch
	steps := []struct {
		cur  ChainHead
		want bool
	}{
		{ChainHead{Size: 10, AtPin: pin.Head}, false},
		{ChainHead{Size: 7}, true},
		{ChainHead{Size: 7}, false},
		{ChainHead{Size: 8}, false},
		{ChainHead{Size: 11, AtPin: strings.Repeat("b", 64)}, true},
		{ChainHead{Size: 12, AtPin: strings.Repeat("b", 64)}, false},
	}
	for i, s := range steps {
		if _, ok := w.Observe(pin, PinnedByVerification, s.cur, watchT0); ok != s.want {
			t.Errorf("step %d: alert %v; want %v", i, ok, s.want)
		}
	}
}

func TestPinValidate(t *testing.T) {
	tests := []struct {
		p  Pin
		ok bool
	}{
		{Pin{}, true},
		{Pin{Size: 3, Head: strings.Repeat("0f", 32)}, true},
		{Pin{Size: -1}, false},
		{Pin{Size: 0, Head: strings.Repeat("0", 64)}, false},
		{Pin{Size: 3, Head: "abc"}, false},
		{Pin{Size: 3, Head: strings.Repeat("A", 64)}, false},
		{Pin{Size: 3, Head: strings.Repeat("g", 64)}, false},
	}
	for _, tt := range tests {
		if err := tt.p.Validate(); (err == nil) != tt.ok {
			t.Errorf("%+v: Validate = %v", tt.p, err)
		}
	}
}
