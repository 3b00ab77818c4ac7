package client

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

// Live as Subscribe's sinceSeq asks for new events only, no replay.
const Live = -1

// maxStreamLine bounds one stream line: an event is at most 1 MiB as sent,
// plus what auditd adds.
const maxStreamLine = 4 << 20

// StreamError is an error line from auditd's stream: the subscriber was
// dropped for falling behind, auditd shut down, or the request was bad.
// LastSeq is the seq of the last event delivered before it: subscribe again
// with sinceSeq = LastSeq to resume without a gap.
type StreamError struct {
	Message string
	LastSeq int64
}

func (e *StreamError) Error() string { return "auditd stream: " + e.Message }

// Subscribe reads auditd's event stream on the Unix socket at socketPath and
// calls fn with each committed event, in seq order, with no gap and no
// duplicate. With sinceSeq >= 0 it first gets every event with
// seq > sinceSeq (replayed from the database), then live ones; with Live it
// gets the events committed after it connected.
//
// It returns ctx.Err() when ctx ends, fn's error when fn fails, and a
// *StreamError when auditd ends the stream.
func Subscribe(ctx context.Context, socketPath string, sinceSeq int64, fn func(audit.Event) error) error {
	var d net.Dialer
	conn, err := d.DialContext(ctx, "unix", socketPath)
	if err != nil {
		return fmt.Errorf("connecting to auditd's stream: %w", err)
	}
	defer conn.Close()
	stop := context.AfterFunc(ctx, func() { conn.Close() })
	defer stop()

	if sinceSeq >= 0 {
		req, _ := json.Marshal(govapi.SubscribeRequest{Subscribe: &govapi.SubscribeSince{SinceSeq: &sinceSeq}})
		if _, err := conn.Write(append(req, '\n')); err != nil {
			return streamErr(ctx, fmt.Errorf("sending the subscribe request: %w", err))
		}
	}
	sc := bufio.NewScanner(conn)
	sc.Buffer(make([]byte, 64<<10), maxStreamLine)
	last := sinceSeq
	if last < 0 {
		last = 0
	}
	for sc.Scan() {
		var line struct {
			audit.Event
			govapi.StreamEnd
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return fmt.Errorf("auditd stream: a line that is not an event (after seq %d): %w", last, err)
		}
		if line.Error != "" {
			return &StreamError{Message: line.Error, LastSeq: last}
		}
		if err := fn(line.Event); err != nil {
			return err
		}
		last = line.Seq
	}
	if err := sc.Err(); err != nil {
		return streamErr(ctx, fmt.Errorf("reading auditd's stream: %w", err))
	}
	return streamErr(ctx, &StreamError{Message: "auditd closed the stream", LastSeq: last})
}

// streamErr prefers ctx's error: closing the connection is how Subscribe
// stops reading when ctx ends.
func streamErr(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}
