package verifychain

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store"
)

// Comparing the log with signed checkpoints (issue 19). A chain alone
// verifies a log whose tail was cut, or that was rewritten whole with every
// hash recomputed; a checkpoint signed when the log was whole does not
// match either. verify-chain opens every checkpoint with the trusted keys
// (--key), recomputes the RFC 6962 root of the log's first Size events from
// the events' bodies (not from the tree_hashes table, which whoever can
// write the database controls), and compares.

// Checkpoint statuses in the report.
const (
	StatusConsistent   = "consistent"    // the log's first Size events have the signed root
	StatusTruncated    = "truncated"     // the log has fewer than Size events
	StatusRewritten    = "rewritten"     // the root of the first Size events differs
	StatusBadSignature = "bad_signature" // a trusted key's signature does not verify
	StatusUnknownKey   = "unknown_key"   // no signature by a trusted key
	StatusMalformed    = "malformed"     // not a signed checkpoint (database rows only)
)

// SourceDatabase names the database's checkpoints table as a source.
const SourceDatabase = "database"

// CheckpointResult is one checkpoint the log was compared with, in the
// JSON report's "checkpoints": what it signs (as far as it could be read),
// where it was found, and the verdict. One checkpoint found in several
// places (the log file and the database, say) is one result.
type CheckpointResult struct {
	Origin   string   `json:"origin"`
	Size     int64    `json:"size"`
	RootHash string   `json:"root_hash"` // base64, as in the note
	Sources  []string `json:"sources"`
	Status   string   `json:"status"`
	Detail   string   `json:"detail,omitempty"`

	root     tlog.Hash
	verified bool // the signature verified: Origin, Size and RootHash are signed
}

// maxNoteFile bounds a --checkpoint file: a note is a few hundred bytes.
const maxNoteFile = 64 << 10

// maxLogFile bounds a --checkpoint-log file (pkg/checkpoint reads at most
// 64 MiB of it).
const maxLogFile = 64<<20 + 1

// keyHint is the hint of every --key problem.
const keyHint = "pass --key with the verifier key auditd key create printed (NAME+HASH+KEY), or a file holding it"

// loadKeys reads the --key values: each a verifier key, or a file holding
// one. A signer (private) key is refused, and no error quotes a key.
func loadKeys(args []string) (note.Verifiers, error) {
	if len(args) == 0 {
		return nil, cli.Failf("no --key given").WithHint(keyHint)
	}
	vs := make([]note.Verifier, 0, len(args))
	for i, arg := range args {
		text, what := strings.TrimSpace(arg), fmt.Sprintf("--key %d", i+1)
		if _, err := note.NewVerifier(text); err != nil && !isPrivate(text) {
			data, rerr := readBounded(arg, maxNoteFile)
			switch {
			case rerr == nil:
				text, what = strings.TrimSpace(string(data)), "--key "+arg
			case errors.Is(rerr, os.ErrNotExist) && strings.Count(arg, "+") >= 2:
				return nil, cli.Failf("%s is not a verifier key: %v", what, err).WithHint(keyHint)
			default:
				return nil, cli.Failf("%s: %v", what, rerr).WithHint(keyHint)
			}
		}
		if isPrivate(text) {
			return nil, cli.Failf("%s is a signer (private) key; verify-chain needs only the verifier key", what).
				WithHint("pass the verifier key auditd key create printed; keep the signer key with auditd alone")
		}
		v, err := note.NewVerifier(text)
		if err != nil {
			return nil, cli.Failf("%s is not a verifier key: %v", what, err).WithHint(keyHint)
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}

func isPrivate(s string) bool { return strings.HasPrefix(s, "PRIVATE+KEY+") }

func readBounded(path string, limit int64) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, unwrapPath(err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, limit+1))
	if err != nil {
		return nil, unwrapPath(err)
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("larger than %d bytes", limit)
	}
	return data, nil
}

// unwrapPath drops the path from an *os.PathError, which the message
// names already, keeping errors.Is working.
func unwrapPath(err error) error {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}

// offeredNote is a signed note offered as a checkpoint, and where it was
// found.
type offeredNote struct {
	source string
	note   []byte
	// fromFile: the operator gave it (--checkpoint, --checkpoint-log), so
	// text that is not a signed note is a usage error (exit 3), not
	// evidence about the log.
	fromFile bool
}

// readNotes reads the --checkpoint and --checkpoint-log files.
func readNotes(o *VerifyOptions) ([]offeredNote, error) {
	var out []offeredNote
	for _, path := range o.Checkpoints {
		data, err := readBounded(path, maxNoteFile)
		if err != nil {
			return nil, cli.Failf("--checkpoint %s: %v", path, err).
				WithHint("pass --checkpoint FILE holding a signed checkpoint (GET /api/checkpoint)")
		}
		out = append(out, offeredNote{source: path, note: data, fromFile: true})
	}
	for _, path := range o.CheckpointLogs {
		data, err := readBounded(path, maxLogFile-1)
		if err != nil {
			return nil, cli.Failf("--checkpoint-log %s: %v", path, err).
				WithHint("pass --checkpoint-log FILE naming the file auditd --checkpoint-log appends to")
		}
		notes, err := checkpoint.SplitNotes(data)
		if err != nil {
			return nil, cli.Failf("--checkpoint-log %s: %v", path, err).
				WithHint("pass the file auditd --checkpoint-log writes; a single note goes in --checkpoint")
		}
		for i, n := range notes {
			out = append(out, offeredNote{source: fmt.Sprintf("%s (note %d)", path, i+1), note: n, fromFile: true})
		}
	}
	return out, nil
}

// checkpointsReader is a database with a checkpoints table (store.Tree).
type checkpointsReader interface {
	Checkpoints(ctx context.Context, afterSize int64, limit int) ([]store.StoredCheckpoint, error)
}

// dbNotes reads the database's checkpoints table, all of it. A database
// from before the table has none (ErrNoTree).
func dbNotes(ctx context.Context, st Records) ([]offeredNote, error) {
	cr, ok := st.(checkpointsReader)
	if !ok {
		return nil, nil
	}
	var out []offeredNote
	after := int64(-1)
	for {
		page, err := cr.Checkpoints(ctx, after, store.MaxLimit)
		if errors.Is(err, store.ErrNoTree) {
			return nil, nil
		}
		if err != nil {
			return nil, err
		}
		for _, c := range page {
			out = append(out, offeredNote{source: SourceDatabase, note: c.Note})
			after = c.Size
		}
		if len(page) < store.MaxLimit {
			return out, nil
		}
	}
}

// openNotes opens every offered note with the trusted keys and returns
// one result per distinct checkpoint, in size order. A note from a file
// that is not a signed checkpoint is a usage error; every other failure is
// a result that is not consistent.
func openNotes(offered []offeredNote, keys note.Verifiers) ([]*CheckpointResult, error) {
	var out []*CheckpointResult
	byText := map[string]*CheckpointResult{} // verified, by checkpoint text
	failed := map[string]*CheckpointResult{} // the others, by note
	for _, on := range offered {
		c, err := checkpoint.Open(on.note, keys)
		if err == nil {
			text, _ := c.Marshal()
			if r := byText[string(text)]; r != nil {
				if !slices.Contains(r.Sources, on.source) {
					r.Sources = append(r.Sources, on.source)
				}
				continue
			}
			r := &CheckpointResult{
				Origin: c.Origin, Size: c.Size, RootHash: base64.StdEncoding.EncodeToString(c.Root[:]),
				Sources: []string{on.source}, root: c.Root, verified: true,
			}
			byText[string(text)] = r
			out = append(out, r)
			continue
		}
		if on.fromFile && errors.Is(err, checkpoint.ErrMalformed) {
			return nil, cli.Failf("%s: %v", on.source, err).
				WithHint("pass a signed checkpoint as auditd writes it (GET /api/checkpoint, or auditd --checkpoint-log's file with --checkpoint-log)")
		}
		// The same note found twice fails once, with both sources.
		if r := failed[string(on.note)]; r != nil {
			if !slices.Contains(r.Sources, on.source) {
				r.Sources = append(r.Sources, on.source)
			}
			continue
		}
		r := &CheckpointResult{Sources: []string{on.source}, Size: -1}
		failed[string(on.note)] = r
		if claimed, ok := claimedCheckpoint(on.note); ok {
			r.Origin, r.Size, r.RootHash = claimed.Origin, claimed.Size, base64.StdEncoding.EncodeToString(claimed.Root[:])
		}
		switch {
		case errors.Is(err, checkpoint.ErrBadSignature):
			r.Status = StatusBadSignature
			r.Detail = "a trusted key's signature does not verify: the checkpoint was changed after it was signed, or forged"
		case errors.Is(err, checkpoint.ErrUnknownKey):
			r.Status = StatusUnknownKey
			// err says which keys did sign: "(signed by NAME+HASH)".
			r.Detail = "not signed by any --key: forged, or signed by a key not given with --key " + strings.TrimPrefix(err.Error(), checkpoint.ErrUnknownKey.Error()+" ")
		default:
			r.Status = StatusMalformed
			r.Detail = "not a signed checkpoint: " + err.Error()
		}
		out = append(out, r)
	}
	slices.SortStableFunc(out, func(a, b *CheckpointResult) int {
		if a.Size != b.Size {
			return cmpInt(a.Size, b.Size)
		}
		return strings.Compare(a.Origin, b.Origin)
	})
	return out, nil
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// claimedCheckpoint reads the checkpoint a note's text claims, without
// its signatures, to say which checkpoint failed to verify. Nothing read
// here is trusted.
func claimedCheckpoint(msg []byte) (checkpoint.Checkpoint, bool) {
	text, _, ok := bytes.Cut(msg, []byte("\n\n"))
	if !ok {
		return checkpoint.Checkpoint{}, false
	}
	c, err := checkpoint.Parse(append(text, '\n'))
	return c, err == nil
}

// consistency compares the log, fed one record at a time in seq order,
// with the verified checkpoints: at each checkpointed size it recomputes
// the root from the records' bodies (checkpoint.Frontier) and compares it
// with the signed one.
type consistency struct {
	pending []*CheckpointResult // verified, in size order
	next    int
	tree    checkpoint.Frontier
	// lastGood is the largest size found consistent so far, to say where
	// a rewrite begins.
	lastGood int64
	// eventIDs holds the event_id at each checkpointed size, for the
	// broken links.
	eventIDs map[int64]string
}

func newConsistency(results []*CheckpointResult) *consistency {
	c := &consistency{eventIDs: map[int64]string{}}
	for _, r := range results {
		if r.verified {
			c.pending = append(c.pending, r)
		}
	}
	c.settle("")
	return c
}

// active reports whether any checkpoint is to be compared.
func (c *consistency) active() bool { return len(c.pending) > 0 }

// add feeds the next record. Its leaf is the hash of its body, what its
// event_hash should be: a record whose event_hash column was edited is
// compared as the event it holds.
func (c *consistency) add(rec audit.Record) {
	if c.next >= len(c.pending) {
		return
	}
	sum := sha256.Sum256(rec.Body)
	c.tree.Append(tlog.RecordHash(sum[:]))
	c.settle(rec.EventID)
}

// settle judges the checkpoints of the tree's current size.
func (c *consistency) settle(eventID string) {
	for c.next < len(c.pending) && c.pending[c.next].Size == c.tree.Size() {
		r := c.pending[c.next]
		c.next++
		c.eventIDs[r.Size] = eventID
		if got := c.tree.Root(); got == r.root {
			r.Status = StatusConsistent
			c.lastGood = max(c.lastGood, r.Size)
		} else {
			r.Status = StatusRewritten
			where := fmt.Sprintf("an event among seq 1–%d", r.Size)
			if c.lastGood > 0 {
				where = fmt.Sprintf("an event among seq %d–%d (the first %d match a checkpoint)", c.lastGood+1, r.Size, c.lastGood)
			}
			r.Detail = fmt.Sprintf("the log's first %d events have root %s, the checkpoint signed %s: %s was changed, removed, inserted or moved",
				r.Size, base64.StdEncoding.EncodeToString(got[:]), r.RootHash, where)
		}
	}
}

// finish judges the checkpoints beyond the log's end: truncated.
func (c *consistency) finish() {
	for _, r := range c.pending[c.next:] {
		r.Status = StatusTruncated
		r.Detail = fmt.Sprintf("the checkpoint signed %d events; the log has %d: events from seq %d on were deleted", r.Size, c.tree.Size(), c.tree.Size()+1)
	}
	c.next = len(c.pending)
}

// links returns a broken link for every result that is not consistent
// (at most audit.MaxBrokenLinks; the count is all of them).
func checkpointLinks(results []*CheckpointResult, eventIDs map[int64]string) (links []audit.BrokenLink, count int64) {
	for _, r := range results {
		var kind string
		switch r.Status {
		case StatusConsistent:
			continue
		case StatusTruncated:
			kind = audit.KindTruncated
		case StatusRewritten:
			kind = audit.KindRewritten
		default:
			kind = audit.KindCheckpointUnverified
		}
		count++
		if len(links) < audit.MaxBrokenLinks {
			links = append(links, audit.BrokenLink{
				Seq: max(r.Size, 0), EventID: eventIDs[r.Size], Kind: kind,
				Detail: fmt.Sprintf("%s (%s): %s", describe(r), strings.Join(r.Sources, ", "), r.Detail),
			})
		}
	}
	return links, count
}

// describe names a checkpoint in a sentence.
func describe(r *CheckpointResult) string {
	switch {
	case r.Size < 0:
		return "a checkpoint that could not be read"
	case r.verified:
		return fmt.Sprintf("checkpoint %s of size %d", shown(r.Origin), r.Size)
	}
	return fmt.Sprintf("a checkpoint claiming %s of size %d", shown(r.Origin), r.Size)
}

// insertLinks puts the checkpoint links after the chain's links and
// before the approval mismatches, and marks the report unverified.
func insertLinks(rep *audit.Report, links []audit.BrokenLink, count int64) {
	if count == 0 {
		return
	}
	rep.Verified = false
	i := slices.IndexFunc(rep.BrokenLinks, func(l audit.BrokenLink) bool { return l.Kind == audit.KindApprovalMismatch })
	if i < 0 {
		i = len(rep.BrokenLinks)
	}
	rep.BrokenLinks = slices.Insert(rep.BrokenLinks, i, links...)
}

// checkpointSummary is the text report's last line with --key: which
// checkpoints the log was compared with, from where, and the verdicts.
func checkpointSummary(results []*CheckpointResult) string {
	counts := map[string]int{}
	var origins []string
	sizes := map[string][]int64{}
	var sources []string
	for _, r := range results {
		counts[r.Status]++
		if r.Status == StatusConsistent {
			if sizes[r.Origin] == nil {
				origins = append(origins, r.Origin)
			}
			sizes[r.Origin] = append(sizes[r.Origin], r.Size)
		}
		for _, src := range r.Sources {
			if i := strings.LastIndex(src, " (note "); i >= 0 {
				src = src[:i]
			}
			if !slices.Contains(sources, src) {
				sources = append(sources, src)
			}
		}
	}
	var b strings.Builder
	b.WriteString("checkpoints: ")
	if n := counts[StatusConsistent]; n > 0 {
		fmt.Fprintf(&b, "%s consistent (", group(int64(n)))
		for i, origin := range origins {
			if i > 0 {
				b.WriteString("; ")
			}
			fmt.Fprintf(&b, "origin %s: %s", shown(origin), sizeList(sizes[origin]))
		}
		b.WriteString(")")
	} else {
		b.WriteString("none consistent")
	}
	for _, st := range []string{StatusTruncated, StatusRewritten, StatusBadSignature, StatusUnknownKey, StatusMalformed} {
		if n := counts[st]; n > 0 {
			fmt.Fprintf(&b, ", %s %s", group(int64(n)), st)
		}
	}
	shownSources := make([]string, len(sources))
	for i, s := range sources {
		shownSources[i] = shown(s)
	}
	fmt.Fprintf(&b, "; from %s", strings.Join(shownSources, ", "))
	if len(sources) == 1 && sources[0] == SourceDatabase {
		b.WriteString(" (only the database's own: whoever can write it can delete them; compare with --checkpoint-log)")
	}
	return b.String()
}

// sizeList lists a few sizes, or their range.
func sizeList(sizes []int64) string {
	if len(sizes) == 1 {
		return "size " + group(sizes[0])
	}
	if len(sizes) > 8 {
		return fmt.Sprintf("%s sizes from %s to %s", group(int64(len(sizes))), group(sizes[0]), group(sizes[len(sizes)-1]))
	}
	parts := make([]string, len(sizes))
	for i, s := range sizes {
		parts[i] = group(s)
	}
	return "sizes " + strings.Join(parts, ", ")
}
