package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
	"unsafe"
)

// MaxBrokenLinks bounds the chain's links in Report.BrokenLinks, and
// separately the approval mismatches listed after them, so that verifying a
// thoroughly rewritten log still takes constant memory and a broken chain
// cannot crowd the approval mismatches out. The Verifier keeps counting past
// it (BrokenCount); Verified stays false either way.
const MaxBrokenLinks = 1000

// Verifier checks a chain one record at a time, in seq order, in constant
// memory (DESIGN §6): feed it every record with Add (or AddRow), then read
// Report. Parts of a chain can be verified concurrently, each by a
// NewVerifierAfter, and their verdicts joined in order with Join.
//
// Each record gets these checks, in this order, and a BrokenLink for each
// that fails:
//
//   - seq_gap: the first seq is not 1, or a seq is not the previous one
//     plus one (the next record is then expected to follow this one);
//   - prev_mismatch: its prev_hash is not the previous record's event_hash
//     (ZeroHash for the first record);
//   - hash_mismatch: its event_hash is not Hash(Body);
//   - column_mismatch: an indexed column (seq, event_id, timestamp,
//     event_type, trace_id, session_id, agent, action_class, tool name,
//     prev_hash, and approval_id when the store has it: Row.HasApprovalID)
//     disagrees with the body, or the body is not a JSON object whose
//     fields can be read. approval_id is how watchers find an approval's
//     earlier uses (DESIGN §11 "one use per approval", issue 13): cleared
//     or changed, it would hide one.
//
// The chain links through the stored columns (prev_hash, event_hash), so one
// tampering produces its kinds at one or two records and the rest of the log
// verifies:
//
//	tampering (database)                          kinds, at which seq
//	body byte changed, event_hash left            hash_mismatch at k, plus column_mismatch at k
//	                                              if an indexed field changed or the body broke
//	body changed, event_hash recomputed           prev_mismatch at k+1 (the last record: needs checkpoints)
//	event_hash column changed                     hash_mismatch at k, prev_mismatch at k+1
//	prev_hash column changed                      prev_mismatch + column_mismatch at k
//	prev_hash changed in the body only            hash_mismatch + column_mismatch at k
//	prev_hash changed in body and column, rehashed  prev_mismatch at k and at k+1
//	other indexed column changed (approval_id too) column_mismatch at k
//	record k deleted (not the last)               seq_gap + prev_mismatch at k+1
//	last record(s) deleted                        nothing: needs checkpoints (below)
//	records k and k+1 swapped (export lines)      seq_gap + prev_mismatch at k+1, k and k+2
//	record k repeated (export lines)              seq_gap + prev_mismatch at the copy
//	seq column of k changed to j                  seq_gap + column_mismatch at j, seq_gap at k+1
//
// In an export (ParseExportLine) the columns are read from the line itself,
// so column_mismatch cannot occur there, and every field is hashed: a changed
// field is a hash_mismatch; a changed prev_hash adds prev_mismatch at k, a
// changed seq seq_gap at k and k+1, a changed event_hash prev_mismatch at
// k+1. Deleting, swapping and repeating lines behave as in the table.
//
// What a chain cannot see, a signed checkpoint can (issue 19):
// verify-chain --checkpoint compares the log with checkpoints and adds
// links of kinds truncated and rewritten (KindTruncated) beside these.
type Verifier struct {
	total    int64
	broken   int64
	links    []BrokenLink
	lastSeq  int64
	lastHash []byte // the previous record's event_hash, in a buffer reused per record
	first    EventRef
	// The last record's ref, kept as bytes too, so that AddRow allocates
	// nothing per record. Its timestamp is lastTime (Add), or the column's
	// text in lastText (AddRow, lastIsText), parsed only by Report: AddRow
	// parses no time (issue 20).
	lastID     []byte
	lastTime   time.Time
	lastText   []byte
	lastIsText bool
	tsBuf      [64]byte
	// approvals are the approval_mismatch links (AddApprovalMismatch),
	// listed after the chain's.
	approvals []BrokenLink
}

// NewVerifier returns a verifier for a chain that starts at seq 1.
func NewVerifier() *Verifier {
	return NewVerifierAfter(0, ZeroHash)
}

// NewVerifierAfter returns a verifier for the records that follow the one
// with seq and eventHash, so that parts of a chain can be verified
// concurrently: Join its verdict to that of the records before.
func NewVerifierAfter(seq int64, eventHash string) *Verifier {
	return &Verifier{lastSeq: seq, lastHash: []byte(eventHash)}
}

// Row is a stored record as the bytes of its columns, for AddRow.
// Timestamp is the column's text. ApprovalID is the approval_id column
// (nil for NULL or the empty string), compared with the body only when HasApprovalID
// says the store has that column: a database older than it verifies
// without (DESIGN §11, issue 13).
type Row struct {
	Seq                                               int64
	EventID, Timestamp, EventType, TraceID, SessionID []byte
	Agent, ActionClass, ToolName, PrevHash, EventHash []byte
	Body                                              []byte
	ApprovalID                                        []byte
	HasApprovalID                                     bool
}

// Add checks the next record of the chain.
func (v *Verifier) Add(rec Record) {
	v.add(&Row{
		Seq: rec.Seq, EventID: bytesOf(rec.EventID), EventType: bytesOf(rec.EventType),
		TraceID: bytesOf(rec.TraceID), SessionID: bytesOf(rec.SessionID), Agent: bytesOf(rec.Agent),
		ActionClass: bytesOf(rec.ActionClass), ToolName: bytesOf(rec.ToolName),
		PrevHash: bytesOf(rec.PrevHash), EventHash: bytesOf(rec.EventHash), Body: rec.Body,
		ApprovalID: bytesOf(rec.ApprovalID), HasApprovalID: rec.HasApprovalID,
	}, rec.Timestamp, false)
}

// AddRow checks the next record like Add, reading r's bytes in place and
// keeping none of them, so a database reader can pass its own memory that
// is valid only during the call. A Timestamp that does not parse as RFC
// 3339 is the zero time, as the stores read it.
//
// The timestamp column is compared with the body's as text
// (timestampsAgree), without parsing either: the stores write one fixed
// layout, so a byte comparison decides nearly every row, and time.Parse
// runs only for a row it cannot decide (issue 20: parsing was ~6% of
// verify-chain).
func (v *Verifier) AddRow(r *Row) {
	v.add(r, time.Time{}, true)
}

// parseColumn is a timestamp column's time as the stores read it: the zero
// time when it does not parse.
func parseColumn(text []byte) time.Time {
	// The unsafe string dies with err, which is dropped here.
	ts, _ := time.Parse(time.RFC3339Nano, unsafe.String(unsafe.SliceData(text), len(text)))
	return ts
}

// bytesOf views s as bytes without copying; the Verifier never writes to
// them.
func bytesOf(s string) []byte {
	return unsafe.Slice(unsafe.StringData(s), len(s))
}

// add checks r; its timestamp is ts, or when isText the column's text
// r.Timestamp.
func (v *Verifier) add(r *Row, ts time.Time, isText bool) {
	v.total++
	if v.total == 1 {
		if isText {
			ts = parseColumn(r.Timestamp)
		}
		v.first = EventRef{Seq: r.Seq, EventID: string(r.EventID), Timestamp: ts.UTC(), EventHash: string(r.EventHash)}
	}

	if r.Seq != v.lastSeq+1 {
		v.fail(r, KindSeqGap)
	}
	if string(r.PrevHash) != string(v.lastHash) {
		v.fail(r, KindPrevMismatch)
	}
	sum := sha256.Sum256(r.Body)
	var hx [64]byte
	hex.Encode(hx[:], sum[:])
	if string(hx[:]) != string(r.EventHash) {
		v.fail(r, KindHashMismatch)
	}
	if !v.columnsAgree(r, ts, isText) {
		v.fail(r, KindColumnMismatch)
	}
	v.lastSeq = r.Seq
	v.lastHash = append(v.lastHash[:0], r.EventHash...)
	v.lastID = append(v.lastID[:0], r.EventID...)
	v.lastIsText = isText
	if isText {
		v.lastText = append(v.lastText[:0], r.Timestamp...)
	} else {
		v.lastTime = ts
	}
}

func (v *Verifier) fail(r *Row, kind string) {
	v.broken++
	if len(v.links) < MaxBrokenLinks {
		v.links = append(v.links, BrokenLink{Seq: r.Seq, EventID: string(r.EventID), Kind: kind})
	}
}

// AddApprovalMismatch records l, an approvals table row that disagrees with
// the chain's approval events, as a broken link of kind approval_mismatch:
// the verdict is false as for a broken link. The chain's checks cannot see
// an edited approvals table, since the table holds no hash; a replay of the
// approval events can (DESIGN §11, issue 13: pkg/approval's Replay).
func (v *Verifier) AddApprovalMismatch(l BrokenLink) {
	l.Kind = KindApprovalMismatch
	v.broken++
	if len(v.approvals) < MaxBrokenLinks {
		v.approvals = append(v.approvals, l)
	}
}

// Join adds the verdict of w, a verifier of the records that follow v's
// (NewVerifierAfter with v's last seq and event_hash), as if v had been
// fed them: the Report and BrokenCount are those of one Verifier.
func (v *Verifier) Join(w *Verifier) {
	room := MaxBrokenLinks - len(v.approvals)
	v.approvals = append(v.approvals, w.approvals[:min(room, len(w.approvals))]...)
	if w.total == 0 {
		v.broken += w.broken // its approval mismatches
		return
	}
	if v.total == 0 {
		v.first = w.first
	}
	v.total += w.total
	v.broken += w.broken
	room = MaxBrokenLinks - len(v.links)
	v.links = append(v.links, w.links[:min(room, len(w.links))]...)
	v.lastSeq = w.lastSeq
	v.lastHash = append(v.lastHash[:0], w.lastHash...)
	v.lastID = append(v.lastID[:0], w.lastID...)
	v.lastTime, v.lastIsText = w.lastTime, w.lastIsText
	v.lastText = append(v.lastText[:0], w.lastText...)
}

// BrokenCount returns how many broken links were found, including those
// beyond MaxBrokenLinks that the report does not list.
func (v *Verifier) BrokenCount() int64 { return v.broken }

// Report returns the verdict on the records added so far. BrokenLinks is
// never nil (JSON []): the chain's links in seq order, then the approval
// mismatches. FirstEvent and LastEvent are nil for an empty chain.
func (v *Verifier) Report() Report {
	links := make([]BrokenLink, 0, len(v.links)+len(v.approvals))
	r := Report{
		Verified:    v.broken == 0,
		TotalEvents: v.total,
		BrokenLinks: append(append(links, v.links...), v.approvals...),
	}
	if v.total > 0 {
		first := v.first
		lastTime := v.lastTime
		if v.lastIsText {
			lastTime = parseColumn(v.lastText)
		}
		last := EventRef{Seq: v.lastSeq, EventID: string(v.lastID), Timestamp: lastTime.UTC(), EventHash: string(v.lastHash)}
		r.FirstEvent, r.LastEvent = &first, &last
	}
	return r
}

// columnsAgree reports whether r's indexed columns are the body's fields,
// in one forward scan of the body (scanBody) and byte comparisons; the
// timestamp column is ts, or when isText the text r.Timestamp.
func (v *Verifier) columnsAgree(r *Row, ts time.Time, isText bool) bool {
	f := bodyFields{withApprovalID: r.HasApprovalID}
	if !scanBody(r.Body, &f) {
		return false
	}
	// A body without approval_id agrees with a NULL or '' column: both
	// are empty here.
	if r.HasApprovalID && string(f.approvalID) != string(r.ApprovalID) {
		return false
	}
	if !f.hasSeq || f.seq != r.Seq ||
		string(f.eventID) != string(r.EventID) ||
		string(f.eventType) != string(r.EventType) ||
		string(f.traceID) != string(r.TraceID) ||
		string(f.sessionID) != string(r.SessionID) ||
		string(f.agent) != string(r.Agent) ||
		string(f.actionClass) != string(r.ActionClass) ||
		string(f.toolName) != string(r.ToolName) ||
		string(f.prevHash) != string(r.PrevHash) {
		return false
	}
	if isText {
		return timestampsAgree(r.Timestamp, f.timestamp, &v.tsBuf)
	}
	return timeAgrees(ts, f.timestamp, &v.tsBuf)
}

// timestampsAgree reports whether column, a timestamp column's text, is a
// time (it parses as RFC 3339, as the stores read it; else it is the zero
// time) equal to body, the body's timestamp. The stores write the column
// in one layout, RFC 3339 in UTC with nine fraction digits, and Seal the
// body in encoding/json's (the same without the fraction's trailing
// zeros), so for a column in that layout the text alone decides that the
// body agrees: it is the column, or the column without those zeros. What
// that cannot decide (another layout, a body written another way, a
// tampered row) is parsed, by the rules verification had before issue 20;
// TestTimestampsAgree checks that both give one verdict. buf is scratch
// space.
func timestampsAgree(column, body []byte, buf *[64]byte) bool {
	if n, ok := canonicalColumn(column); ok {
		if string(body) == string(column) ||
			len(body) == n+1 && body[n] == 'Z' && string(body[:n]) == string(column[:n]) {
			return true
		}
	}
	return timestampsAgreeParsed(column, body, buf)
}

// timestampsAgreeParsed is timestampsAgree by parsing: the column's time,
// the zero time when it does not parse, compared with the body's.
func timestampsAgreeParsed(column, body []byte, buf *[64]byte) bool {
	ts, err := time.Parse(time.RFC3339Nano, unsafe.String(unsafe.SliceData(column), len(column)))
	if string(column) == string(body) {
		return err == nil // the same text: agreed, if it is a time at all
	}
	return timeAgrees(ts, body, buf)
}

// timeAgrees reports whether body, a body's timestamp, is the time ts; buf
// is scratch space.
func timeAgrees(ts time.Time, body []byte, buf *[64]byte) bool {
	// Seal writes UTC with encoding/json's RFC 3339 form: compare bytes, and
	// parse only a body written some other way.
	if string(ts.UTC().AppendFormat(buf[:0], time.RFC3339Nano)) == string(body) {
		return true
	}
	parsed, err := time.Parse(time.RFC3339Nano, string(body))
	return err == nil && parsed.Equal(ts)
}

// canonicalColumn reports whether column is a time in the stores' layout,
// 2006-01-02T15:04:05.000000000Z, that time.Parse accepts: digits where the
// layout has them, and a month, day (of that month), hour, minute and
// second in range. n is the length of column without its trailing zeros of
// the fraction and the Z (and without the '.' when the fraction is all
// zeros): column[:n]+"Z" is the time in encoding/json's RFC 3339 form.
func canonicalColumn(column []byte) (n int, ok bool) {
	const layout = "dddd-dd-ddTdd:dd:dd.dddddddddZ"
	if len(column) != len(layout) {
		return 0, false
	}
	for i := range len(layout) {
		c := column[i]
		if layout[i] == 'd' {
			if c < '0' || c > '9' {
				return 0, false
			}
		} else if c != layout[i] {
			return 0, false
		}
	}
	num := func(i, j int) int {
		n := 0
		for _, c := range column[i:j] {
			n = n*10 + int(c-'0')
		}
		return n
	}
	year, month, day := num(0, 4), num(5, 7), num(8, 10)
	if month < 1 || month > 12 || day < 1 || day > daysIn(month, year) ||
		num(11, 13) > 23 || num(14, 16) > 59 || num(17, 19) > 59 {
		return 0, false
	}
	n = len(column) - 1 // before the Z
	for column[n-1] == '0' {
		n--
	}
	if column[n-1] == '.' {
		n--
	}
	return n, true
}

// daysIn is the number of days in month of year (proleptic Gregorian, as
// package time counts).
func daysIn(month, year int) int {
	switch month {
	case 2:
		if year%4 == 0 && (year%100 != 0 || year%400 == 0) {
			return 29
		}
		return 28
	case 4, 6, 9, 11:
		return 30
	}
	return 31
}
