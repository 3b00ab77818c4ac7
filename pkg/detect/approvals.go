package detect

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"strconv"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// ApprovalMismatchDetails are the details of an approval_mismatch alert:
// the report's link.
type ApprovalMismatchDetails struct {
	ApprovalID string `json:"approval_id"`
	Detail     string `json:"detail"`
	// Fingerprint identifies the mismatch: the alert repeats only when the
	// mismatch goes away and comes back, or changes.
	Fingerprint string `json:"fingerprint"`
}

// ApprovalWatch turns the approval_mismatch links of verification reports
// (GET /api/verify) into approval_mismatch alerts (DESIGN §11, issue 13:
// an approvals table row that disagrees with the chain, which auditd
// serves to approvers and enforcement points): one per distinct mismatch,
// not one per verification, so an edit left in place raises one alert and
// a further edit another.
type ApprovalWatch struct {
	seen map[string]bool // fingerprints of the mismatches in the last report
}

// Observe returns an approval_mismatch alert for each mismatch in rep that
// the last report observed did not have. A mismatch that disappears is
// forgotten, so it alerts again if it comes back.
func (w *ApprovalWatch) Observe(rep audit.Report, now time.Time) []Alert {
	var alerts []Alert
	seen := map[string]bool{}
	for _, l := range rep.BrokenLinks {
		if l.Kind != audit.KindApprovalMismatch {
			continue
		}
		fp := approvalFingerprint(l)
		if seen[fp] {
			continue
		}
		seen[fp] = true
		if w.seen[fp] {
			continue
		}
		a := Alert{
			SchemaVersion: audit.SchemaVersion,
			Type:          ApprovalMismatch,
			Severity:      Critical,
			Timestamp:     now.UTC(),
			Message:       fmt.Sprintf("Approvals table disagrees with the chain: approval %s: %s", l.ApprovalID, l.Detail),
			Seq:           l.Seq,
			EventID:       l.EventID,
		}
		a.Details, _ = json.Marshal(ApprovalMismatchDetails{ApprovalID: l.ApprovalID, Detail: l.Detail, Fingerprint: fp}) // strings: cannot fail
		alerts = append(alerts, a)
	}
	w.seen = seen
	return alerts
}

// approvalFingerprint hashes what identifies a mismatch: the approval, the
// event it is judged against, and what differs.
func approvalFingerprint(l audit.BrokenLink) string {
	h := sha256.New()
	h.Write([]byte(l.ApprovalID))
	h.Write([]byte{0})
	h.Write(strconv.AppendInt(nil, l.Seq, 10))
	h.Write([]byte{0})
	h.Write([]byte(l.Detail))
	return hex.EncodeToString(h.Sum(nil))[:16]
}
