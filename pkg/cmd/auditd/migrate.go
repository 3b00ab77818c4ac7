package auditd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/postgres"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// MigrateOptions are the parsed flags of `auditd migrate`.
type MigrateOptions struct {
	IO       *cli.IOStreams
	From, To string
}

// migrateBatch is how many events one transaction copies.
const migrateBatch = 1000

func newCmdMigrate(streams *cli.IOStreams, runF func(*MigrateOptions) error) *cobra.Command {
	opts := &MigrateOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "migrate --from sqlite:FILE --to postgres://…",
		Short: "Copy a SQLite audit log into an empty PostgreSQL database, and verify the copy",
		Long: `Migrate copies the audit log of a SQLite database into a PostgreSQL database
whose log is empty, so that several auditd instances can share it. Every
event is copied as stored: its body bytes, its event_hash and its columns, so
the chain and every hash an auditor pinned stay the same; the approvals table
follows. It then reads both logs back, event by event, and checks that they
are identical and that the copy's chain verifies.

Stop auditd on the SQLite file first: events appended during the copy would
be left behind.

Exit status: 0 copied and verified, 1 the copy differs or its chain is
broken, 3 on a usage error or a failure.`,
		Example: `  auditd migrate --from sqlite:audit.db --to postgres://auditd@db.example/audit
  auditd --db postgres://auditd@db.example/audit        # then run auditd on it`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if !strings.HasPrefix(opts.From, "sqlite:") || len(opts.From) == len("sqlite:") {
				return cli.Failf("--from %q is not a SQLite database", opts.From).WithHint("pass --from sqlite:FILE")
			}
			if !postgres.IsDSN(opts.To) {
				return cli.Failf("--to is not a PostgreSQL database").WithHint("pass --to postgres://USER@HOST/DATABASE (or host=… dbname=…)")
			}
			if runF != nil {
				return runF(opts)
			}
			return migrateRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.From, "from", "", "the SQLite audit database to copy, as sqlite:`FILE`")
	cmd.Flags().StringVar(&opts.To, "to", "", "the PostgreSQL database to copy into, as a postgres://… `URL` or host=… dbname=…")
	return cmd
}

func migrateRun(o *MigrateOptions) error {
	ctx := context.Background()
	path := strings.TrimPrefix(o.From, "sqlite:")
	src, err := sqlite.Open(path, sqlite.Options{ReadOnly: true})
	if err != nil {
		return cli.Fail(err, "pass --from sqlite:FILE naming an audit database")
	}
	defer src.Close()
	octx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	dst, err := postgres.Open(octx, o.To, postgres.Options{})
	if err != nil {
		return cli.Fail(err, "check --to: the database must exist and the user may create tables in it")
	}
	defer dst.Close()
	if seq, _, err := dst.Head(ctx); err != nil {
		return cli.Fail(err, "")
	} else if seq != 0 {
		return cli.Failf("%s already holds events (head seq %d): migrate copies into an empty log", dst, seq).
			WithHint("pass --to naming a new database")
	}

	// Every row, a seq tampered to 0 or below included: the copy is of
	// what is stored, and verification reports what it finds.
	var n int64
	batch := make([]audit.Record, 0, migrateBatch)
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		if err := dst.Import(ctx, batch); err != nil {
			return fmt.Errorf("copying events %d to %d: %w", batch[0].Seq, batch[len(batch)-1].Seq, err)
		}
		n += int64(len(batch))
		batch = batch[:0]
		return nil
	}
	err = src.Scan(ctx, math.MinInt64, func(r audit.Record) error {
		batch = append(batch, r)
		if len(batch) == migrateBatch {
			return flush()
		}
		return nil
	})
	if err == nil {
		err = flush()
	}
	if err != nil {
		return cli.Fail(err, "the copy is partial: drop and recreate the --to database before running migrate again")
	}
	approvals, err := copyApprovals(ctx, src, dst)
	if err == nil {
		err = dst.SyncTree(ctx)
	}
	var checkpoints int
	if err == nil {
		checkpoints, err = copyCheckpoints(ctx, src, dst)
	}
	if err != nil {
		return cli.Fail(err, "the copy is partial: drop and recreate the --to database before running migrate again")
	}

	v, err := compareLogs(ctx, src, dst)
	var differs *logsDiffer
	switch {
	case errors.As(err, &differs):
		fmt.Fprintf(o.IO.ErrOut, "auditd: error: the copy differs from %s: %v\n", path, err)
		return cli.Silent(1)
	case err != nil:
		return cli.Fail(err, "")
	}
	rep := v.Report()
	if rep.Verified {
		if err := compareTrees(ctx, src, dst); err != nil {
			fmt.Fprintf(o.IO.ErrOut, "auditd: error: the copy differs from %s: %v\n", path, err)
			return cli.Silent(1)
		}
	}
	fmt.Fprintf(o.IO.Out, "copied %d events, %d approval requests and %d checkpoints from %s to %s; the copy is identical", n, approvals, checkpoints, path, dst)
	if !rep.Verified {
		fmt.Fprintf(o.IO.Out, ", and its chain is broken as the original's is (%d broken links; verify-chain --db lists them)\n", v.BrokenCount())
		return cli.Silent(1)
	}
	fmt.Fprintf(o.IO.Out, " and its chain verifies (head seq %d)\n", rep.TotalEvents)
	return nil
}

// copyApprovals copies the approvals table and its origin.
func copyApprovals(ctx context.Context, src *sqlite.Store, dst *postgres.Store) (int, error) {
	snap, ok, err := src.ApprovalsSnapshot(ctx)
	if err != nil || !ok {
		return 0, err
	}
	for _, row := range snap.Rows {
		var r approval.Request
		if err := json.Unmarshal(row.Request, &r); err != nil {
			return 0, fmt.Errorf("approval %s (seq %d) is not a request: %w", row.ID, row.Seq, err)
		}
		if err := dst.PutApproval(ctx, r, row.Seq); err != nil {
			return 0, err
		}
	}
	return len(snap.Rows), dst.SetApprovalsOrigin(ctx, snap.Origin)
}

// copyCheckpoints copies the signed checkpoints as stored (issue 19): the
// history of what was signed moves with the log. An original from before
// the Merkle tree has none.
func copyCheckpoints(ctx context.Context, src *sqlite.Store, dst *postgres.Store) (int, error) {
	var n int
	after := int64(-1)
	for {
		page, err := src.Checkpoints(ctx, after, store.MaxLimit)
		if errors.Is(err, store.ErrNoTree) {
			return 0, nil
		}
		if err != nil {
			return n, err
		}
		for _, c := range page {
			if err := dst.PutCheckpoint(ctx, c); err != nil {
				return n, err
			}
			after = c.Size
		}
		n += len(page)
		if len(page) < store.MaxLimit {
			return n, nil
		}
	}
}

// compareTrees checks that the copy's Merkle tree is the original's: the
// same size and root, what the copied checkpoints are verified against.
// The copy's is rebuilt from the events, so this holds for an original
// whose chain verifies; a tampered original's tree may keep leaves of
// events deleted or edited since, and its chain is reported broken
// instead. An original from before the tree has none to compare.
func compareTrees(ctx context.Context, src *sqlite.Store, dst *postgres.Store) error {
	n, err := src.TreeSize(ctx)
	if errors.Is(err, store.ErrNoTree) {
		return nil
	}
	if err != nil {
		return err
	}
	m, err := dst.TreeSize(ctx)
	if err != nil {
		return err
	}
	if m != n {
		return fmt.Errorf("the copy's Merkle tree holds %d records, the original's %d", m, n)
	}
	want, err := tlog.TreeHash(n, store.HashReader(ctx, src))
	if err != nil {
		return err
	}
	got, err := tlog.TreeHash(n, store.HashReader(ctx, dst))
	if err != nil {
		return err
	}
	if got != want {
		return fmt.Errorf("the copy's Merkle root at %d records is %s, the original's %s", n, got, want)
	}
	return nil
}

// logsDiffer is a copy that is not the original.
type logsDiffer struct{ msg string }

func (e *logsDiffer) Error() string { return e.msg }

// compareLogs reads both logs in seq order, side by side, and checks that
// every record is the same, byte for byte; it returns the copy's
// verification.
func compareLogs(ctx context.Context, src *sqlite.Store, dst *postgres.Store) (*audit.Verifier, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	copies := make(chan audit.Record, migrateBatch)
	errc := make(chan error, 1)
	v := audit.NewVerifier()
	go func() {
		defer close(copies)
		errc <- dst.Scan(ctx, math.MinInt64, func(r audit.Record) error {
			v.Add(r)
			select {
			case copies <- r:
				return nil
			case <-ctx.Done():
				return ctx.Err()
			}
		})
	}()
	err := src.Scan(ctx, math.MinInt64, func(want audit.Record) error {
		got, ok := <-copies
		if !ok {
			return &logsDiffer{fmt.Sprintf("the copy ends before seq %d", want.Seq)}
		}
		if d := recordDiff(got, want); d != "" {
			return &logsDiffer{fmt.Sprintf("seq %d: %s", want.Seq, d)}
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if extra, ok := <-copies; ok {
		return nil, &logsDiffer{fmt.Sprintf("the copy has seq %d, which the original has not", extra.Seq)}
	}
	if err := <-errc; err != nil {
		return nil, err
	}
	// And the approvals table against the copied chain, as verify-chain
	// does.
	snap, ok, err := dst.ApprovalsSnapshot(ctx)
	if err != nil || !ok {
		return v, err
	}
	ms, err := snap.Mismatches(false)
	if err != nil {
		return nil, err
	}
	for _, m := range ms {
		v.AddApprovalMismatch(m.Link())
	}
	return v, nil
}

// recordDiff names the first column in which got differs from want.
func recordDiff(got, want audit.Record) string {
	switch {
	case got.Seq != want.Seq:
		return fmt.Sprintf("seq %d", got.Seq)
	case !bytes.Equal(got.Body, want.Body):
		return "body"
	case got.EventHash != want.EventHash:
		return "event_hash"
	case got.PrevHash != want.PrevHash:
		return "prev_hash"
	case got.EventID != want.EventID:
		return "event_id"
	case !got.Timestamp.Equal(want.Timestamp):
		return "timestamp"
	case got.EventType != want.EventType, got.TraceID != want.TraceID, got.SessionID != want.SessionID,
		got.Agent != want.Agent, got.ActionClass != want.ActionClass, got.ToolName != want.ToolName:
		return "an indexed column"
	case got.ApprovalID != want.ApprovalID:
		return "approval_id"
	}
	return ""
}
