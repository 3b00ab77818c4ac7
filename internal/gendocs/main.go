// Command gendocs writes the man pages of every govkit binary, and
// docs/config.md, from their cobra command trees (make docs). Pages carry
// the date of SOURCE_DATE_EPOCH when it is set (the Makefile sets it to the
// last commit's), so regenerating an unchanged tree changes nothing.
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra/doc"

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
func generate(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	stale, err := filepath.Glob(filepath.Join(dir, "*.1"))
	if err != nil {
		return err
	}
	for _, f := range stale {
		if err := os.Remove(f); err != nil {
			return err
		}
	}
	streams, _, _, _ := cli.Test() // the pages must not depend on this terminal
	// cmdtree.Roots adds the completion command, which cobra adds only
	// when it is invoked: the pages document it like any other.
	for _, root := range cmdtree.Roots(streams) {
		root.DisableAutoGenTag = true
		header := &doc.GenManHeader{Section: "1", Source: "govkit", Manual: "govkit manual"}
		if err := doc.GenManTree(root, header, dir); err != nil {
			return fmt.Errorf("%s: %v", root.Name(), err)
		}
	}
	return nil
}
