package audit

import (
	"crypto/sha256"
	"encoding/hex"
	"time"
)

// MaxBrokenLinks bounds Report.BrokenLinks, so that verifying a thoroughly
// rewritten log still takes constant memory. The Verifier keeps counting
// past it (BrokenCount); Verified stays false either way.
const MaxBrokenLinks = 1000

// Verifier checks a chain one record at a time, in seq order, in constant
// memory (DESIGN §6): feed it every record with Add, then read Report.
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
//     prev_hash) disagrees with the body, or the body is not a JSON object
//     whose fields can be read.
//
// The chain links through the stored columns (prev_hash, event_hash), so one
// tampering produces its kinds at one or two records and the rest of the log
// verifies:
//
//	tampering (database)                          kinds, at which seq
//	body byte changed, event_hash left            hash_mismatch at k, plus column_mismatch at k
//	                                              if an indexed field changed or the body broke
//	body changed, event_hash recomputed           prev_mismatch at k+1 (the last record: undetectable)
//	event_hash column changed                     hash_mismatch at k, prev_mismatch at k+1
//	prev_hash column changed                      prev_mismatch + column_mismatch at k
//	prev_hash changed in the body only            hash_mismatch + column_mismatch at k
//	prev_hash changed in body and column, rehashed  prev_mismatch at k and at k+1
//	other indexed column changed                  column_mismatch at k
//	record k deleted (not the last)               seq_gap + prev_mismatch at k+1
//	last record(s) deleted                        nothing: needs checkpoints (DESIGN §6 "Later")
//	records k and k+1 swapped (export lines)      seq_gap + prev_mismatch at k+1, k and k+2
//	record k repeated (export lines)              seq_gap + prev_mismatch at the copy
//	seq column of k changed to j                  seq_gap + column_mismatch at j, seq_gap at k+1
//
// In an export (ParseExportLine) the columns are read from the line itself,
// so column_mismatch cannot occur there, and every field is hashed: a changed
// field is a hash_mismatch; a changed prev_hash adds prev_mismatch at k, a
// changed seq seq_gap at k and k+1, a changed event_hash prev_mismatch at
// k+1. Deleting, swapping and repeating lines behave as in the table.
type Verifier struct {
	total    int64
	broken   int64
	links    []BrokenLink
	lastSeq  int64
	lastHash string
	first    EventRef
	last     EventRef
	tsBuf    [64]byte
}

// NewVerifier returns a verifier for a chain that starts at seq 1.
func NewVerifier() *Verifier {
	return &Verifier{lastHash: ZeroHash}
}

// Add checks the next record of the chain.
func (v *Verifier) Add(rec Record) {
	v.total++
	ref := EventRef{Seq: rec.Seq, EventID: rec.EventID, Timestamp: rec.Timestamp.UTC(), EventHash: rec.EventHash}
	if v.total == 1 {
		v.first = ref
	}
	v.last = ref

	if rec.Seq != v.lastSeq+1 {
		v.fail(rec, KindSeqGap)
	}
	if rec.PrevHash != v.lastHash {
		v.fail(rec, KindPrevMismatch)
	}
	sum := sha256.Sum256(rec.Body)
	var hx [64]byte
	hex.Encode(hx[:], sum[:])
	if string(hx[:]) != rec.EventHash {
		v.fail(rec, KindHashMismatch)
	}
	if !v.columnsAgree(&rec) {
		v.fail(rec, KindColumnMismatch)
	}
	v.lastSeq, v.lastHash = rec.Seq, rec.EventHash
}

func (v *Verifier) fail(rec Record, kind string) {
	v.broken++
	if len(v.links) < MaxBrokenLinks {
		v.links = append(v.links, BrokenLink{Seq: rec.Seq, EventID: rec.EventID, Kind: kind})
	}
}

// BrokenCount returns how many broken links were found, including those
// beyond MaxBrokenLinks that the report does not list.
func (v *Verifier) BrokenCount() int64 { return v.broken }

// Report returns the verdict on the records added so far. BrokenLinks is
// never nil (JSON []), FirstEvent and LastEvent are nil for an empty chain.
func (v *Verifier) Report() Report {
	r := Report{
		Verified:    v.broken == 0,
		TotalEvents: v.total,
		BrokenLinks: append(make([]BrokenLink, 0, len(v.links)), v.links...),
	}
	if v.total > 0 {
		first, last := v.first, v.last
		r.FirstEvent, r.LastEvent = &first, &last
	}
	return r
}

// columnsAgree reports whether rec's indexed columns are the body's fields.
func (v *Verifier) columnsAgree(rec *Record) bool {
	var f bodyFields
	if !scanBody(rec.Body, &f) {
		return false
	}
	if !f.hasSeq || f.seq != rec.Seq ||
		string(f.eventID) != rec.EventID ||
		string(f.eventType) != rec.EventType ||
		string(f.traceID) != rec.TraceID ||
		string(f.sessionID) != rec.SessionID ||
		string(f.agent) != rec.Agent ||
		string(f.actionClass) != rec.ActionClass ||
		string(f.toolName) != rec.ToolName ||
		string(f.prevHash) != rec.PrevHash {
		return false
	}
	// Seal writes UTC with encoding/json's RFC 3339 form: compare bytes, and
	// parse only a body written some other way.
	if string(rec.Timestamp.UTC().AppendFormat(v.tsBuf[:0], time.RFC3339Nano)) == string(f.timestamp) {
		return true
	}
	ts, err := time.Parse(time.RFC3339Nano, string(f.timestamp))
	return err == nil && ts.Equal(rec.Timestamp)
}
