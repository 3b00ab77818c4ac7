package sessionloop

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"reflect"

	"github.com/govkit/govkit/pkg/session"
)

// maxLogLine bounds one line of a recorded log: an event is at most
// session.MaxLine plus its stamps, but an effect (aggregated read output,
// escaped) may be larger.
const maxLogLine = 16 << 20

// Summary is what a replay went through.
type Summary struct {
	Events  int `json:"events"`  // event and invalid lines fed to the reducer
	Effects int `json:"effects"` // effects compared
}

// Divergence is the first place where a replay's effects differ from the
// log's. Expected is nil when the replay produced an effect the log does
// not have, Got is nil when the log has one the replay did not produce.
type Divergence struct {
	Line      int             // the log's line: the expected effect, or where it should have been
	EventLine int             // the line of the event whose effects differ
	Expected  json.RawMessage // the log's effect
	Got       json.RawMessage // the replay's effect
}

func (d *Divergence) Error() string {
	return fmt.Sprintf("line %d: the effects of the event on line %d differ", d.Line, d.EventLine)
}

// LogError is a log that cannot be replayed: unreadable, not JSON Lines,
// or an event without the stamps a recorded log carries.
type LogError struct {
	Line int
	Err  error
}

func (e *LogError) Error() string {
	if e.Line == 0 {
		return e.Err.Error()
	}
	return fmt.Sprintf("line %d: %v", e.Line, e.Err)
}
func (e *LogError) Unwrap() error { return e.Err }

// logLine is what tells the kinds of a recorded line apart.
type logLine struct {
	Seq     json.RawMessage `json:"seq"`
	Invalid *session.Error  `json:"invalid"`
	At      *string         `json:"at"`
}

// Replay feeds a recorded log's events to a fresh State with opts (the
// same receipt key, or receipts differ) and compares the effects it gets
// with the log's, as JSON values: key order and spacing do not matter.
// Stamped fields are taken from the log and nothing is stamped, so the
// same log always replays the same way. It returns a *Divergence at the
// first difference, a *LogError for a log it cannot replay.
//
// With emit set, Replay compares nothing: it skips the log's effect lines
// and writes the effects the events produce to emit, one per line, so a
// transcript of stamped events becomes its effects (a golden test's input
// and output).
func Replay(ctx context.Context, opts session.Options, log io.Reader, emit io.Writer) (Summary, error) {
	var sum Summary
	st := session.New(opts)
	lr := newSyncLineReader(log, maxLogLine, chunkSize)
	defer lr.stop()
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	var got [][]byte // produced effects not yet matched
	eventLine := 0
	for {
		line, tooLong, err := lr.next(ctx, func() error { return nil })
		if err == io.EOF {
			if len(got) > 0 {
				return sum, &Divergence{Line: lr.n + 1, EventLine: eventLine, Got: got[0]}
			}
			return sum, nil
		}
		if err != nil {
			return sum, &LogError{Err: err}
		}
		n := lr.n
		if tooLong {
			return sum, &LogError{n, fmt.Errorf("longer than %d bytes: not a recorded log", maxLogLine)}
		}
		if isBlank(line) {
			continue
		}
		var l logLine
		if err := json.Unmarshal(line, &l); err != nil {
			return sum, &LogError{n, fmt.Errorf("not a JSON object: %v", err)}
		}
		if l.Seq != nil && emit != nil {
			continue
		}
		if l.Seq != nil {
			if len(got) == 0 {
				return sum, &Divergence{Line: n, EventLine: eventLine, Expected: bytes.Clone(line)}
			}
			if !sameJSON(line, got[0]) {
				return sum, &Divergence{Line: n, EventLine: eventLine, Expected: bytes.Clone(line), Got: got[0]}
			}
			got = got[1:]
			sum.Effects++
			continue
		}
		if len(got) > 0 {
			return sum, &Divergence{Line: n, EventLine: eventLine, Got: got[0]}
		}
		var ev session.Event
		switch {
		case l.Invalid != nil:
			ev = session.Invalid(l.Invalid.Code, l.Invalid.Detail)
		case l.At == nil:
			return sum, &LogError{n, fmt.Errorf("the event has no \"at\": a recorded log's events are stamped (record one with gate session --record)")}
		default:
			ev = session.Decode(line)
		}
		eventLine = n
		sum.Events++
		_, effects := session.Transition(st, ev)
		got = got[:0]
		for i := range effects {
			buf.Reset()
			if err := enc.Encode(&effects[i]); err != nil {
				return sum, fmt.Errorf("encoding a %s effect: %w", effects[i].Type, err)
			}
			if emit != nil {
				if _, err := emit.Write(buf.Bytes()); err != nil {
					return sum, &WriteError{err}
				}
				sum.Effects++
				continue
			}
			got = append(got, bytes.Clone(bytes.TrimSuffix(buf.Bytes(), []byte{'\n'})))
		}
	}
}

// sameJSON reports whether a and b are the same JSON value.
func sameJSON(a, b []byte) bool {
	var va, vb any
	if json.Unmarshal(a, &va) != nil || json.Unmarshal(b, &vb) != nil {
		return false
	}
	return reflect.DeepEqual(va, vb)
}
