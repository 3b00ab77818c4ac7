// Command govexplain evaluates a request against policy and explains why;
// it also lints and tests policy files. See pkg/cmd/govexplain.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/govexplain"
)

func main() {
	os.Exit(govexplain.Main())
}
