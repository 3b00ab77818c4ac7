package readguard

import "testing"

// BenchmarkCheckReadRef is the allow path: a ref read of a top-K candidate.
func BenchmarkCheckReadRef(b *testing.B) {
	g := searched(b, DefaultConfig())
	r := Read{Tool: "read_file", CandidateID: CandidateID("budget guard", "docs/c.md")}
	b.ReportAllocs()
	for b.Loop() {
		if _, resp := g.CheckRead(r); resp != nil {
			b.Fatal("blocked")
		}
	}
}

// BenchmarkCheckReadPrecision is the other allow path: a precision range.
func BenchmarkCheckReadPrecision(b *testing.B) {
	g := searched(b, DefaultConfig())
	r := Read{Tool: "read_file", Path: "pkg/b.go", StartLine: 10, EndLine: 60}
	b.ReportAllocs()
	for b.Loop() {
		if _, resp := g.CheckRead(r); resp != nil {
			b.Fatal("blocked")
		}
	}
}

func BenchmarkOnReadResult(b *testing.B) {
	cfg := DefaultConfig()
	cfg.MaxReads, cfg.MaxTotalLines = 1<<40, 1<<40
	g := searched(b, cfg)
	r := Read{Tool: "read_file", CandidateID: CandidateID("budget guard", "docs/c.md")}
	b.ReportAllocs()
	for b.Loop() {
		g.OnReadResult(r, 40, 1200)
	}
}
