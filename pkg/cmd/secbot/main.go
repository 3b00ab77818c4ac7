// Package secbot is the command tree of the secbot binary (DESIGN §8).
package secbot

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs secbot with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("secbot", &cobra.Command{Use: "secbot"}, streams, os.Args[1:])
}
