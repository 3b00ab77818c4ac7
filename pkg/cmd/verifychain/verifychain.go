// Package verifychain is the command tree of the verify-chain binary: it
// verifies the hash chain of an audit database or export offline (DESIGN §6).
package verifychain

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/termtext"
)

// MaxLine bounds one line of a JSONL export (DESIGN §3: 1 MiB per line).
const MaxLine = 1 << 20

// exitTampered is the exit code for a chain with broken links (DESIGN §6);
// 0 is verified, 3 an error.
const exitTampered = 1

// Records is what verify-chain reads from a database: the store's Scan
// (pkg/store.Store) and Close.
type Records interface {
	Scan(ctx context.Context, afterSeq int64, fn func(audit.Record) error) error
	Close() error
}

// VerifyOptions are the parsed flags and the dependencies of one run.
type VerifyOptions struct {
	IO *cli.IOStreams
	// OpenDB opens an audit database read-only. Nil means the SQLite store
	// (openDB).
	OpenDB func(path string) (Records, error)

	Output cli.Format
	DB     string
	// dbSource names where --db came from when not the command line
	// (GOVKIT_AUDIT_DB, a config file), for error messages.
	dbSource string
	JSONL    string

	// Signed checkpoints (issue 19): the notes to compare the log with,
	// and the verifier keys (or files holding them) that must have signed
	// them.
	Checkpoints    []string
	CheckpointLogs []string
	Keys           []string
	// Proof and Event: the offline inclusion check of one event
	// (--proof), with Checkpoints' one note or the proof's own.
	Proof string
	Event string
}

// NewCmdVerifyChain returns the verify-chain root command. It only declares
// and validates flags; runF, when not nil, replaces the run function (tests).
func NewCmdVerifyChain(streams *cli.IOStreams, runF func(*VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "verify-chain --db FILE | --jsonl FILE [--checkpoint-log FILE | --checkpoint NOTE_FILE --key VERIFIER_KEY] [-o text|json]",
		Short: "Verify the hash chain of an audit database or export",
		Long: `Verify-chain checks an audit log offline: every event's hash against its
stored bytes, every link to the event before it, seq continuity from 1, and,
in a database, that the indexed columns agree with the hashed body. It reads in
constant memory, so logs of any size verify.

--db opens an auditd SQLite database read-only; it may be in use by a running
auditd, or a copy. --jsonl reads an export ("auditd export"; "-" is standard
input): one event per line, each the event's canonical JSON with its
event_hash; lines are at most 1 MiB.

In a database, verify-chain also replays the approval events of the chain
and compares the approvals table with them: the table is a projection of the
chain, which is the source of truth for approvals. A row whose status, votes,
quorum, action hash, expiry or any other field is not what the chain
recorded, a row no event created, a request of the chain the table lacks, a
row behind its request's last change, and an edit that a later change
carried into the chain (two votes at once, a changed quorum or command) are
each an approval_mismatch naming the approval and the fields. The newest
change, which auditd appends to the chain before it puts it in the table,
is not reported missing while the table has yet to catch up (auditd is
writing, or stopped between the two); auditd's own GET /api/verify reports
it. An export has no approvals table: --jsonl checks the chain only.

The report lists up to 1000 broken links, each with its seq, event_id and
kind: seq_gap, prev_mismatch, hash_mismatch or column_mismatch, and then up to
1000 approval mismatches, each with its approval_id and a detail (and
with --key, the checkpoints' links between them, each with a detail). Output is
text on a terminal and one JSON object otherwise (choose with -o):
"verified", "total_events", "broken_links", "first_event", "last_event",
"schema_version".

A chain alone cannot reveal that its newest events were deleted, or a log
rewritten whole, every hash recomputed, by someone with write access. Signed
checkpoints can: auditd --checkpoint-key signs the Merkle root (RFC 6962) of
its first N events and appends each note to --checkpoint-log. With --key
(the verifier key auditd key create printed, or a file holding it;
repeatable), verify-chain opens every checkpoint given with --checkpoint
(one note) and --checkpoint-log (auditd's file), and with --db those in the
database's checkpoints table too; it recomputes the root of the log's first
N events from the events' bodies (not from the stored tree, which whoever
can write the database controls) and compares. A checkpoint the log
disagrees with is a broken link: truncated (the log has fewer events than
the checkpoint signed) or rewritten (the root of its first N events
differs); a checkpoint whose signature does not verify with the keys given
(changed, forged, or signed by another key) is checkpoint_unverified. The
report lists every checkpoint compared, its origin, size, sources and status
(JSON "checkpoints"; in text, one last line). Text in a --checkpoint or
--checkpoint-log file that is not a signed checkpoint is an error (exit 3);
so is --key with no checkpoint found anywhere.

--proof checks one event's inclusion offline, without the database: the
event (--event: GET /api/events/{id}'s JSON, or an export line; its hash is
recomputed from its body, never read from the file), the inclusion proof
(GET /api/proof/inclusion's JSON) and the checkpoint of the proof's size
(--checkpoint, or the note the proof carries), opened with --key. It prints
whether the event is included ("included", and otherwise a "reason":
event_mismatch, proof_invalid or checkpoint_unverified).

Exit status:

    0  verified: no broken link (--proof: the event is included)
    1  tampering found: a broken link, an approval mismatch, or a checkpoint
       the log disagrees with or that does not verify (--proof: not included)
    3  usage error, unreadable or malformed input, internal failure`,
		Example: `  verify-chain --db /var/lib/govkit/audit.db
  auditd export --db audit.db | verify-chain --jsonl -
  verify-chain --jsonl audit.jsonl -o json | jq .broken_links
  verify-chain --db audit.db --checkpoint-log /var/lib/govkit/checkpoints.log --key "$(cat audit.vkey)"
  verify-chain --proof proof.json --event event.json --key audit.vkey`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.dbSource = cli.FlagSource(c.Flags(), "db")
			if err := opts.validate(c.Flags().Changed("db")); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return verifyRun(opts)
		},
	}
	f := cmd.Flags()
	cli.AddOutputFlag(cmd, &opts.Output)
	f.StringVar(&opts.DB, "db", "", "verify the audit database, read-only: a SQLite `FILE`, or a PostgreSQL postgres://… URL or host=… dbname=… string")
	f.StringVar(&opts.JSONL, "jsonl", "", "verify the export `FILE` (JSON Lines; - for standard input)")
	// The same setting as auditd's --db, so that a configured host needs no flag.
	f.StringArrayVar(&opts.Checkpoints, "checkpoint", nil, "compare the log with the signed checkpoint in `NOTE_FILE` (GET /api/checkpoint; repeatable; needs --key)")
	f.StringArrayVar(&opts.CheckpointLogs, "checkpoint-log", nil, "compare the log with every signed checkpoint in `FILE` (auditd --checkpoint-log; repeatable; needs --key)")
	f.StringArrayVar(&opts.Keys, "key", nil, "trust checkpoints signed by `VERIFIER_KEY` (as auditd key create prints it), or a file holding it (repeatable)")
	f.StringVar(&opts.Proof, "proof", "", "check offline that the event in --event is in the log: the inclusion proof in `PROOF.json` (GET /api/proof/inclusion)")
	f.StringVar(&opts.Event, "event", "", "the event `EVENT.json` whose inclusion --proof proves (GET /api/events/{id}, or an export line)")
	cli.KeepEnv(f, "db", "GOVKIT_AUDIT_DB")
	// Not from a config file: auditd's checkpoint-log setting there would
	// make every plain verify-chain a checkpoint check.
	cli.SkipConfig(f, "jsonl", "checkpoint", "checkpoint-log", "key", "proof", "event")
	_ = cmd.MarkFlagFilename("db", "db")
	_ = cmd.MarkFlagFilename("jsonl", "jsonl")
	_ = cmd.MarkFlagFilename("checkpoint-log")
	_ = cmd.MarkFlagFilename("checkpoint")
	_ = cmd.MarkFlagFilename("proof", "json")
	_ = cmd.MarkFlagFilename("event", "json")
	cli.AddConfigFlag(cmd)
	return cmd
}

// validate picks the input: exactly one of --db and --jsonl on the command
// line, and a --jsonl on the command line wins over a --db from the
// environment or a config file.
func (o *VerifyOptions) validate(dbOnCommandLine bool) error {
	if o.Proof != "" || o.Event != "" {
		return o.validateProof(dbOnCommandLine)
	}
	hasCheckpoints := len(o.Checkpoints) > 0 || len(o.CheckpointLogs) > 0
	switch {
	case hasCheckpoints && len(o.Keys) == 0:
		return cli.Failf("--checkpoint and --checkpoint-log need --key: a checkpoint proves nothing until its signature is verified").
			WithHint("pass --key VERIFIER_KEY, the verifier key auditd key create printed, or a file holding it")
	case len(o.Keys) > 0 && !hasCheckpoints && o.JSONL != "":
		return cli.Failf("--key with --jsonl needs --checkpoint or --checkpoint-log: an export holds no checkpoints").
			WithHint("pass --checkpoint-log FILE (auditd --checkpoint-log) or --checkpoint NOTE_FILE")
	}
	switch {
	case o.JSONL != "" && dbOnCommandLine:
		return cli.Failf("--db and --jsonl cannot be used together").
			WithHint("pass --db FILE to verify a database, or --jsonl FILE to verify an export")
	case o.JSONL != "":
		o.DB, o.dbSource = "", ""
	case o.DB == "":
		return cli.Failf("nothing to verify").
			WithHint("pass --db FILE (or set GOVKIT_AUDIT_DB) to verify a database, or --jsonl FILE to verify an export")
	}
	return nil
}

// approvalsReader is a database with an approvals table (the SQLite store):
// verify-chain compares it with the chain's approval events.
type approvalsReader interface {
	ApprovalsSnapshot(ctx context.Context) (store.ApprovalsSnapshot, bool, error)
}

// chainVerifier is a database that verifies its whole chain itself, faster
// than its Scan feeding a Verifier (the SQLite store's VerifyChain uses
// every core and copies no row).
type chainVerifier interface {
	VerifyChain(ctx context.Context) (*audit.Verifier, error)
}

func verifyRun(o *VerifyOptions) error {
	if o.Proof != "" {
		return proofRun(o)
	}
	var ck *checkpointCheck
	if len(o.Keys) > 0 {
		keys, err := loadKeys(o.Keys)
		if err != nil {
			return err
		}
		offered, err := readNotes(o)
		if err != nil {
			return err
		}
		ck = &checkpointCheck{keys: keys, offered: offered}
	}
	var v *audit.Verifier
	var err error
	if o.JSONL != "" {
		v = audit.NewVerifier()
		err = verifyJSONL(o, v, ck)
	} else {
		v, err = verifyDB(o, ck)
	}
	if err != nil {
		return err
	}
	rep := v.Report()
	broken := v.BrokenCount()
	var results []*CheckpointResult
	if ck != nil {
		links, count := checkpointLinks(ck.results, ck.cons.eventIDs)
		insertLinks(&rep, links, count)
		broken += count
		results = ck.results
	}
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		if err := writeJSON(o.IO.Out, rep, results); err != nil {
			return err
		}
	} else if err := writeText(o.IO.Out, rep, broken, results); err != nil {
		return cli.Failf("writing the report: %v", err)
	}
	if !rep.Verified {
		return cli.Silent(exitTampered)
	}
	return nil
}

// checkpointCheck is one run's comparison of the log with signed
// checkpoints: the trusted keys, the notes offered, and, once opened,
// their results and the comparison.
type checkpointCheck struct {
	keys    note.Verifiers
	offered []offeredNote
	results []*CheckpointResult
	cons    *consistency
}

// open opens the offered notes; with none at all there is nothing to
// compare the log with, which is not a verification (exit 3).
func (ck *checkpointCheck) open(where string) error {
	if len(ck.offered) == 0 {
		return cli.Failf("no signed checkpoint to compare the log with: %s", where).
			WithHint("pass --checkpoint-log FILE (the file auditd --checkpoint-log appends to) or --checkpoint NOTE_FILE (GET /api/checkpoint)")
	}
	var err error
	if ck.results, err = openNotes(ck.offered, ck.keys); err != nil {
		return err
	}
	ck.cons = newConsistency(ck.results)
	return nil
}

func verifyDB(o *VerifyOptions, ck *checkpointCheck) (*audit.Verifier, error) {
	open := o.OpenDB
	if open == nil {
		open = openDB
	}
	hint := "pass --db FILE naming an auditd database"
	if o.dbSource != "" {
		hint += ", or fix " + o.dbSource
	}
	st, err := open(o.DB)
	if err != nil {
		return nil, cli.Fail(err, hint)
	}
	defer st.Close()
	ctx := context.Background()
	if ck != nil {
		// The database's own checkpoints too: a note auditd signed is
		// evidence wherever it is found, though whoever can write the
		// database can delete these (the files given are the copy that
		// lives elsewhere).
		notes, err := dbNotes(ctx, st)
		if err != nil {
			return nil, cli.Fail(fmt.Errorf("reading %s: %w", o.DB, err), "")
		}
		ck.offered = append(ck.offered, notes...)
		where := "the database's checkpoints table is empty"
		if len(o.Checkpoints)+len(o.CheckpointLogs) > 0 {
			where = "the files given hold none, and the database's checkpoints table is empty"
		}
		if err := ck.open(where); err != nil {
			return nil, err
		}
	}
	var v *audit.Verifier
	if cv, ok := st.(chainVerifier); ok {
		v, err = cv.VerifyChain(ctx)
		if err == nil && ck != nil && ck.cons.active() {
			// A second pass for the Merkle roots: the fast path hashes
			// in SQLite's memory and hands no body out.
			err = st.Scan(ctx, math.MinInt64, func(r audit.Record) error {
				ck.cons.add(r)
				return nil
			})
		}
	} else {
		v = audit.NewVerifier()
		// From the lowest possible seq: a row whose seq was changed to 0 or
		// below must be seen too.
		err = st.Scan(ctx, math.MinInt64, func(r audit.Record) error {
			v.Add(r)
			if ck != nil {
				ck.cons.add(r)
			}
			return nil
		})
	}
	if err != nil {
		return nil, cli.Fail(fmt.Errorf("reading %s: %w", o.DB, err), "")
	}
	if ck != nil {
		ck.cons.finish()
	}
	if ar, ok := st.(approvalsReader); ok {
		if err := checkApprovals(ctx, ar, v); err != nil {
			return nil, cli.Fail(fmt.Errorf("reading %s: %w", o.DB, err), "")
		}
	}
	return v, nil
}

// checkApprovals adds to v an approval_mismatch for every approval whose
// row in the approvals table disagrees with the chain (DESIGN §11, issue
// 13). The database may be in use, or left by a crash, so the one change
// auditd may have appended and not yet put is not a mismatch (settled is
// false).
func checkApprovals(ctx context.Context, ar approvalsReader, v *audit.Verifier) error {
	snap, ok, err := ar.ApprovalsSnapshot(ctx)
	if err != nil || !ok {
		return err
	}
	ms, err := snap.Mismatches(false)
	if err != nil {
		return err
	}
	for _, m := range ms {
		v.AddApprovalMismatch(m.Link())
	}
	return nil
}

func verifyJSONL(o *VerifyOptions, v *audit.Verifier, ck *checkpointCheck) error {
	if ck != nil {
		if err := ck.open("the files given hold none"); err != nil {
			return err
		}
	}
	name, in, done, err := cli.OpenInput(o.JSONL, o.IO.In)
	if err != nil {
		return cli.Failf("--jsonl %s: %v", name, err).WithHint("pass --jsonl FILE naming an export (auditd export), or - for standard input")
	}
	defer done()
	sc := bufio.NewScanner(in)
	sc.Buffer(make([]byte, 0, 64<<10), MaxLine+1) // +1: the newline
	n := 0
	for sc.Scan() {
		n++
		line := sc.Bytes()
		if len(line) == 0 {
			return cli.Failf("%s:%d: empty line", name, n).WithHint("an export has one event per line and no blank lines")
		}
		rec, err := audit.ParseExportLine(line)
		if err != nil {
			return cli.Failf("%s:%d: %v", name, n, err).WithHint("each line must be an event as auditd export writes it")
		}
		v.Add(rec)
		if ck != nil {
			ck.cons.add(rec)
		}
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return cli.Failf("%s:%d: line longer than 1 MiB", name, n+1)
		}
		return cli.Failf("reading %s: %v", name, err)
	}
	if ck != nil {
		ck.cons.finish()
	}
	return nil
}

// report is the JSON output: the Report (GET /api/verify's object) with the
// schema version every govkit JSON object carries (DESIGN §3).
type report struct {
	SchemaVersion int `json:"schema_version"`
	audit.Report
	// Checkpoints are the signed checkpoints the log was compared with
	// (--key), in size order; absent without --key.
	Checkpoints []*CheckpointResult `json:"checkpoints,omitempty"`
}

func writeJSON(w io.Writer, rep audit.Report, results []*CheckpointResult) error {
	return cli.WriteJSON(w, report{SchemaVersion: 1, Report: rep, Checkpoints: results})
}

// writeText prints a summary line, and for a broken chain a table of the
// listed links:
//
//	verified 1,234,567 events, seq 1–1234567, head 3f2a9c0e41b7…
//
//	TAMPERED: 3 broken links in 1,234 events, first seq 1, last seq 1234
//	SEQ  EVENT_ID   KIND
//	57   evt_abc…   hash_mismatch
//
// and approval mismatches in a table of their own:
//
//	SEQ  APPROVAL  KIND               DETAIL
//	88   apr_01…   approval_mismatch  status differs from the chain at seq 88 (approval_voted): …
//
// Checkpoint links get a table of their own too, and with --key a last
// line says which checkpoints the log was compared with:
//
//	checkpoints: 3 consistent (origin audit.example/log: sizes 100, 200, 300), from ckpt.log, database
func writeText(w io.Writer, rep audit.Report, broken int64, results []*CheckpointResult) error {
	bw := bufio.NewWriter(w)
	switch {
	case rep.Verified && rep.TotalEvents == 0:
		fmt.Fprintln(bw, "verified 0 events: the log is empty")
	case rep.Verified:
		fmt.Fprintf(bw, "verified %s %s, seq %d–%d, head %s\n", group(rep.TotalEvents), plural(rep.TotalEvents, "event"),
			rep.FirstEvent.Seq, rep.LastEvent.Seq, head(rep.LastEvent.EventHash))
	default:
		// Not "seq 1–N": in a broken chain the first and last records
		// need not bound the seqs between them.
		fmt.Fprintf(bw, "TAMPERED: %s broken %s in %s %s", group(broken), plural(broken, "link"),
			group(rep.TotalEvents), plural(rep.TotalEvents, "event"))
		if rep.FirstEvent != nil {
			fmt.Fprintf(bw, ", first seq %d, last seq %d", rep.FirstEvent.Seq, rep.LastEvent.Seq)
		}
		if int64(len(rep.BrokenLinks)) < broken {
			fmt.Fprintf(bw, " (the first %s listed)", group(int64(len(rep.BrokenLinks))))
		}
		fmt.Fprintln(bw)
		var links, approvals, checkpoints []audit.BrokenLink
		for _, l := range rep.BrokenLinks {
			switch l.Kind {
			case audit.KindApprovalMismatch:
				approvals = append(approvals, l)
			case audit.KindTruncated, audit.KindRewritten, audit.KindCheckpointUnverified:
				checkpoints = append(checkpoints, l)
			default:
				links = append(links, l)
			}
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		if len(links) > 0 || len(approvals)+len(checkpoints) == 0 {
			fmt.Fprintln(tw, "SEQ\tEVENT_ID\tKIND")
			for _, l := range links {
				fmt.Fprintf(tw, "%d\t%s\t%s\n", l.Seq, shown(l.EventID), l.Kind)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		// Checkpoint links name a checkpoint and say what differs.
		if len(checkpoints) > 0 {
			if len(links) > 0 {
				fmt.Fprintln(bw)
			}
			fmt.Fprintln(tw, "SEQ\tKIND\tDETAIL")
			for _, l := range checkpoints {
				fmt.Fprintf(tw, "%d\t%s\t%s\n", l.Seq, l.Kind, shownUpTo(l.Detail, maxDetail))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		// Approval mismatches in a table of their own: they name an
		// approval and say what differs, which the chain's links do not.
		if len(approvals) > 0 {
			if len(links)+len(checkpoints) > 0 {
				fmt.Fprintln(bw)
			}
			fmt.Fprintln(tw, "SEQ\tAPPROVAL\tKIND\tDETAIL")
			for _, l := range approvals {
				fmt.Fprintf(tw, "%d\t%s\t%s\t%s\n", l.Seq, shown(l.ApprovalID), l.Kind, shownUpTo(l.Detail, maxDetail))
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
	}
	if results != nil {
		fmt.Fprintln(bw, checkpointSummary(results))
	}
	return bw.Flush()
}

func plural(n int64, word string) string {
	if n == 1 {
		return word
	}
	return word + "s"
}

// group writes n with thousands separators: 1,234,567.
func group(n int64) string {
	s := strconv.FormatInt(n, 10)
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	var b strings.Builder
	if neg {
		b.WriteByte('-')
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			b.WriteByte(',')
		}
		b.WriteRune(c)
	}
	return b.String()
}

// head abbreviates the head hash, enough to compare by eye.
func head(hash string) string {
	if len(hash) > 12 {
		return shown(termtext.Cut(hash, 12)) + termtext.Ellipsis
	}
	return shown(hash)
}

// shown makes text from the log safe to print: a database can hold anything,
// and a tampered one should not move the cursor of whoever reads the report.
// Non-printing text is Go-quoted and long text cut.
func shown(s string) string { return shownUpTo(s, 80) }

// maxDetail bounds an approval mismatch's detail in the text report.
const maxDetail = 600

// shownUpTo is shown with a limit of maxShown bytes.
func shownUpTo(s string, maxShown int) string {
	t, suffix := termtext.Cut(s, maxShown), ""
	if len(t) < len(s) {
		suffix = termtext.Ellipsis
	}
	if t == "" {
		return `""` + suffix
	}
	return termtext.OneLine(t) + suffix
}
