package gate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/receiptkey"
	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/termtext"
)

// maxReceiptLine bounds one line of input, and a receipt written over
// several lines as a whole (DESIGN §3: 1 MiB per line).
const maxReceiptLine = 1 << 20

// ReceiptVerifyOptions are the parsed flags and arguments of gate receipt
// verify.
type ReceiptVerifyOptions struct {
	IO        *cli.IOStreams
	Output    cli.Format
	KeyFile   string // empty: receiptkey.DefaultPath
	Input     string // a file, or "-" for standard input
	keySource string // where --key came from when not the command line
}

func newCmdReceipt(opts *Options) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "receipt <command>",
		Short: "Check the signed tool receipts of agent sessions",
		Args:  cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			return cli.Failf("no receipt command given").WithHint("run 'gate receipt verify RECEIPT.json'")
		},
	}
	cmd.AddCommand(newCmdReceiptVerify(opts, nil))
	return cmd
}

// newCmdReceiptVerify declares gate receipt verify; runF, when not nil,
// replaces the run function (tests).
func newCmdReceiptVerify(opts *Options, runF func(*ReceiptVerifyOptions) error) *cobra.Command {
	o := &ReceiptVerifyOptions{IO: opts.IO}
	cmd := &cobra.Command{
		Use:   "verify [--key FILE] [RECEIPT.json | -]",
		Short: "Verify tool receipts offline against the key that signed them",
		Long: `Verify checks the HMAC-SHA256 signature of tool receipts (docs/receipts.md): that
every signed field — ids, tool, inputs, outputs or excerpt with its sha256
and full size, file refs, timestamp — is what the session signed, under the
receipt key, which never leaves its file.

The input (a file, or - or nothing for standard input) is one receipt JSON
object, possibly over several lines, or JSON Lines: one receipt per line, or
one receipt effect of gate session per line, {"type":"receipt","receipt":{…}}.
Each line is reported, as text on a terminal and as JSON Lines otherwise
({"schema_version":1,"line":N,"receipt_id":"…","valid":true|false,"reason":…}).
A line is at most 1 MiB; a line that is not a receipt, a field that is not a
receipt's (names are case-sensitive), a field given twice or of the wrong type
is malformed input, and nothing is reported.

The key is --key FILE (GOVKIT_RECEIPT_KEY), by default
$XDG_STATE_HOME/govkit/receipt.key (~/.local/state/govkit/receipt.key): 32
bytes, mode 0600, owned by you; a key others may read is refused.

Exit status:

    0  every receipt verifies
    1  a receipt does not: "bad signature" (a field changed, or another key)
       or "unknown alg" (signature_alg is not HMAC-SHA256)
    3  usage error, unreadable key, malformed input (naming the line and field)`,
		Example: `  gate receipt verify receipt.json
  gate receipt verify --key ./receipt.key receipts.jsonl
  gate session < events.jsonl | grep '"type":"receipt"' | gate receipt verify -`,
		Args: cobra.MaximumNArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			o.keySource = cli.FlagSource(c.Flags(), "key")
			if len(args) == 1 {
				o.Input = args[0]
			} else if o.IO.IsStdinTTY() {
				return cli.Failf("no receipt given").WithHint("pass RECEIPT.json, or - to read standard input")
			} else {
				o.Input = "-"
			}
			if runF != nil {
				return runF(o)
			}
			return receiptVerifyRun(o)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.KeyFile, "key", "", "the receipt key `FILE` (default $XDG_STATE_HOME/govkit/receipt.key)")
	cli.KeepEnv(f, "key", "GOVKIT_RECEIPT_KEY")
	cli.AddOutputFlag(cmd, &o.Output)
	_ = cmd.MarkFlagFilename("key")
	return cmd
}

// receiptResult is one line's verdict, as -o json prints it.
type receiptResult struct {
	SchemaVersion int    `json:"schema_version"`
	Line          int    `json:"line"`
	ReceiptID     string `json:"receipt_id"`
	Valid         bool   `json:"valid"`
	Reason        string `json:"reason,omitempty"`
}

func receiptVerifyRun(o *ReceiptVerifyOptions) error {
	path := o.KeyFile
	if path == "" {
		var err error
		if path, err = receiptkey.DefaultPath(); err != nil {
			return cli.Fail(err, "pass the key that signed the receipts with --key FILE")
		}
	}
	key, err := receiptkey.Load(path)
	if err != nil {
		hint := "pass the key that signed the receipts with --key FILE"
		if o.keySource != "" {
			hint += " (the key file now comes from " + o.keySource + ")"
		}
		if errors.Is(err, receiptkey.ErrUnsafe) {
			hint = "" // the error says what to run
		}
		return cli.Fail(err, hint)
	}
	defer clear(key)

	name, in, done, err := cli.OpenInput(o.Input, o.IO.In)
	if err != nil {
		return cli.Failf("%s: %v", name, err).WithHint("pass RECEIPT.json naming a receipt file, or - for standard input")
	}
	defer done()
	entries, err := readReceipts(name, in)
	if err != nil {
		return err
	}

	results := make([]receiptResult, len(entries))
	bad := 0
	for i, e := range entries {
		r := receiptResult{SchemaVersion: 1, Line: e.line, ReceiptID: termtext.Truncate(e.r.ReceiptID, maxShown), Valid: true}
		if err := receipt.Verify(e.r, key); err != nil {
			r.Valid, r.Reason = false, err.Error()
			bad++
		}
		results[i] = r
	}
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		for _, r := range results {
			if err := cli.WriteJSON(o.IO.Out, r); err != nil {
				return err
			}
		}
	} else {
		for _, r := range results {
			verdict := "valid"
			if !r.Valid {
				verdict = "invalid: " + r.Reason
			}
			fmt.Fprintf(o.IO.Out, "%s:%d: %s %s\n", name, r.Line, r.ReceiptID, verdict)
		}
	}
	if bad > 0 {
		return cli.Silent(1)
	}
	return nil
}

type receiptEntry struct {
	line int
	r    receipt.Receipt
}

// readReceipts reads the input: JSON Lines of receipts or receipt effects,
// or one receipt over several lines (its first line is then not JSON by
// itself). Blank lines are skipped; anything else that is not a receipt is
// an error naming the line.
func readReceipts(name string, in io.Reader) ([]receiptEntry, error) {
	br := bufio.NewReaderSize(in, 64<<10)
	var entries []receiptEntry
	for n := 1; ; n++ {
		line, err := readBoundedLine(br)
		if errors.Is(err, bufio.ErrTooLong) {
			return nil, cli.Failf("%s:%d: line longer than 1 MiB", name, n)
		}
		if err != nil && !errors.Is(err, io.EOF) {
			return nil, cli.Failf("reading %s: %v", name, err)
		}
		if t := bytes.TrimSpace(line); len(t) > 0 {
			if len(entries) == 0 && t[0] == '{' && !json.Valid(t) {
				// One receipt written over several lines.
				rest, rerr := io.ReadAll(io.LimitReader(br, int64(maxReceiptLine+1-len(line))))
				if rerr != nil {
					return nil, cli.Failf("reading %s: %v", name, rerr)
				}
				if len(line)+len(rest) > maxReceiptLine {
					return nil, cli.Failf("%s:%d: a receipt longer than 1 MiB", name, n)
				}
				t = append(append([]byte(nil), line...), rest...)
				err = io.EOF
			}
			r, perr := parseReceiptLine(t)
			if perr != nil {
				return nil, cli.Failf("%s:%d: %v", name, n, perr).
					WithHint(`each line must be a receipt object, or a receipt effect {"type":"receipt","receipt":{…}}`)
			}
			entries = append(entries, receiptEntry{line: n, r: r})
		}
		if errors.Is(err, io.EOF) {
			break
		}
	}
	if len(entries) == 0 {
		return nil, cli.Failf("%s: no receipt", name).WithHint("pass a receipt JSON object, or JSON Lines of receipts")
	}
	return entries, nil
}

// parseReceiptLine reads a receipt, or a receipt effect: an object with
// "type" (exactly so spelled) "receipt" and the receipt under "receipt".
func parseReceiptLine(line []byte) (receipt.Receipt, error) {
	var top map[string]json.RawMessage
	if err := json.Unmarshal(line, &top); err != nil || top == nil {
		return receipt.Parse(line) // names the syntax error
	}
	typ, isEffect := top["type"]
	if !isEffect {
		return receipt.Parse(line)
	}
	var t string
	if err := json.Unmarshal(typ, &t); err != nil || t != "receipt" {
		return receipt.Receipt{}, fmt.Errorf("field %q: want %q, got %s", "type", "receipt", termtext.Truncate(string(typ), maxShown))
	}
	raw, ok := top["receipt"]
	if !ok {
		return receipt.Receipt{}, fmt.Errorf("missing field %q", "receipt")
	}
	r, err := receipt.Parse(raw)
	if err != nil {
		return r, fmt.Errorf("receipt: %w", err)
	}
	return r, nil
}

// readBoundedLine returns the next line without its newline, failing with
// bufio.ErrTooLong past maxReceiptLine bytes; io.EOF comes with the last
// line.
func readBoundedLine(br *bufio.Reader) ([]byte, error) {
	var line []byte
	for {
		chunk, err := br.ReadSlice('\n')
		if len(line)+len(chunk) > maxReceiptLine+1 {
			return nil, bufio.ErrTooLong
		}
		line = append(line, chunk...)
		switch {
		case err == nil:
			return line[:len(line)-1], nil
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		default:
			if len(line) > maxReceiptLine {
				return nil, bufio.ErrTooLong
			}
			return line, err
		}
	}
}

// maxShown bounds an untrusted value in the output (DESIGN §3: never echo
// whole inputs).
const maxShown = 80
