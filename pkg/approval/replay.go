package approval

import (
	"bytes"
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/termtext"
)

// The chain is the source of truth for approvals (DESIGN §11, issue 13):
// every state change of a request is an approval event whose data holds the
// whole request after the change, and the approvals table, which auditd
// serves to approvers and enforcement points, is a projection of those
// events. The table holds no hash, so an edit of it (status set to
// approved, a made-up vote, a lower quorum, another action hash or expiry)
// is invisible to the chain's own checks; a Replay of the approval events
// finds it.

// TableRow is one row of the approvals table as stored: the columns that
// queries filter on, the seq of the event whose state the row claims to
// be, and the request's JSON, which is what auditd serves.
type TableRow struct {
	ID          string // the id column, the table's key
	Status      string
	RequestedBy string
	CreatedAt   string // as stored: RFC 3339
	ExpiresAt   string
	Seq         int64
	Request     []byte
}

// Mismatch kinds: how a row disagrees with the chain.
const (
	// MismatchDiffers: the row is not the state that the event at its seq
	// recorded for the request (an edited field).
	MismatchDiffers = "differs"
	// MismatchStale: the row is an earlier state; the chain changed the
	// request since (a rolled-back row, or a put that failed).
	MismatchStale = "stale"
	// MismatchUnknownSeq: the row claims a seq that is no approval event
	// of its request.
	MismatchUnknownSeq = "unknown_seq"
	// MismatchNotInChain: no approval event records the request at all (a
	// row inserted by hand).
	MismatchNotInChain = "not_in_chain"
	// MismatchMissing: the chain records a request the table lacks (a
	// deleted row).
	MismatchMissing = "missing_from_table"
	// MismatchUnreadable: a row's request, or an approval event's data, is
	// not a request.
	MismatchUnreadable = "unreadable"
	// MismatchHistory: an approval event records a change that auditd
	// never makes (a quorum, a command or a past vote changed, two votes at
	// once, a request that starts decided): auditd read an edited row and
	// carried the edit into the chain, where the row now agrees with it.
	MismatchHistory = "history"
)

// Mismatch is one disagreement between the approvals table and the chain.
type Mismatch struct {
	ApprovalID string
	Kind       string
	// Seq and EventID name the event the row should equal: the one the row
	// claims (MismatchDiffers), the chain's last for the request
	// (MismatchStale, MismatchUnknownSeq, MismatchMissing) or the
	// unreadable event. For a row the chain does not know, Seq is the row's
	// and EventID is empty.
	Seq     int64
	EventID string
	// Fields are the request's fields (JSON names, such as status, votes,
	// quorum, action_hash, expires_at) that differ, and the table's columns
	// (column.status, …) that disagree with the chain.
	Fields []string
	// Detail says it in one line for people: the kind, and the first
	// differences with the values on each side.
	Detail string
}

// Link is m as a verification report's broken link (audit.Verifier's
// AddApprovalMismatch).
func (m Mismatch) Link() audit.BrokenLink {
	return audit.BrokenLink{Seq: m.Seq, EventID: m.EventID, Kind: audit.KindApprovalMismatch, ApprovalID: m.ApprovalID, Detail: m.Detail}
}

// Replay rebuilds the history of every approval request from the chain's
// approval events, fed in seq order with Add, and compares the approvals
// table with it (Check). It keeps every recorded state; approval events are
// few next to the log.
type Replay struct {
	origin  int64
	last    int64 // seq of the last record added
	added   bool
	newest  int64                 // seq of the last approval event
	history map[string][]recorded // by approval id, in seq order
	bad     []Mismatch            // events that cannot be read
}

// recorded is the state an approval event recorded.
type recorded struct {
	seq       int64
	eventID   string
	eventType string
	state     map[string]any // the event's data, decoded; nil when unreadable
}

// NewReplay returns a replay of the approval events after origin: events at
// or before it were posted by clients of versions that did not reserve the
// approval types, and never describe auditd's requests (the store's
// approvals origin).
func NewReplay(origin int64) *Replay {
	return &Replay{origin: origin, history: map[string][]recorded{}}
}

// Add feeds the next stored record. Records must come in seq order; records
// at or before the origin and events of other types are skipped, so a
// caller may feed the whole log. An approval event whose data is not a
// request is reported by Check (MismatchUnreadable).
func (p *Replay) Add(rec audit.Record) error {
	if rec.Seq <= p.origin {
		return nil
	}
	if p.added && rec.Seq <= p.last {
		return fmt.Errorf("approval replay: seq %d after seq %d: records must come in seq order", rec.Seq, p.last)
	}
	p.added, p.last = true, rec.Seq
	var ev audit.Event
	if err := json.Unmarshal(rec.Body, &ev); err != nil {
		if IsEventType(rec.EventType) {
			p.unreadable("", rec, fmt.Errorf("the event is not JSON: %v", err))
		}
		return nil
	}
	if !IsEventType(ev.EventType) {
		return nil
	}
	p.newest = rec.Seq
	rc := recorded{seq: rec.Seq, eventID: rec.EventID, eventType: ev.EventType}
	if _, err := FromEvent(ev); err != nil {
		p.unreadable(ev.ApprovalID, rec, err)
	} else if rc.state, err = decodeObject(ev.Data); err != nil {
		p.unreadable(ev.ApprovalID, rec, err)
	}
	if ev.ApprovalID != "" {
		h := p.history[ev.ApprovalID]
		if rc.state != nil {
			if m, bad := checkChange(ev.ApprovalID, h, rc); bad {
				p.bad = append(p.bad, m)
			}
		}
		p.history[ev.ApprovalID] = append(h, rc)
	}
	return nil
}

// fixedFields are the request's fields that no change after its creation
// touches: what is asked, of whom, for how long, and the quorum and
// decision that policy set. A later event that changes one carries an
// edit of the table.
var fixedFields = []string{"id", "schema_version", "created_at", "expires_at", "requested_by", "resource", "action", "tool",
	"raw_command", "reason", "quorum", "action_hash", "policy_decision"}

// checkChange judges rc, the next recorded state of request id after the
// states in h, by the changes auditd makes: a request starts pending
// without votes (approval_requested); afterwards each change adds at most
// one vote and keeps the earlier ones, keeps the fixed fields, and never
// makes a decided request pending again. Whatever else a change did came
// from an edited row (DESIGN §11, issue 13: auditd reads the row it
// changes, so an edit ahead of a vote or an expiry enters the chain, and
// the row then agrees with the chain).
func checkChange(id string, h []recorded, rc recorded) (Mismatch, bool) {
	m := Mismatch{ApprovalID: id, Kind: MismatchHistory, Seq: rc.seq, EventID: rc.eventID}
	var prev *recorded
	for i := len(h) - 1; i >= 0 && prev == nil; i-- {
		if h[i].state != nil {
			prev = &h[i]
		}
	}
	votes, _ := rc.state["votes"].([]any)
	if len(h) == 0 {
		if rc.eventType != audit.TypeApprovalRequested || rc.state["status"] != string(Pending) || len(votes) > 0 {
			m.Detail = fmt.Sprintf("history: the chain's first event of this request is at seq %d (%s, status %s, %d votes), not a new pending request: it was created in the table, not through auditd",
				rc.seq, rc.eventType, summary(rc.state["status"]), len(votes))
			return m, true
		}
		return m, false
	}
	if prev == nil {
		return m, false // the earlier states are unreadable, and reported
	}
	var diffs []string
	for _, k := range fixedFields {
		if path, was, now, same := firstDiff(k, prev.state[k], rc.state[k]); !same {
			m.Fields = append(m.Fields, k)
			diffs = append(diffs, fmt.Sprintf("%s %s at seq %d, %s at seq %d", path, was, prev.seq, now, rc.seq))
		}
	}
	before, _ := prev.state["votes"].([]any)
	kept := len(votes) >= len(before)
	for i := 0; kept && i < len(before); i++ {
		kept = equal(before[i], votes[i])
	}
	if !kept || len(votes) > len(before)+1 {
		m.Fields = append(m.Fields, "votes")
		diffs = append(diffs, fmt.Sprintf("votes %s at seq %d, %s at seq %d", summary(before), prev.seq, summary(rc.state["votes"]), rc.seq))
	}
	if prev.state["status"] != string(Pending) && rc.state["status"] == string(Pending) {
		m.Fields = append(m.Fields, "status")
		diffs = append(diffs, fmt.Sprintf("status %s at seq %d, pending again at seq %d", summary(prev.state["status"]), prev.seq, rc.seq))
	}
	if len(diffs) == 0 {
		return m, false
	}
	m.Detail = withDiffs(fmt.Sprintf("history: the event at seq %d (%s) changed what auditd never changes, from a state read from an edited table", rc.seq, rc.eventType), diffs)
	return m, true
}

func (p *Replay) unreadable(id string, rec audit.Record, err error) {
	p.bad = append(p.bad, Mismatch{
		ApprovalID: id, Kind: MismatchUnreadable, Seq: rec.Seq, EventID: rec.EventID,
		Detail: clip("unreadable approval event: " + err.Error()),
	})
}

// Check compares rows, the whole approvals table, with the replayed history
// and returns every mismatch, ordered by seq. A row must be the state that
// the event at its seq recorded for its request, and that event must be
// the request's last; every request of the chain must have a row.
//
// One exception, unless settled: auditd appends a change to the chain and
// then puts it in the table, one change at a time, and puts at its next
// start what a crash left out (catchUp). So the newest approval event,
// when the table has nothing as new (no row's seq reaches it), may be
// missing from the table: its request's row may be the state before it, or
// absent if it created the request. A reader of a database that auditd may
// be writing, or that a crash left, passes settled false (verify-chain); it
// cannot tell that lag from a row rolled back by one change, which auditd
// itself reports, as it verifies with settled true: it holds its approvals
// lock while it reads, so no change is half done.
func (p *Replay) Check(rows []TableRow, settled bool) []Mismatch {
	out := slices.Clone(p.bad)
	high := p.origin // the table's high-water mark, as the store's ApprovalsSeq
	for _, r := range rows {
		high = max(high, r.Seq)
	}
	var inFlight int64 // the one change the table may lack
	if !settled && p.newest > high {
		inFlight = p.newest
	}
	inTable := make(map[string]bool, len(rows))
	for _, row := range rows {
		inTable[row.ID] = true
		out = append(out, checkRow(row, p.history[row.ID], inFlight)...)
	}
	for id, h := range p.history {
		last := h[len(h)-1]
		if inTable[id] || (len(h) == 1 && last.seq == inFlight) {
			continue
		}
		out = append(out, Mismatch{
			ApprovalID: id, Kind: MismatchMissing, Seq: last.seq, EventID: last.eventID,
			Detail: fmt.Sprintf("missing from the table: the chain records this request (last at seq %d, %s), the approvals table has no row for it", last.seq, last.eventType),
		})
	}
	slices.SortFunc(out, func(a, b Mismatch) int {
		switch {
		case a.Seq != b.Seq:
			return cmp.Compare(a.Seq, b.Seq)
		case a.ApprovalID != b.ApprovalID:
			return strings.Compare(a.ApprovalID, b.ApprovalID)
		}
		return strings.Compare(a.Kind, b.Kind)
	})
	return out
}

// checkRow compares one row with its request's history h.
func checkRow(row TableRow, h []recorded, inFlight int64) []Mismatch {
	i := slices.IndexFunc(h, func(r recorded) bool { return r.seq == row.Seq })
	state, err := decodeObject(row.Request)
	if err != nil {
		m := Mismatch{ApprovalID: row.ID, Kind: MismatchUnreadable, Seq: row.Seq,
			Detail: clip("unreadable row: the request column is not a request: " + err.Error())}
		if i >= 0 {
			m.EventID = h[i].eventID
		}
		return []Mismatch{m}
	}
	if len(h) == 0 {
		return []Mismatch{{ApprovalID: row.ID, Kind: MismatchNotInChain, Seq: row.Seq,
			Detail: fmt.Sprintf("not in the chain: no approval event records this request, yet its row claims seq %d", row.Seq)}}
	}
	last := h[len(h)-1]
	if i < 0 {
		m := Mismatch{ApprovalID: row.ID, Kind: MismatchUnknownSeq, Seq: last.seq, EventID: last.eventID}
		m.Detail = fmt.Sprintf("the row claims seq %d, which is no approval event of this request; the chain's last for it is seq %d (%s)", row.Seq, last.seq, last.eventType)
		if last.state != nil {
			var diffs []string
			m.Fields, diffs = diffRow(row, state, last.state)
			m.Detail = withDiffs(m.Detail, diffs)
		}
		return []Mismatch{m}
	}
	var out []Mismatch
	if at := h[i]; at.state != nil {
		if fields, diffs := diffRow(row, state, at.state); len(fields) > 0 {
			out = append(out, Mismatch{
				ApprovalID: row.ID, Kind: MismatchDiffers, Seq: at.seq, EventID: at.eventID, Fields: fields,
				Detail: withDiffs(fmt.Sprintf("%s %s from the chain at seq %d (%s)", strings.Join(fields, ", "), verb(len(fields)), at.seq, at.eventType), diffs),
			})
		}
	}
	if i < len(h)-1 && !(i == len(h)-2 && last.seq == inFlight) {
		m := Mismatch{ApprovalID: row.ID, Kind: MismatchStale, Seq: last.seq, EventID: last.eventID}
		var diffs []string
		if last.state != nil {
			m.Fields, diffs = diffRow(row, state, last.state)
		}
		m.Detail = withDiffs(fmt.Sprintf("stale: the row is the state of seq %d, but the chain changed the request since, last at seq %d (%s)", row.Seq, last.seq, last.eventType), diffs)
		out = append(out, m)
	}
	return out
}

// keyOrder puts the fields that decide what an approval releases first in
// a mismatch's fields; the others follow in name order.
var keyOrder = []string{"status", "votes", "quorum", "action_hash", "expires_at", "requested_by", "resource", "action", "tool", "raw_command"}

// diffRow compares the row (its columns and its request, decoded as state)
// with chain, the state an event recorded: the differing field names and a
// description of each difference.
func diffRow(row TableRow, state, chain map[string]any) (fields, diffs []string) {
	keys := make([]string, 0, len(state)+len(chain))
	for k := range state {
		keys = append(keys, k)
	}
	for k := range chain {
		if _, ok := state[k]; !ok {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b string) int {
		ia, ib := slices.Index(keyOrder, a), slices.Index(keyOrder, b)
		switch {
		case ia >= 0 && ib >= 0:
			return ia - ib
		case ia >= 0:
			return -1
		case ib >= 0:
			return 1
		}
		return strings.Compare(a, b)
	})
	for _, k := range keys {
		// Keys come from the row too: shown as names, never raw.
		if path, table, ch, ok := firstDiff(word(k), state[k], chain[k]); !ok {
			fields = append(fields, word(k))
			diffs = append(diffs, fmt.Sprintf("%s %s in the table, %s in the chain", path, table, ch))
		}
	}
	// The table's own columns beside the request's JSON: queries filter on
	// them (pending, due for expiry, by requester), auditd serves the JSON,
	// so an edit of either one is an edit. The id column is the key the
	// history was found by.
	for _, c := range [...]struct{ name, value string }{
		{"status", row.Status}, {"requested_by", row.RequestedBy},
		{"created_at", row.CreatedAt}, {"expires_at", row.ExpiresAt},
	} {
		if !equal(c.value, chain[c.name]) {
			fields = append(fields, "column."+c.name)
			diffs = append(diffs, fmt.Sprintf("%s column %s in the table, %s in the chain", c.name, summary(c.value), summary(chain[c.name])))
		}
	}
	return fields, diffs
}

// firstDiff compares a and b at path and, when they differ, descends to the
// first difference where both are still arrays of one length or objects:
// "votes[1].by" says more than "votes". It returns that path and the two
// values there, summarized.
func firstDiff(path string, a, b any) (where, sa, sb string, same bool) {
	if equal(a, b) {
		return "", "", "", true
	}
	switch x := a.(type) {
	case []any:
		if y, ok := b.([]any); ok && len(x) == len(y) {
			for i := range x {
				if !equal(x[i], y[i]) {
					return firstDiff(fmt.Sprintf("%s[%d]", path, i), x[i], y[i])
				}
			}
		}
	case map[string]any:
		if y, ok := b.(map[string]any); ok {
			keys := make([]string, 0, len(x)+len(y))
			for k := range x {
				keys = append(keys, k)
			}
			for k := range y {
				if _, ok := x[k]; !ok {
					keys = append(keys, k)
				}
			}
			slices.Sort(keys)
			for _, k := range keys {
				if !equal(x[k], y[k]) {
					return firstDiff(path+"."+word(k), x[k], y[k])
				}
			}
		}
	}
	return path, summary(a), summary(b), false
}

// equal compares two decoded JSON values as requests mean them: times as
// instants (RFC 3339 text with any offset or precision), numbers by value,
// and an absent field, null, "", [] and {} alike (a request without votes
// may be stored with null or [] votes).
func equal(a, b any) bool {
	if absent(a) || absent(b) {
		return absent(a) && absent(b)
	}
	switch x := a.(type) {
	case string:
		y, ok := b.(string)
		return ok && (x == y || sameInstant(x, y))
	case json.Number:
		y, ok := b.(json.Number)
		if !ok {
			return false
		}
		if x == y {
			return true
		}
		rx, okx := new(big.Rat).SetString(string(x))
		ry, oky := new(big.Rat).SetString(string(y))
		return okx && oky && rx.Cmp(ry) == 0
	case bool:
		y, ok := b.(bool)
		return ok && x == y
	case []any:
		y, ok := b.([]any)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !equal(x[i], y[i]) {
				return false
			}
		}
		return true
	case map[string]any:
		y, ok := b.(map[string]any)
		if !ok {
			return false
		}
		for k, v := range x {
			if !equal(v, y[k]) {
				return false
			}
		}
		for k, v := range y {
			if _, ok := x[k]; !ok && !absent(v) {
				return false
			}
		}
		return true
	}
	return false
}

func absent(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case []any:
		return len(x) == 0
	case map[string]any:
		return len(x) == 0
	}
	return false
}

// sameInstant reports whether a and b are both RFC 3339 times of the same
// instant.
func sameInstant(a, b string) bool {
	ta, err := time.Parse(time.RFC3339Nano, a)
	if err != nil {
		return false
	}
	tb, err := time.Parse(time.RFC3339Nano, b)
	return err == nil && ta.Equal(tb)
}

// decodeObject decodes a JSON object, keeping numbers as written.
func decodeObject(b []byte) (map[string]any, error) {
	dec := json.NewDecoder(bytes.NewReader(b))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return nil, err
	}
	if dec.More() {
		return nil, errors.New("data after the JSON object")
	}
	m, ok := v.(map[string]any)
	if !ok {
		return nil, errors.New("not a JSON object")
	}
	return m, nil
}

// summary describes a decoded JSON value in a few words: strings quoted
// and cut, votes as by:decision, resources as type:name.
func summary(v any) string {
	if absent(v) {
		return "none"
	}
	switch x := v.(type) {
	case string:
		return strconv.Quote(cut(x, maxShown))
	case json.Number:
		return cut(string(x), maxShown)
	case bool:
		return strconv.FormatBool(x)
	case []any:
		parts := make([]string, 0, min(len(x), maxItems)+1)
		for i, e := range x {
			if i == maxItems {
				parts = append(parts, fmt.Sprintf("… %d more", len(x)-i))
				break
			}
			parts = append(parts, summary(e))
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case map[string]any:
		by, _ := x["by"].(string)
		decision, _ := x["decision"].(string)
		typ, _ := x["type"].(string)
		name, _ := x["name"].(string)
		switch {
		case by != "":
			return word(by) + ":" + word(decision)
		case typ != "" || name != "":
			return word(typ) + ":" + word(name)
		}
		return "{…}"
	}
	return "?"
}

const (
	maxShown  = 60  // characters of one value in a detail
	maxItems  = 4   // elements of an array in a detail
	maxDetail = 400 // bytes of a whole detail
)

// word shows a name from a row, which may hold anything: printable text as
// it is, anything else quoted.
func word(s string) string {
	s = cut(s, maxShown)
	if s == "" || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) || r == ' ' || r == ',' || r == ':' }) >= 0 {
		return strconv.Quote(s)
	}
	return s
}

// cut shortens s to n runes, marking the cut. It counts characters, not
// bytes as termtext.Truncate does, so a non-ASCII value shows as much of
// itself as an ASCII one; clip bounds the whole detail in bytes.
func cut(s string, n int) string {
	if utf8.RuneCountInString(s) <= n {
		return s
	}
	return string([]rune(s)[:n]) + "…"
}

// withDiffs appends the differences to a detail, bounded.
func withDiffs(head string, diffs []string) string {
	if len(diffs) == 0 {
		return head
	}
	return clip(head + ": " + strings.Join(diffs, "; "))
}

// clip bounds a detail to maxDetail bytes, at a rune boundary, and keeps
// it on one line.
func clip(s string) string {
	return termtext.Truncate(strings.Map(func(r rune) rune {
		if r == '\n' || r == '\r' || r == '\t' {
			return ' '
		}
		return r
	}, s), maxDetail)
}

func verb(n int) string {
	if n == 1 {
		return "differs"
	}
	return "differ"
}
