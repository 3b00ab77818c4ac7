package classify

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/intent"
	"github.com/govkit/govkit/pkg/termtext"
)

// printer writes results as JSON Lines or as text blocks:
//
//	read-only  ls
//	write      rm -rf /tmp/x
//	           DESTRUCTIVE  rm deletes files
//	           risk: high_write, action: destructive
//	unbounded  tail -f /var/log/syslog
//	           UNBOUNDED_STREAM  -f follows forever
//	           rewrite: tail -n 200 /var/log/syslog
//
// The first column is the verdict (the exit code's word), then the command;
// indented below it the reasons (code, then detail, codes aligned within a
// block), the risk of a write, and the suggested rewrite. Text that holds
// control or other non-printing characters is shown Go-quoted, so a command
// cannot move the cursor or recolour the terminal of whoever reads it.
type printer struct {
	w      *bufio.Writer
	format cli.Format
	line   []byte // reused for each JSON line
}

func newPrinter(out io.Writer, format cli.Format) *printer {
	return &printer{w: bufio.NewWriterSize(out, 64<<10), format: format}
}

// verdictWords name the verdicts in text output.
var verdictWords = map[intent.Verdict]string{
	intent.VerdictReadOnly:  "read-only",
	intent.VerdictWrite:     "write",
	intent.VerdictUnbounded: "unbounded",
}

const (
	verdictWidth = len("read-only") // the widest word
	indent       = verdictWidth + 2
	// maxShown bounds how much of a command text output shows; JSON output
	// always carries the whole command.
	maxShown = 512
)

func (p *printer) print(r *intent.Result) error {
	if p.format == cli.FormatJSON {
		// Encoded once, into one reused buffer (issue 14: encoding/json
		// re-scanning MarshalJSON's output was a third of batch CPU).
		p.line = append(r.AppendJSON(p.line[:0]), '\n')
		p.w.Write(p.line) // a write error sticks in p.w; flush reports it
		return nil
	}
	word, ok := verdictWords[r.Verdict()]
	if !ok {
		word = strconv.Itoa(int(r.Verdict()))
	}
	fmt.Fprintf(p.w, "%-*s  %s\n", verdictWidth, word, shown(r.Command))
	width := 0
	for _, reason := range r.Reasons {
		width = max(width, len(reason.Code))
	}
	pad := strings.Repeat(" ", indent)
	for _, reason := range r.Reasons {
		fmt.Fprintf(p.w, "%s%-*s  %s\n", pad, width, shown(string(reason.Code)), shown(reason.Detail))
	}
	if r.Verdict() == intent.VerdictWrite {
		fmt.Fprintf(p.w, "%srisk: %s, action: %s\n", pad, r.Risk, r.ActionClass)
	}
	if r.SuggestedRewrite != "" {
		fmt.Fprintf(p.w, "%srewrite: %s\n", pad, shown(r.SuggestedRewrite))
	}
	return nil
}

func (p *printer) flush() error {
	if err := p.w.Flush(); err != nil {
		return writeError(err)
	}
	return nil
}

func writeError(err error) error {
	return cli.Failf("writing standard output: %v", err)
}

// shown returns s as text output shows it: trimmed to maxShown bytes, and
// Go-quoted when it holds a character that does not print as itself.
func shown(s string) string {
	t, suffix := termtext.Cut(s, maxShown), ""
	if len(t) < len(s) {
		suffix = fmt.Sprintf("%s (%d bytes)", termtext.Ellipsis, len(s))
	}
	return termtext.OneLine(t) + suffix
}
