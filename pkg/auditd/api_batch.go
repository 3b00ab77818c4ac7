package auditd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"mime"
	"net/http"
	"strconv"

	"github.com/govkit/govkit/pkg/audit"
)

// MaxBatchEvents bounds the events of one batch append: POST /api/events
// with a JSON Lines body. The body is bounded by MaxBody too.
const MaxBatchEvents = 1000

// batchBudgetBytes bounds the batch bodies in flight at once (byteBudget).
const batchBudgetBytes = 4 << 20

// Batch is the body of the answer to a batch append: the events as stored,
// in the order of the request's lines; how many this request created; and
// the line numbers (from 1) of the others, answered with the event stored
// already under their event_id (an earlier request's, or an earlier line's
// of this batch), as a single append answers a retry with 200.
type Batch struct {
	SchemaVersion int               `json:"schema_version"`
	Events        []json.RawMessage `json:"events"`
	Created       int               `json:"created"`
	ExistingLines []int             `json:"existing_lines"`
}

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
// MaxBatchEvents events, one per line, each what postEvent takes.
//
// Why: the writer commits every event queued in one transaction with one
// fsync (group commit, DESIGN §6 "Durability"), but with one event per
// request each client has at most one event in flight, so a commit holds at
// most one event per client, and each event pays for its own HTTP request.
// A batch of N from one client fills a commit the way N clients do.
//
// Every line is decoded, checked and prepared before any is queued (DESIGN
// §3 "Bad input": nothing is half-written): one bad line is a 400 naming
// it, and nothing is stored. Then the events are queued in line order (they
// get increasing seqs; other clients' events may come between them) and the
// answer waits until all of them are durable: 201 and a Batch, or 200 when
// every event_id was stored already (an idempotent retry of the batch).
func (s *Server) postEventBatch(w http.ResponseWriter, r *http.Request) {
	// As in postEvent, count the request as pending while its body is read,
	// so that the writer holds a commit open for it (writer.collect); held
	// is what this handler still owes that count.
	s.w.pending.Add(1)
	held := int64(1)
	defer func() { s.w.pending.Add(-held) }()
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	release, err := s.batchBudget.acquire(r.Context(), len(body))
	if err != nil {
		return // the client went away while waiting: nothing was queued
	}
	defer release()
	lines, err := splitLines(body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	// One receive time for the batch: it arrived at once.
	recv := s.cfg.Now().UTC().Round(0)
	evs := make([]audit.Event, len(lines))
	caller := identity(r)
	for i, line := range lines {
		ev, err := audit.DecodeEvent(line)
		if err != nil {
			s.fail(w, http.StatusBadRequest, fmt.Sprintf("line %d: %v", i+1, err))
			return
		}
		if err := s.bindEvent(caller, &ev); err != nil {
			s.answerError(w, lineError(i+1, err))
			return
		}
		evs[i] = ev
	}

	// reqs[i] is line i+1's request; nil when its event_id is stored
	// already, and stored[i] is then the answer.
	reqs := make([]*appendReq, len(evs))
	stored := make([][]byte, len(evs))
	queue := 0
	var byID map[string]int // line index of each client event_id
	for i, ev := range evs {
		// Prepared here, in the request's goroutine, as submit does for a
		// single event: the handlers canonicalize in parallel and the one
		// writer only chains and hashes (writer.go, appendReq.prepare).
		req, rec, err := s.newAppendReq(r.Context(), ev, recv)
		if err != nil {
			s.answerError(w, lineError(i+1, err))
			return
		}
		if req == nil {
			if stored[i], err = storedJSON(rec); err != nil {
				s.fail(w, http.StatusInternalServerError, fmt.Sprintf("line %d: %v", i+1, err))
				return
			}
			continue
		}
		if req.clientID {
			// One event_id, two different events in one batch: which
			// one the id names would depend on their order (DESIGN §11).
			if byID == nil {
				byID = map[string]int{}
			}
			if j, ok := byID[ev.EventID]; ok && !bytes.Equal(reqs[j].draft.Unsealed(), req.draft.Unsealed()) {
				s.fail(w, http.StatusBadRequest, fmt.Sprintf("lines %d and %d have the same event_id %s but different events: an event_id names one event", j+1, i+1, ev.EventID))
				return
			} else if !ok {
				byID[ev.EventID] = i
			}
		}
		reqs[i] = req
		queue++
	}

	// Tell the writer how many events are on their way before queuing the
	// first, so that it holds its commit open for the rest of them
	// (writer.collect) instead of committing the first few alone.
	s.w.pending.Add(int64(queue) - held)
	held = int64(queue)
	ctx := r.Context()
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
		// Once one event is queued, queue the rest even if the client
		// goes away: it would otherwise leave a part of its batch stored
		// and not know which.
		ctx = context.WithoutCancel(ctx)
	}
	// Wait for every commit, even if the client went away, as postEvent
	// does: the events are being stored either way.
	results := make([]appendResult, len(reqs))
	for _, i := range queued {
		results[i] = <-reqs[i].done
	}
	if queueErr != nil {
		msg := queueErr.Error()
		if len(queued) > 0 {
			msg = fmt.Sprintf("line %d: %v (the lines before it were queued and may be stored; retry the batch with event_ids to make the retry idempotent)", queueLine, queueErr)
		}
		s.fail(w, http.StatusServiceUnavailable, msg)
		return
	}
	for _, i := range queued {
		if res := &results[i]; res.err == nil && !res.created && !sameEvent(reqs[i].draft, res.json) {
			// A concurrent append took the event_id first with another
			// event (DESIGN §11): its line is refused, and not shown.
			res.err = reusedID(reqs[i].ev.EventID)
		}
		if a := appendAnswer(results[i]); a.status != http.StatusCreated && a.status != http.StatusOK {
			s.failDetail(w, a.status, a.code, fmt.Sprintf("line %d: %s", i+1, a.msg), a.detail)
			return
		}
	}

	size := 0
	for i := range reqs {
		size += len(stored[i]) + len(results[i].json) + 1
	}
	buf := make([]byte, 0, size+64)
	buf = append(buf, `{"schema_version":1,"events":[`...)
	created := 0
	existing := make([]byte, 0, 16)
	for i := range reqs {
		if i > 0 {
			buf = append(buf, ',')
		}
		if reqs[i] != nil && results[i].created {
			buf = append(buf, results[i].json...)
			created++
			continue
		}
		if reqs[i] == nil {
			buf = append(buf, stored[i]...)
			s.m.duplicates.Inc()
		} else {
			buf = append(buf, results[i].json...) // counted by the writer
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
	writeJSON(w, status, buf)
}

// lineError prefixes err's message with its line, keeping its status.
func lineError(line int, err error) error {
	var ref *refusal
	if errors.As(err, &ref) {
		r := *ref
		r.msg = fmt.Sprintf("line %d: %s", line, ref.msg)
		return &r
	}
	var bad *requestError
	if errors.As(err, &bad) {
		return &requestError{fmt.Errorf("line %d: %w", line, err)}
	}
	return fmt.Errorf("line %d: %w", line, err)
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
	if n > MaxBatchEvents {
		return nil, fmt.Errorf("a batch holds at most %d events; this one has %d lines", MaxBatchEvents, n)
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
