package detect

import (
	"encoding/json"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
)

// approval_mismatch: once per distinct mismatch, not every verification;
// chain_tampering is the chain's alone.
func TestApprovalWatch(t *testing.T) {
	ma := audit.BrokenLink{Seq: 7, EventID: "e7", Kind: audit.KindApprovalMismatch, ApprovalID: "apr_a", Detail: "status differs from the chain at seq 7"}
	mb := audit.BrokenLink{Seq: 9, EventID: "e9", Kind: audit.KindApprovalMismatch, ApprovalID: "apr_b", Detail: "not in the chain"}
	mb2 := mb
	mb2.Detail = "quorum differs from the chain at seq 9"
	l5 := audit.BrokenLink{Seq: 5, EventID: "e5", Kind: audit.KindHashMismatch}
	steps := []struct {
		rep   audit.Report
		want  []string // approval ids alerted
		chain bool     // chain_tampering alerted
	}{
		{rep: chainReport(10)},
		{rep: chainReport(10, ma), want: []string{"apr_a"}},
		{rep: chainReport(11, ma)},
		{rep: chainReport(11, ma, mb), want: []string{"apr_b"}},
		{rep: chainReport(11, ma, mb2), want: []string{"apr_b"}}, // another edit of apr_b
		{rep: chainReport(12, l5, ma, mb2), chain: true},
		{rep: chainReport(12, l5, ma, mb2)},
		{rep: chainReport(12)},                              // repaired
		{rep: chainReport(12, ma), want: []string{"apr_a"}}, // and edited again
	}
	var aw ApprovalWatch
	var cw ChainWatch
	for i, s := range steps {
		alerts := aw.Observe(s.rep, watchT0)
		var ids []string
		for _, a := range alerts {
			var d ApprovalMismatchDetails
			if err := json.Unmarshal(a.Details, &d); err != nil {
				t.Fatal(err)
			}
			if a.Type != ApprovalMismatch || a.Severity != Critical || a.Seq == 0 || a.EventID == "" ||
				d.ApprovalID == "" || d.Detail == "" || len(d.Fingerprint) != 16 ||
				a.Message != "Approvals table disagrees with the chain: approval "+d.ApprovalID+": "+d.Detail {
				t.Errorf("step %d: alert %+v %+v", i, a, d)
			}
			ids = append(ids, d.ApprovalID)
		}
		if len(ids) != len(s.want) || (len(ids) > 0 && ids[0] != s.want[0]) {
			t.Errorf("step %d: alerts for %v, want %v", i, ids, s.want)
		}
		a, chain := cw.Observe(s.rep, watchT0)
		if chain != s.chain {
			t.Errorf("step %d: chain_tampering %v, want %v", i, chain, s.chain)
		}
		if chain {
			var d ChainDetails
			if err := json.Unmarshal(a.Details, &d); err != nil || d.BrokenCount != 1 || a.Seq != 5 {
				t.Errorf("step %d: chain alert %+v %+v: approval mismatches counted", i, a, d)
			}
		}
		if wantBroken := len(chainLinks(s.rep.BrokenLinks)) > 0; cw.Broken() != wantBroken {
			t.Errorf("step %d: Broken = %v, want %v", i, cw.Broken(), wantBroken)
		}
	}
}
