// Package govbot is the command tree of the govbot binary (DESIGN §8).
package govbot

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs govbot with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("govbot", &cobra.Command{Use: "govbot"}, streams, os.Args[1:])
}
