// Command govbot: see pkg/cmd/govbot.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/govbot"
)

func main() {
	os.Exit(govbot.Main())
}
