package detect

import (
	"encoding/json"
	"fmt"
	"time"

	"github.com/govkit/govkit/pkg/audit"
)

// PinnedByCheckpoint is CheckpointDetails.PinnedBy: the pin is a signed
// checkpoint (issue 19), not a (size, head) pair.
const PinnedByCheckpoint = "checkpoint"

// Kinds of checkpoint alerts (CheckpointDetails.Kind). head_regressed
// carries HeadShrank; checkpoint_inconsistent the others.
const (
	// CheckpointUnverified: the log's checkpoint is not signed by a
	// trusted key (forged, edited, or a key auditor was not given).
	CheckpointUnverified = "unverified"
	// CheckpointForked: a checkpoint of the pinned size with another root.
	CheckpointForked = "forked"
	// CheckpointNotExtension: a larger checkpoint whose consistency proof
	// from the pinned one fails: what the pin signed was rewritten.
	CheckpointNotExtension = "not_extension"
	// CheckpointRewritten: the log's tree at the pinned size no longer has
	// the pinned root (its inclusion proof fails).
	CheckpointRewritten = "rewritten"
	// CheckpointOtherLog: a checkpoint of another origin.
	CheckpointOtherLog = "other_log"
)

// CheckpointDetails are the details of the alerts about a pinned
// checkpoint: what was pinned and what the log serves now. Kind,
// PinnedBy, PinnedSize and CurrentSize mean what they mean in HeadDetails.
type CheckpointDetails struct {
	Kind       string `json:"kind"`
	PinnedBy   string `json:"pinned_by"`
	Origin     string `json:"origin"`
	PinnedSize int64  `json:"pinned_size"`
	PinnedRoot string `json:"pinned_root"` // base64, as in the note
	// CurrentSize and CurrentRoot are the log's checkpoint now (unset when
	// none opens); for HeadShrank found without a new checkpoint,
	// CurrentSize is the log's size.
	CurrentSize   int64  `json:"current_size"`
	CurrentRoot   string `json:"current_root,omitempty"`
	CurrentOrigin string `json:"current_origin,omitempty"`
	// Reason is what failed, in words (the signature or proof error).
	Reason string `json:"reason,omitempty"`
}

// CheckpointAlert is the alert for d: head_regressed for HeadShrank,
// checkpoint_inconsistent otherwise, both critical.
func CheckpointAlert(d CheckpointDetails, now time.Time) Alert {
	d.PinnedBy = PinnedByCheckpoint
	typ := CheckpointInconsistent
	var msg string
	switch d.Kind {
	case HeadShrank:
		typ = HeadRegressed
		msg = fmt.Sprintf("Audit log shrank: it is at size %d, but a checkpoint of size %d was signed and pinned; events were deleted from its tail", d.CurrentSize, d.PinnedSize)
	case CheckpointUnverified:
		msg = fmt.Sprintf("Audit log checkpoint not trusted: %s", d.Reason)
	case CheckpointForked:
		msg = fmt.Sprintf("Audit log forked: the checkpoint of size %d has root %s, but root %s was pinned", d.CurrentSize, d.CurrentRoot, d.PinnedRoot)
	case CheckpointNotExtension:
		msg = fmt.Sprintf("Audit log rewritten: the checkpoint of size %d does not extend the pinned checkpoint of size %d (%s)", d.CurrentSize, d.PinnedSize, d.Reason)
	case CheckpointRewritten:
		msg = fmt.Sprintf("Audit log rewritten: its first %d events are not the ones the pinned checkpoint signed (%s)", d.PinnedSize, d.Reason)
	case CheckpointOtherLog:
		msg = fmt.Sprintf("Audit log checkpoint of another log: origin %q, but %q was pinned", d.CurrentOrigin, d.Origin)
	default:
		msg = fmt.Sprintf("Audit log checkpoint inconsistent: %s", d.Reason)
	}
	details, _ := json.Marshal(d)
	return Alert{
		SchemaVersion: audit.SchemaVersion,
		Type:          typ,
		Severity:      Critical,
		Timestamp:     now.UTC(),
		Message:       msg,
		Seq:           d.PinnedSize,
		Details:       details,
	}
}

// CheckpointWatch is CheckpointAlert that alerts once per pinned
// checkpoint, kind and current checkpoint: a log that stays rewritten is
// one alert, not one per check.
type CheckpointWatch struct {
	seen map[string]bool
}

// Observe is CheckpointAlert, deduplicated.
func (w *CheckpointWatch) Observe(d CheckpointDetails, now time.Time) (Alert, bool) {
	key := fmt.Sprintf("%s/%d/%s/%s/%d/%s/%s", d.Origin, d.PinnedSize, d.PinnedRoot, d.Kind, d.CurrentSize, d.CurrentRoot, d.CurrentOrigin)
	if w.seen[key] {
		return Alert{}, false
	}
	if w.seen == nil {
		w.seen = map[string]bool{}
	}
	w.seen[key] = true
	return CheckpointAlert(d, now), true
}
