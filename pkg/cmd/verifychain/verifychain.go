// Package verifychain is the command tree of the verify-chain binary: it
// verifies the hash chain of an audit database or export offline (DESIGN §6).
package verifychain

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"text/tabwriter"
	"unicode"
	"unicode/utf8"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store"
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
}

// NewCmdVerifyChain returns the verify-chain root command. It only declares
// and validates flags; runF, when not nil, replaces the run function (tests).
func NewCmdVerifyChain(streams *cli.IOStreams, runF func(*VerifyOptions) error) *cobra.Command {
	opts := &VerifyOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "verify-chain --db FILE | --jsonl FILE [-o text|json]",
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
1000 approval mismatches, each with its approval_id and a detail. Output is
text on a terminal and one JSON object otherwise (choose with -o):
"verified", "total_events", "broken_links", "first_event", "last_event",
"schema_version".

A chain alone cannot reveal that its newest events were deleted, or a log
rewritten whole by someone with write access; compare the head (the last
event_hash) with one recorded elsewhere.

Exit status:

    0  verified: no broken link
    1  tampering found: a broken link or an approval mismatch
    3  usage error, unreadable or malformed input, internal failure`,
		Example: `  verify-chain --db /var/lib/govkit/audit.db
  auditd export --db audit.db | verify-chain --jsonl -
  verify-chain --jsonl audit.jsonl -o json | jq .broken_links`,
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
	cli.SetEnvName(f, "db", "GOVKIT_AUDIT_DB")
	cli.SkipConfig(f, "jsonl")
	_ = cmd.MarkFlagFilename("db", "db")
	_ = cmd.MarkFlagFilename("jsonl", "jsonl")
	cli.AddConfigFlag(cmd)
	return cmd
}

// validate picks the input: exactly one of --db and --jsonl on the command
// line, and a --jsonl on the command line wins over a --db from the
// environment or a config file.
func (o *VerifyOptions) validate(dbOnCommandLine bool) error {
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
	var v *audit.Verifier
	var err error
	if o.JSONL != "" {
		v = audit.NewVerifier()
		err = verifyJSONL(o, v)
	} else {
		v, err = verifyDB(o)
	}
	if err != nil {
		return err
	}
	rep := v.Report()
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		err = writeJSON(o.IO.Out, rep)
	} else {
		err = writeText(o.IO.Out, rep, v.BrokenCount())
	}
	if err != nil {
		return cli.Failf("writing the report: %v", err)
	}
	if !rep.Verified {
		return cli.Silent(exitTampered)
	}
	return nil
}

func verifyDB(o *VerifyOptions) (*audit.Verifier, error) {
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
	var v *audit.Verifier
	if cv, ok := st.(chainVerifier); ok {
		v, err = cv.VerifyChain(ctx)
	} else {
		v = audit.NewVerifier()
		// From the lowest possible seq: a row whose seq was changed to 0 or
		// below must be seen too.
		err = st.Scan(ctx, math.MinInt64, func(r audit.Record) error {
			v.Add(r)
			return nil
		})
	}
	if err != nil {
		return nil, cli.Fail(fmt.Errorf("reading %s: %w", o.DB, err), "")
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

func verifyJSONL(o *VerifyOptions, v *audit.Verifier) error {
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
	}
	if err := sc.Err(); err != nil {
		if errors.Is(err, bufio.ErrTooLong) {
			return cli.Failf("%s:%d: line longer than 1 MiB", name, n+1)
		}
		return cli.Failf("reading %s: %v", name, err)
	}
	return nil
}

// report is the JSON output: the Report (GET /api/verify's object) with the
// schema version every govkit JSON object carries (DESIGN §3).
type report struct {
	SchemaVersion int `json:"schema_version"`
	audit.Report
}

func writeJSON(w io.Writer, rep audit.Report) error {
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false)
	return enc.Encode(report{SchemaVersion: 1, Report: rep})
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
func writeText(w io.Writer, rep audit.Report, broken int64) error {
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
		var links, approvals []audit.BrokenLink
		for _, l := range rep.BrokenLinks {
			if l.Kind == audit.KindApprovalMismatch {
				approvals = append(approvals, l)
			} else {
				links = append(links, l)
			}
		}
		tw := tabwriter.NewWriter(bw, 0, 0, 2, ' ', 0)
		if len(links) > 0 || len(approvals) == 0 {
			fmt.Fprintln(tw, "SEQ\tEVENT_ID\tKIND")
			for _, l := range links {
				fmt.Fprintf(tw, "%d\t%s\t%s\n", l.Seq, shown(l.EventID), l.Kind)
			}
			if err := tw.Flush(); err != nil {
				return err
			}
		}
		// Approval mismatches in a table of their own: they name an
		// approval and say what differs, which the chain's links do not.
		if len(approvals) > 0 {
			if len(links) > 0 {
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
		return shown(hash[:12]) + "…"
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
	suffix := ""
	if len(s) > maxShown {
		cut := maxShown
		for cut > 0 && !utf8.RuneStart(s[cut]) {
			cut--
		}
		s, suffix = s[:cut], "…"
	}
	if s == "" || !utf8.ValidString(s) || strings.IndexFunc(s, func(r rune) bool { return !unicode.IsPrint(r) }) >= 0 {
		s = strconv.Quote(s)
	}
	return s + suffix
}
