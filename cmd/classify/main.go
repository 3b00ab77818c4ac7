// Command classify decides whether a shell command is read-only, bounded, and
// how risky it is. See pkg/cmd/classify.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/classify"
)

func main() {
	os.Exit(classify.Main())
}
