package intent

import (
	"strings"
	"testing"
)

func benchCommands(b *testing.B) []string {
	var cmds []string
	for _, c := range loadCorpus(b, "testdata/commands.jsonl") {
		cmds = append(cmds, c.Cmd)
	}
	return cmds
}

// BenchmarkClassify classifies the shared corpus; ns/op is per command.
// Target (issue #2): ≥ 100k commands/s on one core, ≤ 3× BenchmarkParseOnly.
func BenchmarkClassify(b *testing.B) {
	cmds := benchCommands(b)
	c := New(Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		c.Classify(cmds[i%len(cmds)])
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}

// BenchmarkParseOnly parses the same commands with mvdan.cc/sh and nothing
// else: the floor BenchmarkClassify is measured against.
func BenchmarkParseOnly(b *testing.B) {
	cmds := benchCommands(b)
	c := New(Options{})
	b.ReportAllocs()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		if _, err := c.parse(cmds[i%len(cmds)]); err != nil && strings.HasPrefix(err.Error(), "x") {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.N)/b.Elapsed().Seconds(), "cmds/s")
}
