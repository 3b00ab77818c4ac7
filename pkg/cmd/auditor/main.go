// Package auditor is the command tree of the auditor binary (DESIGN §8).
package auditor

import (
	"os"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
)

// Main runs auditor with the process's arguments and standard streams and
// returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("auditor", &cobra.Command{Use: "auditor"}, streams, os.Args[1:])
}
