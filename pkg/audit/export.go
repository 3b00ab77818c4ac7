package audit

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// ExportLine returns rec as one line of an export, without the newline.
//
// The export format (auditd export, verify-chain --jsonl) is JSON Lines, one
// record per line in seq order, each line the canonical JSON (RFC 8785) of
// the body's object with one more member, "event_hash". JCS sorts members,
// so event_hash lands just before event_id:
//
//	{"action_class":"write","agent":"a1",…,"event_hash":"3f2a…","event_id":"evt_…","event_type":"tool_execution",…,"seq":1,…}
//
// An export is JSON, not the stored bytes: verifying one (ParseExportLine)
// re-derives each body as the canonical form of the line's object without
// event_hash, and hashes that. A line ExportLine wrote from an untampered
// record re-derives exactly the stored body, so it verifies; re-formatting a
// line (whitespace, member order, escapes) changes nothing; any change to a
// value shows.
//
// ExportLine fails when rec.Body is not a JSON object or already has an
// event_hash member.
func ExportLine(rec Record) ([]byte, error) {
	n, err := parseJSON(rec.Body)
	if err != nil {
		return nil, fmt.Errorf("export seq %d: body: %w", rec.Seq, err)
	}
	if n.kind != kindObject {
		return nil, fmt.Errorf("export seq %d: body is not a JSON object", rec.Seq)
	}
	n.keys = append(n.keys, "event_hash")
	n.elems = append(n.elems, node{kind: kindString, str: rec.EventHash})
	if _, ok := sortMembers(&n); !ok {
		return nil, fmt.Errorf("export seq %d: body has an event_hash member", rec.Seq)
	}
	return appendNode(make([]byte, 0, len(rec.Body)+len(`,"event_hash":""`)+len(rec.EventHash)), &n), nil
}

// ParseExportLine turns one export line into the Record it describes: Body is
// the canonical JSON of the line's object without event_hash, EventHash is
// that member, and the indexed columns are read from the body (so
// verification of an export never reports column_mismatch). The line must be
// a JSON object (strictly: no duplicate members, valid UTF-8) with a string
// event_hash and an integer seq; timestamp, if present, must be RFC 3339,
// and the other indexed fields strings. It does not check the hash: that is
// the Verifier's job.
func ParseExportLine(line []byte) (Record, error) {
	return parseRecord(line, true)
}

// ParseEvent reads one event as auditd serves it (GET /api/events/{id},
// the Unix socket stream, an export line) or as it was hashed (its body,
// without event_hash), into the Record it describes, as ParseExportLine
// does; event_hash is optional. Body is the canonical JSON of the event
// without event_hash, so Hash(Body) is the event's hash whatever the file
// claims: an offline check (verify-chain --proof, issue 19) recomputes it
// rather than trusting the EventHash read here.
func ParseEvent(raw []byte) (Record, error) {
	return parseRecord(raw, false)
}

func parseRecord(line []byte, needHash bool) (Record, error) {
	root, err := parseJSON(line)
	if err != nil {
		return Record{}, err
	}
	if root.kind != kindObject {
		if needHash {
			return Record{}, errors.New("an export line must be a JSON object")
		}
		return Record{}, errors.New("an event must be a JSON object")
	}
	var rec Record
	switch h := root.member("event_hash"); {
	case h == nil && needHash:
		return Record{}, errors.New("no event_hash member")
	case h == nil:
	case h.kind != kindString:
		return Record{}, errors.New("event_hash must be a string")
	default:
		rec.EventHash = h.str
	}
	body := root.without("event_hash")
	seq := body.member("seq")
	if seq == nil {
		return Record{}, errors.New("no seq member")
	}
	if seq.kind != kindNumber || seq.num != math.Trunc(seq.num) || math.Abs(seq.num) > maxSafeInteger {
		return Record{}, errors.New("seq must be an integer")
	}
	rec.Seq = int64(seq.num)
	for _, f := range [...]struct {
		name string
		dst  *string
	}{
		{"event_id", &rec.EventID}, {"event_type", &rec.EventType}, {"trace_id", &rec.TraceID},
		{"session_id", &rec.SessionID}, {"agent", &rec.Agent}, {"action_class", &rec.ActionClass},
		{"prev_hash", &rec.PrevHash},
	} {
		if *f.dst, err = optionalString(&body, f.name); err != nil {
			return Record{}, err
		}
	}
	ts, err := optionalString(&body, "timestamp")
	if err != nil {
		return Record{}, err
	}
	if ts != "" {
		if rec.Timestamp, err = time.Parse(time.RFC3339Nano, ts); err != nil {
			return Record{}, errors.New("timestamp is not an RFC 3339 time")
		}
	}
	if tool := body.member("tool"); tool != nil && tool.kind != kindNull {
		if tool.kind != kindObject {
			return Record{}, errors.New("tool must be an object {" + strings.Join(toolFields, ", ") + "}")
		}
		if rec.ToolName, err = optionalString(tool, "name"); err != nil {
			return Record{}, fmt.Errorf("tool.%w", err)
		}
	}
	rec.Body = appendNode(make([]byte, 0, len(line)), &body)
	return rec, nil
}

func optionalString(obj *node, name string) (string, error) {
	v := obj.member(name)
	if v == nil {
		return "", nil
	}
	if v.kind != kindString {
		return "", fmt.Errorf("%s must be a string", name)
	}
	return v.str, nil
}
