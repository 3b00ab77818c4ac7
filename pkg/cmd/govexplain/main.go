package govexplain

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs govexplain with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("govexplain", NewCmdGovexplain(streams, nil), streams, os.Args[1:])
}
