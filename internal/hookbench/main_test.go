package main

import (
	"bytes"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"
)

func TestReadCorpus(t *testing.T) {
	dir := t.TempDir()
	write := func(name, data string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(data), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	got, err := readCorpus(write("c.jsonl", `{"cmd": "ls", "expect": "read_only"}`+"\n\n"+`{"cmd": "rm -rf /", "expect": "write"}`+"\n"))
	if err != nil || !reflect.DeepEqual(got, []string{"ls", "rm -rf /"}) {
		t.Errorf("jsonl corpus = %q, %v", got, err)
	}
	got, err = readCorpus(write("c.txt", "# heading\nls -la\n\ntail -f x\n"))
	if err != nil || !reflect.DeepEqual(got, []string{"ls -la", "tail -f x"}) {
		t.Errorf("text corpus = %q, %v", got, err)
	}
	if _, err := readCorpus(write("bad.jsonl", `{"command": "ls"}`+"\n")); err == nil || !strings.Contains(err.Error(), "bad.jsonl:1") {
		t.Errorf("a record without cmd: error = %v, want one naming the line", err)
	}
	if _, err := readCorpus(write("empty.txt", "# only a comment\n")); err == nil {
		t.Error("an empty corpus is accepted")
	}
}

func TestReport(t *testing.T) {
	ramp := func(step time.Duration) []time.Duration {
		var times []time.Duration
		for i := 100; i >= 1; i-- { // unsorted on purpose
			times = append(times, time.Duration(i)*step)
		}
		return times
	}
	var b bytes.Buffer
	if ok := report(&b, "bin/classify", "c.txt", 3, ramp(100*time.Microsecond)); !ok {
		t.Errorf("p50 5 ms, p99 9.9 ms: report says a target is missed:\n%s", b.String())
	}
	for _, want := range []string{"100 runs over 3 commands", "min   0.10 ms", "p50   5.00 ms   target ≤ 10ms: ok", "p99   9.90 ms", "max  10.00 ms"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("report lacks %q:\n%s", want, b.String())
		}
	}
	b.Reset()
	if ok := report(&b, "bin/classify", "c.txt", 3, ramp(time.Millisecond/4)); ok {
		t.Errorf("p50 12.5 ms: report says the targets are met:\n%s", b.String())
	}
	if !strings.Contains(b.String(), "p50  12.50 ms   target ≤ 10ms: MISSED") {
		t.Errorf("report does not flag the missed p50:\n%s", b.String())
	}
}
