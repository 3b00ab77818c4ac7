package monitor

import (
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/strictjson"
)

// StateVersion is the schema version of the state file.
const StateVersion = 1

// State is what the monitor keeps between runs (auditor's --state file):
//
//	{"schema_version":1,
//	 "cursor":{"seq":1234,"event_hash":"…"},
//	 "pin":{"size":1200,"head":"…","verified_at":"2026-01-15T14:30:00Z"},
//	 "checkpoint":{"note":"audit.example.com/prod\n1200\n…","pinned_at":"…"}}
//
// Cursor is the last event processed: the stream resumes after it. Pin is
// the log's size and head after the last clean verification: the log must
// never get shorter than it, nor differ at it (detect.CheckHead).
// Checkpoint is the last signed checkpoint auditor verified (with
// --checkpoint-key; issue 19): every later one must extend it.
type State struct {
	SchemaVersion int              `json:"schema_version"`
	Cursor        *Cursor          `json:"cursor,omitempty"`
	Pin           *PinState        `json:"pin,omitempty"`
	Checkpoint    *CheckpointState `json:"checkpoint,omitempty"`
}

// CheckpointState is a pinned signed checkpoint: the note as auditd
// served it (opened again with --checkpoint-key at every start, so a
// state file edited to pin a forged one is refused), and when it was
// pinned.
type CheckpointState struct {
	Note     string    `json:"note"`
	PinnedAt time.Time `json:"pinned_at"`
}

// Cursor is the last event processed.
type Cursor struct {
	Seq       int64  `json:"seq"`
	EventHash string `json:"event_hash"`
}

// pin is the cursor as a pin: auditor saw the event at Seq hash to EventHash.
func (c Cursor) pin() detect.Pin { return detect.Pin{Size: c.Seq, Head: c.EventHash} }

// PinState is a pin and when the verification that set it finished.
type PinState struct {
	detect.Pin
	VerifiedAt time.Time `json:"verified_at"`
}

// ParseState strictly decodes a state file: unknown fields, trailing data,
// another schema version or an impossible value are errors naming what is
// wrong.
func ParseState(data []byte) (State, error) {
	var st State
	var je *strictjson.Error
	switch err := strictjson.Decode(data, &st); {
	case errors.As(err, &je) && je.Kind == strictjson.Empty:
		return State{}, errors.New("it is empty")
	case errors.As(err, &je) && je.Kind == strictjson.Trailing:
		return State{}, errors.New("it holds more than one JSON value")
	case err != nil:
		return State{}, fmt.Errorf("it is not a state file: %w", err)
	}
	if st.SchemaVersion != StateVersion {
		return State{}, fmt.Errorf("schema_version %d is not %d", st.SchemaVersion, StateVersion)
	}
	if c := st.Cursor; c != nil {
		switch err := c.pin().Validate(); {
		case c.Seq < 0:
			return State{}, fmt.Errorf("cursor: seq %d is negative", c.Seq)
		case c.Seq == 0 && c.EventHash != "":
			return State{}, errors.New("cursor: seq 0 (before the first event) with an event_hash")
		case err != nil:
			return State{}, errors.New("cursor: event_hash is not a SHA-256 hash (64 lowercase hex digits)")
		}
	}
	if st.Pin != nil {
		if err := st.Pin.Validate(); err != nil {
			return State{}, fmt.Errorf("pin: %v", err)
		}
		if st.Pin.VerifiedAt.IsZero() {
			return State{}, errors.New("pin: verified_at is missing")
		}
	}
	if c := st.Checkpoint; c != nil {
		text, _, ok := strings.Cut(c.Note, "\n\n")
		if !ok {
			return State{}, errors.New("checkpoint: note is not a signed note")
		}
		if _, err := checkpoint.Parse([]byte(text + "\n")); err != nil {
			return State{}, fmt.Errorf("checkpoint: %v", err)
		}
		if c.PinnedAt.IsZero() {
			return State{}, errors.New("checkpoint: pinned_at is missing")
		}
	}
	return st, nil
}

// Marshal is the file's content: indented JSON, newline-terminated.
func (st State) Marshal() []byte {
	b, _ := json.MarshalIndent(st, "", "  ")
	return append(b, '\n')
}
