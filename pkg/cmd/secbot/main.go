package secbot

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs secbot with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("secbot", NewCmdSecbot(streams), streams, os.Args[1:])
}
