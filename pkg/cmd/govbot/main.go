package govbot

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs govbot with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("govbot", NewCmdGovbot(streams), streams, seedCompat(os.Args[1:]))
}
