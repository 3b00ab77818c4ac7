package auditor

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs auditor with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("auditor", NewCmdAuditor(streams, nil), streams, os.Args[1:])
}
