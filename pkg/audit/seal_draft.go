package audit

import (
	"errors"
	"fmt"
	"strconv"
	"time"
)

// Draft is an event made ready to seal: everything of Seal's work that does
// not depend on the chain. auditd prepares each event in its HTTP handler,
// in parallel, so that its one writer goroutine, which numbers and chains
// events one at a time (DESIGN §6 "Durability"), only splices seq,
// prev_hash and timestamp into the canonical bytes and hashes them.
//
// Draft.Seal gives exactly the record Seal gives for the same event, seq,
// prev and time (TestDraftSealMatchesSeal): the body is appendEventBody's,
// with the values of the three members replaced where appendEventBody wrote
// them. A Draft is immutable; sealing it twice (a batch retried after a
// duplicate event_id) gives two independent records.
type Draft struct {
	rec Record // the columns; the chain fields and Body are Seal's
	// body is the canonical body with placeholder values for the chain
	// fields; at holds the byte ranges of those values, in body order:
	// prev_hash, seq, timestamp (their JCS order, which is fixed because
	// every top-level member name is one of Event's ASCII names).
	body []byte
	at   [3]span
}

type span struct{ start, end int }

// chainMembers are the top-level members whose values Draft.Seal writes,
// in JCS order.
var chainMembers = [3]string{"prev_hash", "seq", "timestamp"}

// Prepare returns e as a Draft, or the error Seal would return for it with
// a valid seq and prev. e's pointer fields are not modified.
func Prepare(e Event) (*Draft, error) {
	if e.EventID == "" {
		return nil, errEmptyEventID
	}
	if e.Tool != nil {
		tool := *e.Tool // normalize edits it
		e.Tool = &tool
	}
	toolName, err := normalize(&e)
	if err != nil {
		return nil, err
	}
	e.Seq, e.PrevHash, e.Timestamp = 0, "", time.Time{}
	body, err := appendEventBody(make([]byte, 0, 1024), &e, true)
	if err != nil {
		return nil, fmt.Errorf("seal: %w", err)
	}
	d := &Draft{rec: columns(&e, toolName), body: body}
	if d.at, err = locateMembers(body); err != nil {
		return nil, fmt.Errorf("seal: %w", err) // appendEventBody changed: TestDraftSealMatchesSeal fails too
	}
	return d, nil
}

// Unsealed returns the draft's canonical body with placeholders for the
// chain fields: equal for two drafts exactly when their events would be
// stored alike (an idempotent retry is one; DESIGN §11).
func (d *Draft) Unsealed() []byte { return d.body }

// Seal returns the record for the draft's event as link seq of the chain,
// after prev, received at now: what Seal returns for the event.
func (d *Draft) Seal(seq int64, prev string, now time.Time) (Record, error) {
	if err := checkLink(seq, prev); err != nil {
		return Record{}, err
	}
	now = now.UTC()
	b := d.body
	body := make([]byte, 0, len(b)+len(prev)+64)
	body = append(body, b[:d.at[0].start]...)
	body = append(body, '"')
	body = append(body, prev...) // hex: nothing to escape
	body = append(body, '"')
	body = append(body, b[d.at[0].end:d.at[1].start]...)
	body = strconv.AppendInt(body, seq, 10) // ≤ 2^53: JCS writes it as an integer
	body = append(body, b[d.at[1].end:d.at[2].start]...)
	body = append(body, '"')
	body, err := now.AppendText(body)
	if err != nil {
		return Record{}, fmt.Errorf("seal: timestamp: %w", err)
	}
	body = append(body, '"')
	body = append(body, b[d.at[2].end:]...)

	rec := d.rec
	rec.Seq, rec.PrevHash, rec.Timestamp = seq, prev, now
	rec.EventHash = Hash(body)
	rec.Body = body
	return rec, nil
}

// locateMembers returns the value ranges of chainMembers among the
// top-level members of body, canonical JSON of an object. It walks the
// top level only (with verification's scanner, bodyscan.go), so a member of
// the same name nested in data or tool.parameters, or the same text inside
// a string, is never taken.
func locateMembers(body []byte) ([3]span, error) {
	var at [3]span
	next := 0 // index in chainMembers of the member looked for
	i := 1    // after '{'
	for next < len(at) {
		name, colon, ok := readString(body, i)
		if !ok || colon >= len(body) || body[colon] != ':' {
			break
		}
		end := skipValue(body, colon+1)
		if end < 0 {
			break
		}
		if string(name) == chainMembers[next] {
			at[next] = span{colon + 1, end}
			next++
		}
		i = end + 1 // past ',' (or '}')
	}
	if next < len(at) {
		return at, errors.New("the body has no top-level " + chainMembers[next] + " member")
	}
	return at, nil
}
