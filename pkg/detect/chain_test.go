package detect

import (
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
)

func chainReport(total int64, links ...audit.BrokenLink) audit.Report {
	return audit.Report{Verified: len(links) == 0, TotalEvents: total, BrokenLinks: links}
}

// chain_tampering: once per distinct broken state, not every verification.
func TestChainWatch(t *testing.T) {
	l5 := audit.BrokenLink{Seq: 5, EventID: "e5", Kind: audit.KindHashMismatch}
	l9 := audit.BrokenLink{Seq: 9, EventID: "e9", Kind: audit.KindPrevMismatch}
	steps := []struct {
		rep  audit.Report
		want bool
	}{
		{chainReport(10), false},
		{chainReport(10, l5), true},
		{chainReport(10, l5), false},
		{chainReport(12, l5), false}, // events appended after the break: same state
		{chainReport(12, l5, l9), true},
		{chainReport(12, l5, l9), false},
		{chainReport(12), false}, // repaired (restored from a backup, say)
		{chainReport(12, l5), true},
	}
	var w ChainWatch
	for i, s := range steps {
		a, ok := w.Observe(s.rep, watchT0)
		if ok != s.want {
			t.Fatalf("step %d: alert %v; want %v", i, ok, s.want)
		}
		if w.Broken() != !s.rep.Verified {
			t.Errorf("step %d: Broken = %v", i, w.Broken())
		}
		if !ok {
			continue
		}
		var d ChainDetails
		if err := json.Unmarshal(a.Details, &d); err != nil {
			t.Fatal(err)
		}
		if a.Type != ChainTampering || a.Severity != Critical || a.Seq != 5 || a.EventID != "e5" ||
			d.TotalEvents != s.rep.TotalEvents || d.BrokenCount != len(s.rep.BrokenLinks) || len(d.Fingerprint) != 16 ||
			!strings.HasPrefix(a.Message, fmt.Sprintf("Hash chain broken: %d broken link(s) in %d events, the first at seq 5 (hash_mismatch)", len(s.rep.BrokenLinks), s.rep.TotalEvents)) {
			t.Errorf("step %d: alert %+v %+v", i, a, d)
		}
	}
}

// An alert carries the first broken links only.
func TestChainWatchBoundsDetails(t *testing.T) {
	var links []audit.BrokenLink
	for i := range 1000 {
		links = append(links, audit.BrokenLink{Seq: int64(i + 1), EventID: "e", Kind: audit.KindSeqGap})
	}
	var w ChainWatch
	a, ok := w.Observe(chainReport(1000, links...), watchT0)
	var d ChainDetails
	if !ok || json.Unmarshal(a.Details, &d) != nil || len(d.BrokenLinks) != maxChainDetailLinks || d.BrokenCount != 1000 {
		t.Fatalf("%v %+v", ok, d)
	}
}
