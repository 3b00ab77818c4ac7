package approvals

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs approvals with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("approvals", NewCmdApprovals(streams), streams, os.Args[1:])
}
