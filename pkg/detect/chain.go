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

// maxChainDetailLinks bounds the broken links an alert carries: a rewritten
// log can have a thousand, and an alert is one line and one webhook post.
const maxChainDetailLinks = 20

// ChainDetails are the details of a chain_tampering alert.
type ChainDetails struct {
	TotalEvents int64 `json:"total_events"`
	// BrokenCount is the number of broken links the report lists (at most
	// audit.MaxBrokenLinks); BrokenLinks holds the first of them.
	BrokenCount int                `json:"broken_count"`
	BrokenLinks []audit.BrokenLink `json:"broken_links"`
	// Fingerprint identifies the broken state: the alert repeats only when
	// it changes.
	Fingerprint string `json:"fingerprint"`
}

// ChainWatch turns verification reports (GET /api/verify) into
// chain_tampering alerts (seed 003 "Security Detection": "Chain Tampering:
// periodic verification detects modified events"): once per distinct broken
// state, not once per verification, so a log left broken raises one alert,
// and a further break raises another.
type ChainWatch struct {
	last string // fingerprint of the broken state alerted last; "" while intact
}

// Broken reports whether the last report observed was broken.
func (w *ChainWatch) Broken() bool { return w.last != "" }

// Observe returns the chain_tampering alert for rep when it is broken and
// differs from the last broken report observed. An intact report resets
// the watch, so a break after a repair alerts again. Approval mismatches
// are not the chain's: ApprovalWatch alerts on them, and a report with
// nothing else is an intact chain here.
func (w *ChainWatch) Observe(rep audit.Report, now time.Time) (Alert, bool) {
	links := chainLinks(rep.BrokenLinks)
	if len(links) == 0 && (rep.Verified || len(links) < len(rep.BrokenLinks)) {
		w.last = ""
		return Alert{}, false
	}
	rep.BrokenLinks = links
	fp := chainFingerprint(rep)
	if fp == w.last {
		return Alert{}, false
	}
	w.last = fp
	d := ChainDetails{TotalEvents: rep.TotalEvents, BrokenCount: len(rep.BrokenLinks), Fingerprint: fp}
	d.BrokenLinks = rep.BrokenLinks[:min(len(rep.BrokenLinks), maxChainDetailLinks)]
	if d.BrokenLinks == nil {
		d.BrokenLinks = []audit.BrokenLink{}
	}
	details, _ := json.Marshal(d)
	a := Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          ChainTampering,
		Severity:      Critical,
		Timestamp:     now.UTC(),
		Message:       fmt.Sprintf("Hash chain broken: verification failed on %d events", rep.TotalEvents),
		Details:       details,
	}
	if len(rep.BrokenLinks) > 0 {
		first := rep.BrokenLinks[0]
		a.Seq, a.EventID = first.Seq, first.EventID
		a.Message = fmt.Sprintf("Hash chain broken: %d broken link(s) in %d events, the first at seq %d (%s)",
			len(rep.BrokenLinks), rep.TotalEvents, first.Seq, first.Kind)
	}
	return a, true
}

// chainFingerprint hashes the broken links (seq, event id, kind), not the
// event count: events appended after a break leave the state the same.
func chainFingerprint(rep audit.Report) string {
	h := sha256.New()
	for _, l := range rep.BrokenLinks {
		h.Write(strconv.AppendInt(nil, l.Seq, 10))
		h.Write([]byte{0})
		h.Write([]byte(l.EventID))
		h.Write([]byte{0})
		h.Write([]byte(l.Kind))
		h.Write([]byte{'\n'})
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
}

// chainLinks returns the links of the chain itself, without the approval
// mismatches.
func chainLinks(links []audit.BrokenLink) []audit.BrokenLink {
	n := 0
	for _, l := range links {
		if l.Kind != audit.KindApprovalMismatch {
			n++
		}
	}
	if n == len(links) {
		return links
	}
	out := make([]audit.BrokenLink, 0, n)
	for _, l := range links {
		if l.Kind != audit.KindApprovalMismatch {
			out = append(out, l)
		}
	}
	return out
}
