package auditd

import (
	"bufio"
	"context"
	"fmt"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
)

// ExportOptions are the parsed flags of `auditd export`.
type ExportOptions struct {
	IO *cli.IOStreams
	DB string
}

func newCmdExport(streams *cli.IOStreams, runF func(*ExportOptions) error) *cobra.Command {
	opts := &ExportOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "export [--db FILE]",
		Short: "Write the audit log as JSON Lines, in seq order",
		Long: `Export writes every event of the audit database to standard output as JSON
Lines, one event per line in seq order, each the event's canonical JSON with
its event_hash: the format "verify-chain --jsonl" verifies. It opens the
database read-only, so it can export while auditd is running.

Exit status: 0 exported, 3 on a usage error or a failure.`,
		Example: `  auditd export --db audit.db > audit.jsonl
  verify-chain --jsonl audit.jsonl`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.DB == "" {
				return cli.Failf("--db is empty").WithHint("pass --db FILE or set GOVKIT_AUDIT_DB")
			}
			if runF != nil {
				return runF(opts)
			}
			return exportRun(opts)
		},
	}
	addDBFlag(cmd, &opts.DB)
	return cmd
}

func exportRun(o *ExportOptions) (err error) {
	st, err := openStore(o.DB, true)
	if err != nil {
		return cli.Fail(err, "pass --db FILE naming an audit database (or set GOVKIT_AUDIT_DB)")
	}
	defer st.Close()
	w := bufio.NewWriterSize(o.IO.Out, 64<<10)
	err = st.Scan(context.Background(), 0, func(rec audit.Record) error {
		line, err := audit.ExportLine(rec)
		if err != nil {
			return fmt.Errorf("%w (the database was modified; verify-chain --db %s reports it)", err, o.DB)
		}
		w.Write(line)
		return w.WriteByte('\n')
	})
	if ferr := w.Flush(); err == nil {
		err = ferr
	}
	if err != nil {
		return cli.Fail(err, "")
	}
	return nil
}
