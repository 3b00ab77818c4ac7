package auditor

import (
	"fmt"
	"io"
	"os"
	"slices"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs auditor with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("auditor", NewCmdAuditor(streams, nil), streams, verboseCompat(os.Args[1:], streams.ErrOut))
}

// verboseCompat keeps auditor's former -v (--verbose) working where it was
// used, beside other flags (auditor --socket S -v), with a note on stderr:
// -v is --version in every govkit binary (issue 20), and auditor -v alone
// prints the version like the others.
func verboseCompat(args []string, errOut io.Writer) []string {
	end := slices.Index(args, "--")
	if end < 0 {
		end = len(args)
	}
	i := slices.Index(args[:end], "-v")
	if i < 0 || len(args) == 1 {
		return args
	}
	fmt.Fprintln(errOut, "auditor: warning: -v for --verbose is deprecated: -v is --version in every govkit binary; pass --verbose")
	out := slices.Clone(args)
	out[i] = "--verbose"
	return out
}
