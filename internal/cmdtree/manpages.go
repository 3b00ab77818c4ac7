package cmdtree

import (
	"fmt"
	"os"
	"path/filepath"

	"github.com/spf13/cobra/doc"

	"github.com/govkit/govkit/pkg/cli"
)

// ManPages replaces the man pages in dir with freshly generated ones, one
// per command of every binary. Pages carry the date of SOURCE_DATE_EPOCH
// when it is set. make docs writes docs/man with it; TestManPages fails
// when docs/man is stale.
func ManPages(dir string) error {
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
	// Roots adds the completion command, which cobra adds only when it is
	// invoked: the pages document it like any other.
	for _, root := range Roots(streams) {
		root.DisableAutoGenTag = true
		header := &doc.GenManHeader{Section: "1", Source: "govkit", Manual: "govkit manual"}
		if err := doc.GenManTree(root, header, dir); err != nil {
			return fmt.Errorf("%s: %v", root.Name(), err)
		}
	}
	return nil
}
