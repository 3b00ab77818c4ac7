// Command auditor: see pkg/cmd/auditor.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/auditor"
)

func main() {
	os.Exit(auditor.Main())
}
