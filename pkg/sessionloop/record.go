package sessionloop

import (
	"bytes"
	"encoding/json"
	"fmt"

	"github.com/govkit/govkit/pkg/session"
)

// The recorded log (--record) is JSON Lines of three kinds, in the order
// they happened, so that Replay can feed the same events to a fresh State
// and compare what comes out:
//
//   - an event as the reducer saw it: the client's line with the stamped
//     fields added in front ("at", and on session_start "seed",
//     "server_connection_id", "workspace_realpath");
//   - an effect, recognizable by its "seq";
//   - a line that was no event, {"invalid":{"code","detail"},"at"}: a line
//     that did not decode, was too long, or sent a stamped field. Its error
//     effect took a seq, so a replay must see it too.

// invalidLine is a recorded line that was not an event.
type invalidLine struct {
	Invalid session.Error `json:"invalid"`
	At      string        `json:"at"`
}

// recordEvent records an event's line with the stamped fields spliced in:
// the client's own bytes are kept as they came, and nothing is re-encoded.
func (d *driver) recordEvent(line []byte, ev *session.Event) error {
	if d.rec == nil {
		return nil
	}
	// Decode accepted the line, so it is one object with at least "type".
	line = bytes.TrimLeft(line, " \t\r")
	b := append(d.recBuf[:0], `{"at":"`...)
	b = append(b, ev.At...)
	b = append(b, `",`...)
	if ev.Type == session.EvSessionStart {
		b = append(b, `"seed":"`...)
		b = append(b, ev.Seed...)
		b = append(b, `","server_connection_id":"`...)
		b = append(b, ev.ServerConnectionID...)
		b = append(b, `","workspace_realpath":`...)
		path, err := json.Marshal(ev.WorkspaceRealpath)
		if err != nil {
			return fmt.Errorf("recording: %w", err)
		}
		b = append(b, path...)
		b = append(b, ',')
	}
	b = append(b, line[1:]...)
	b = append(b, '\n')
	d.recBuf = b
	if err := d.rec.write(b); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}

// recordInvalid records a line that was no event.
func (d *driver) recordInvalid(code, detail string) error {
	if d.rec == nil {
		return nil
	}
	b, err := json.Marshal(invalidLine{session.Error{Code: code, Detail: detail}, d.cfg.Now().UTC().Format(timeFormat)})
	if err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	if err := d.rec.write(append(b, '\n')); err != nil {
		return fmt.Errorf("recording: %w", err)
	}
	return nil
}
