package auditd

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/strictjson"
	"github.com/govkit/govkit/pkg/token"
)

// batchBudgetBytes bounds the batch bodies in flight at once (byteBudget).
const batchBudgetBytes = 4 << 20

// isJSONLines tells whether a request's Content-Type is JSON Lines, which
// makes POST /api/events a batch append. Any other type, or none, is one
// event, as POST /api/events has always taken it.
func isJSONLines(contentType string) bool {
	if contentType == "" {
		return false
	}
	mt, _, err := mime.ParseMediaType(contentType)
	if err != nil && !errors.Is(err, mime.ErrInvalidMediaParameter) {
		return false
	}
	return mt == "application/x-ndjson" || mt == "application/jsonl"
}

// postEventBatch is POST /api/events with a JSON Lines body: up to
// govapi.MaxBatchEvents events, one per line, each what postEvent takes,
// recorded by AppendBatch; the answer is a govapi.BatchAnswer.
//
// Why: the writer commits every event queued in one transaction with one
// fsync (group commit, DESIGN §6 "Durability"), but with one event per
// request each client has at most one event in flight, so a commit holds at
// most one event per client, and each event pays for its own HTTP request.
// A batch of N from one client fills a commit the way N clients do.
func (s *Server) postEventBatch(r *http.Request) (reply, error) {
	hold := s.holdPending() // as in postEvent
	defer hold.end()
	body, err := readBody(r)
	if err != nil {
		return reply{}, err
	}
	release, err := s.batchBudget.acquire(r.Context(), len(body))
	if err != nil {
		return reply{}, refuse(Unavailable, "", "not queued: %v", err) // the client went away while waiting
	}
	defer release()
	lines, err := splitLines(body)
	if err != nil {
		return reply{}, invalidBody(err)
	}
	evs := make([]audit.Event, len(lines))
	for i, line := range lines {
		if evs[i], err = audit.DecodeEvent(line); err != nil {
			return reply{}, batchLineError(i+1, line, err)
		}
	}
	hold.handOver()
	res, err := s.appendBatchHeld(r.Context(), identity(r), evs)
	if err != nil {
		return reply{}, err
	}
	// govapi.BatchAnswer, written by hand: the events are JSON already,
	// and re-encoding them would cost the ingest path a second scan.
	size := 64
	for _, e := range res {
		size += len(e.Value.JSON) + 1
	}
	buf := make([]byte, 0, size)
	buf = append(buf, `{"schema_version":1,"events":[`...)
	created := 0
	existing := make([]byte, 0, 16)
	for i, e := range res {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, e.Value.JSON...)
		if e.Created {
			created++
			continue
		}
		if len(existing) > 0 {
			existing = append(existing, ',')
		}
		existing = strconv.AppendInt(existing, int64(i+1), 10)
	}
	buf = fmt.Appendf(buf, `],"created":%d,"existing_lines":[%s]}`, created, existing)
	status := http.StatusCreated
	if created == 0 {
		status = http.StatusOK
	}
	return rawReply(status, buf)
}

// AppendBatch records evs, each as Append would, in order: they get
// increasing seqs (other callers' events may come between them), and it
// returns once all of them are durable. Every event is bound, checked and
// prepared before any is queued (DESIGN §3 "Bad input": nothing is
// half-written): one bad event is an error naming its line (index + 1),
// and nothing is stored. One event_id for two different events is refused
// too: which one the id names would depend on their order (DESIGN §11).
func (s *Server) AppendBatch(ctx context.Context, caller token.Identity, evs []audit.Event) ([]Recorded[StoredEvent], error) {
	s.w.pending.Add(1)
	return s.appendBatchHeld(ctx, caller, evs)
}

// appendBatchHeld is AppendBatch for a batch already counted as one
// pending event (writer.collect); it ends the count.
func (s *Server) appendBatchHeld(ctx context.Context, caller token.Identity, evs []audit.Event) ([]Recorded[StoredEvent], error) {
	held := int64(1) // what this call still owes the pending count
	defer func() { s.w.pending.Add(-held) }()
	if len(evs) == 0 || len(evs) > govapi.MaxBatchEvents {
		return nil, badRequest(fmt.Errorf("a batch holds 1 to %d events, not %d", govapi.MaxBatchEvents, len(evs)))
	}
	// One receive time for the batch: it arrived at once.
	recv := s.cfg.Now().UTC().Round(0)
	for i := range evs {
		if err := s.bindEvent(caller, &evs[i]); err != nil {
			return nil, lineError(i+1, err)
		}
	}

	// reqs[i] is line i+1's request; nil when its event_id is stored
	// already, and out[i] is then the answer. Every line is prepared here,
	// in the request's goroutine, as submit does for a single event: the
	// handlers canonicalize in parallel and the one writer only chains and
	// hashes (writer.go, appendReq.prepare). Then the client event_ids of
	// the lines before the first bad one, if any, are looked up in one
	// query, and the lines checked in order, so that the first line at
	// fault is the one named.
	reqs := make([]*appendReq, len(evs))
	out := make([]Recorded[StoredEvent], len(evs))
	good, badErr := len(evs), error(nil) // lines before good prepared
	var ids []string
	for i, ev := range evs {
		req, err := s.newAppendReq(ev, recv)
		if err != nil {
			good, badErr = i, err
			break
		}
		reqs[i] = req
		if req.clientID {
			ids = append(ids, ev.EventID)
		}
	}
	stored, err := s.storedEvents(ctx, ids)
	if err != nil {
		return nil, err
	}
	queue, duplicates := 0, 0
	var byID map[string]int // line index of each client event_id
	for i, req := range reqs[:good] {
		id := req.ev.EventID
		if rec, ok := stored[id]; ok && req.clientID {
			// Stored already: the same event is a retry, answered with
			// the stored one; another event under its id is refused and
			// the stored one never shown (DESIGN §11).
			if !sameEvent(req.draft, rec.Body) {
				return nil, lineError(i+1, reusedID(id))
			}
			line, err := storedJSON(rec)
			if err != nil {
				return nil, lineError(i+1, err)
			}
			out[i] = Recorded[StoredEvent]{Value: StoredEvent{id, line}}
			reqs[i] = nil
			duplicates++
			continue
		}
		if req.clientID {
			if byID == nil {
				byID = map[string]int{}
			}
			if j, ok := byID[id]; ok && !bytes.Equal(reqs[j].draft.Unsealed(), req.draft.Unsealed()) {
				return nil, badRequest(fmt.Errorf("lines %d and %d have the same event_id %s but different events: an event_id names one event", j+1, i+1, id))
			} else if !ok {
				byID[id] = i
			}
		}
		queue++
	}
	if badErr != nil {
		return nil, lineError(good+1, badErr)
	}
	s.m.duplicates.Add(float64(duplicates))

	// Tell the writer how many events are on their way before queuing the
	// first, so that it holds its commit open for the rest of them
	// (writer.collect) instead of committing the first few alone.
	s.w.pending.Add(int64(queue) - held)
	held = int64(queue)
	var queueErr error
	queueLine := 0
	var queued []int // indexes of the requests queued
	for i, req := range reqs {
		if req == nil {
			continue
		}
		if queueErr = s.w.enqueue(ctx, req); queueErr != nil {
			queueLine = i + 1
			break
		}
		held--
		queued = append(queued, i)
		// Once one event is queued, queue the rest even if the caller
		// goes away: it would otherwise leave a part of its batch stored
		// and not know which.
		ctx = context.WithoutCancel(ctx)
	}
	// Wait for every commit, even if the caller went away, as Append
	// does: the events are being stored either way.
	results := make([]appendResult, len(reqs))
	for _, i := range queued {
		results[i] = <-reqs[i].done
	}
	if queueErr != nil {
		err := queueError(queueErr)
		if len(queued) > 0 {
			err = fmt.Errorf("line %d: %w (the lines before it were queued and may be stored; retry the batch with event_ids to make the retry idempotent)", queueLine, err)
		}
		return nil, err
	}
	for _, i := range queued {
		var err error
		if out[i], err = s.appended(reqs[i], results[i]); err != nil {
			// A concurrent append may have taken the event_id first with
			// another event (DESIGN §11): its line is refused, and not
			// shown.
			return nil, lineError(i+1, err)
		}
	}
	return out, nil
}

// lineError prefixes err's message with its line; errorAnswer answers it
// with err's status and code.
func lineError(line int, err error) error { return fmt.Errorf("line %d: %w", line, err) }

// batchLineError is audit.DecodeEvent's refusal of line n of a batch, as
// eventError words it, naming the line; where the JSON went wrong is that
// line's column ("line 3, column 7: …"), a line holding no newline.
func batchLineError(n int, line []byte, err error) error {
	err = bodyError(line, err)
	var je *strictjson.Error
	if errors.As(err, &je) && je.Line == 1 {
		return invalidBody(fmt.Errorf("line %d, column %d: %s", n, je.Column, je.Msg))
	}
	return invalidBody(lineError(n, err))
}

// splitLines splits a JSON Lines body into its lines. A newline ends each
// line, the last one's is optional, and a "\r" before it is left to the
// JSON decoder, which takes it as whitespace. An empty body, a blank line
// and more than MaxBatchEvents lines are errors, the blank line's naming it.
func splitLines(body []byte) ([][]byte, error) {
	if len(body) == 0 {
		return nil, errors.New("the body holds no events: send one JSON event per line")
	}
	body = bytes.TrimSuffix(body, []byte{'\n'})
	n := bytes.Count(body, []byte{'\n'}) + 1
	if n > govapi.MaxBatchEvents {
		return nil, fmt.Errorf("a batch holds at most %d events; this one has %d lines", govapi.MaxBatchEvents, n)
	}
	lines := make([][]byte, 0, n)
	for i := 1; ; i++ {
		line, rest, more := bytes.Cut(body, []byte{'\n'})
		if len(bytes.Trim(line, " \t\r")) == 0 {
			return nil, fmt.Errorf("line %d is blank: a JSON Lines body holds one event per line and no blank lines", i)
		}
		lines = append(lines, line)
		if !more {
			return lines, nil
		}
		body = rest
	}
}
