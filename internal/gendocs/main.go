// Command gendocs writes the man pages of every govkit binary, and
// docs/config.md, from their cobra command trees (make docs). Pages carry
// the date of SOURCE_DATE_EPOCH when it is set (the Makefile sets it to the
// last commit's), so regenerating an unchanged tree changes nothing.
package main

import (
	"flag"
	"fmt"
	"os"

	"github.com/govkit/govkit/internal/cmdtree"
	"github.com/govkit/govkit/pkg/cli"
)

func main() {
	out := flag.String("out", "docs/man", "write the man pages into `DIR`")
	config := flag.String("config", "docs/config.md", "write the configuration reference into `FILE` ('' writes none)")
	flag.Parse()
	if err := generate(*out); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: error: %v\n", err)
		os.Exit(cli.ExitFailure)
	}
	if *config == "" {
		return
	}
	streams, _, _, _ := cli.Test()
	if err := os.WriteFile(*config, cmdtree.ConfigDoc(cmdtree.Roots(streams)), 0o644); err != nil {
		fmt.Fprintf(os.Stderr, "gendocs: error: %v\n", err)
		os.Exit(cli.ExitFailure)
	}
}

// generate replaces the man pages in dir with freshly generated ones.
func generate(dir string) error { return cmdtree.ManPages(dir) }
