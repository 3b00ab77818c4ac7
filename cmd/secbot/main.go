// Command secbot: see pkg/cmd/secbot.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/secbot"
)

func main() {
	os.Exit(secbot.Main())
}
