// Package sessionloop drives the session reducer over JSON Lines, for any
// agent runtime in any language: it reads events, stamps what only a driver
// may know, and writes every effect as one line (DESIGN §13, gate session).
package sessionloop

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"time"

	"github.com/govkit/govkit/pkg/analytics"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/receipt"
)

// Config is what a driver brings from outside the event log. Only Options
// reaches the reducer; the rest is I/O around it.
type Config struct {
	Options session.Options

	// Now is the clock events are stamped with (nil: time.Now).
	Now func() time.Time
	// Rand is where session seeds and the connection id come from (nil:
	// crypto/rand).
	Rand io.Reader
	// Dir is the working directory: the workspace of a session_start
	// without workspace_root (empty: the process's).
	Dir string

	// Record, when set, receives the replayable log: every event as
	// stamped and the effects it produced, interleaved (see Replay).
	Record io.Writer
	// Metrics counts the metric effects (nil: none).
	Metrics *Metrics
	// Analytics is offered one event per stabilization and metric effect
	// (nil: none). Offering never blocks (seed 004 "State Separation").
	Analytics *analytics.Queue
	// Receipts is handed every receipt the reducer mints (nil: none).
	Receipts ReceiptSink
	// Log receives the driver's warnings (nil: discarded).
	Log io.Writer
}

// ReceiptSink takes the receipts of a session, in order. It may block (a
// receipt is never dropped) but must not keep r: the reducer owns it.
type ReceiptSink interface {
	Receipt(r *receipt.Receipt)
}

// WriteError is a failure to write effects: the runtime reading them is
// gone (EPIPE) or its pipe broke. Nothing more can be said to it.
type WriteError struct{ Err error }

func (e *WriteError) Error() string { return "writing effects: " + e.Err.Error() }
func (e *WriteError) Unwrap() error { return e.Err }

// Run reads events from in until EOF and writes the effects of each to out,
// one JSON object per line, for one connection (one session State). A line
// longer than session.MaxLine is answered with a LINE_TOO_LONG error and
// skipped without being held in memory; a live client may not send the
// fields the driver stamps (RESERVED_FIELD); blank lines are ignored.
//
// Output is flushed whenever the input has no further line ready: a
// runtime waiting for its answer gets it at once, a stream of events is
// written in large batches. Run returns at EOF, when ctx ends, or on a
// *WriteError.
func Run(ctx context.Context, cfg Config, in io.Reader, out io.Writer) error {
	d := newDriver(cfg, out)
	lr := newLineReader(in, session.MaxLine)
	defer lr.stop()
	for {
		line, tooLong, err := lr.next(ctx, d.flush)
		if err == io.EOF {
			return d.flush()
		}
		if err != nil {
			d.flush()
			return err
		}
		if err := d.line(lr.n, line, tooLong); err != nil {
			return err
		}
	}
}

// driver is one connection's loop state.
type driver struct {
	cfg  Config
	st   *session.State
	out  *flushWriter
	rec  *flushWriter
	conn string // the server-issued connection id, drawn at the first session_start

	enc    *json.Encoder
	buf    bytes.Buffer // one effect's line
	recBuf []byte       // one recorded event's line
	warned map[string]bool
}

func newDriver(cfg Config, out io.Writer) *driver {
	if cfg.Now == nil {
		cfg.Now = time.Now
	}
	if cfg.Rand == nil {
		cfg.Rand = rand.Reader
	}
	if cfg.Log == nil {
		cfg.Log = io.Discard
	}
	d := &driver{cfg: cfg, st: session.New(cfg.Options), out: newFlushWriter(out), warned: map[string]bool{}}
	if cfg.Record != nil {
		d.rec = newFlushWriter(cfg.Record)
	}
	d.enc = json.NewEncoder(&d.buf)
	d.enc.SetEscapeHTML(false)
	return d
}

// line handles line n of the input.
func (d *driver) line(n int, line []byte, tooLong bool) error {
	var ev session.Event
	switch {
	case tooLong:
		ev = session.Invalid(session.ErrLineTooLong, fmt.Sprintf("line %d is longer than %d bytes; it was skipped", n, session.MaxLine))
	case isBlank(line):
		return nil
	default:
		ev = session.Decode(line)
		if ev.Err() == nil {
			if f := stampedField(&ev); f != "" {
				ev = session.Invalid(session.ErrReservedField, "field "+f+" is stamped by gate session; a client must not send it (line "+fmt.Sprint(n)+")")
			}
		}
	}
	if e := ev.Err(); e != nil {
		if err := d.recordInvalid(e.Code, e.Detail); err != nil {
			return err
		}
	} else {
		if err := d.stamp(&ev); err != nil {
			return err
		}
		if err := d.recordEvent(line, &ev); err != nil {
			return err
		}
	}
	_, effects := session.Transition(d.st, ev)
	for i := range effects {
		if err := d.effect(&effects[i]); err != nil {
			return err
		}
	}
	return nil
}

// stampedField names the first field a live client sent that only the
// driver may set: the clock (seed 001 REQ-BED-001: the reducer never reads
// one), the seed nonces and receipt ids come from, the connection id
// (seed 004: the server issues it) and the workspace's real path.
func stampedField(ev *session.Event) string {
	switch {
	case ev.At != "":
		return "at"
	case ev.Seed != "":
		return "seed"
	case ev.ServerConnectionID != "":
		return "server_connection_id"
	case ev.WorkspaceRealpath != "":
		return "workspace_realpath"
	}
	return ""
}

// stamp sets the driver's fields: the time on every event, and on
// session_start the seed, the connection id and the workspace's real path.
func (d *driver) stamp(ev *session.Event) error {
	ev.At = d.cfg.Now().UTC().Format(timeFormat)
	if ev.Type != session.EvSessionStart {
		return nil
	}
	var seed [32]byte
	if _, err := io.ReadFull(d.cfg.Rand, seed[:]); err != nil {
		return fmt.Errorf("drawing a session seed: %w", err)
	}
	ev.Seed = hex.EncodeToString(seed[:])
	if d.conn == "" {
		id, err := newUUID(d.cfg.Rand)
		if err != nil {
			return fmt.Errorf("drawing a connection id: %w", err)
		}
		d.conn = id
	}
	ev.ServerConnectionID = d.conn
	real, err := Realpath(ev.WorkspaceRoot, d.cfg.Dir)
	if err != nil {
		return err
	}
	ev.WorkspaceRealpath = real
	return nil
}

// effect writes one effect and hands it to whoever else takes it.
func (d *driver) effect(ef *session.Effect) error {
	d.buf.Reset()
	if err := d.enc.Encode(ef); err != nil {
		return fmt.Errorf("encoding a %s effect: %w", ef.Type, err)
	}
	if err := d.out.write(d.buf.Bytes()); err != nil {
		return &WriteError{err}
	}
	if d.rec != nil {
		if err := d.rec.write(d.buf.Bytes()); err != nil {
			return fmt.Errorf("recording: %w", err)
		}
	}
	switch ef.Type {
	case session.EfMetric:
		if d.cfg.Metrics != nil {
			d.cfg.Metrics.Observe(ef.Name, ef.Labels)
		}
		d.offer(analytics.Event{Type: ef.Type, Name: ef.Name, Labels: cloneLabels(ef.Labels)})
	case session.EfStabilization:
		var reasons []string
		if ef.Meta != nil && len(ef.Meta.ReasonCodes) > 0 {
			reasons = append(reasons, ef.Meta.ReasonCodes...)
		}
		d.offer(analytics.Event{Type: ef.Type, Reasons: reasons})
	case session.EfReceipt:
		if d.cfg.Receipts != nil && ef.Receipt != nil {
			d.cfg.Receipts.Receipt(ef.Receipt)
		}
	}
	return nil
}

func (d *driver) offer(ev analytics.Event) {
	if d.cfg.Analytics == nil {
		return
	}
	ev.At = d.cfg.Now().UTC().Format(timeFormat)
	d.cfg.Analytics.Offer(ev)
}

// cloneLabels copies a metric's labels: the analytics consumer reads them
// later, on its own goroutine.
func cloneLabels(m map[string]string) map[string]string {
	if len(m) == 0 {
		return nil
	}
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

// flush writes out what is buffered: the effects, then the record.
func (d *driver) flush() error {
	if err := d.out.flush(); err != nil {
		return &WriteError{err}
	}
	if d.rec != nil {
		if err := d.rec.flush(); err != nil {
			return fmt.Errorf("recording: %w", err)
		}
	}
	return nil
}

func isBlank(b []byte) bool {
	return len(bytes.TrimSpace(b)) == 0
}

// newUUID is a random (version 4) UUID.
func newUUID(r io.Reader) (string, error) {
	var b [16]byte
	if _, err := io.ReadFull(r, b[:]); err != nil {
		return "", err
	}
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	var s [36]byte
	hex.Encode(s[0:8], b[0:4])
	s[8] = '-'
	hex.Encode(s[9:13], b[4:6])
	s[13] = '-'
	hex.Encode(s[14:18], b[6:8])
	s[18] = '-'
	hex.Encode(s[19:23], b[8:10])
	s[23] = '-'
	hex.Encode(s[24:], b[10:])
	return string(s[:]), nil
}

// flushWriter buffers writes and remembers the first error: after a
// failed write every later one fails the same way.
type flushWriter struct {
	w   io.Writer
	buf []byte
	err error
}

const flushAt = 64 << 10

func newFlushWriter(w io.Writer) *flushWriter {
	return &flushWriter{w: w, buf: make([]byte, 0, flushAt)}
}

func (f *flushWriter) write(p []byte) error {
	if f.err != nil {
		return f.err
	}
	f.buf = append(f.buf, p...)
	if len(f.buf) >= flushAt {
		return f.flush()
	}
	return nil
}

func (f *flushWriter) flush() error {
	if f.err != nil || len(f.buf) == 0 {
		return f.err
	}
	_, err := f.w.Write(f.buf)
	f.buf = f.buf[:0]
	if err != nil {
		f.err = err
	}
	return f.err
}

// timeFormat is how stamped times are written (DESIGN §3: UTC RFC 3339
// with nanoseconds).
const timeFormat = time.RFC3339Nano
