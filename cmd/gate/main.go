// Command gate stands between an agent's command and its execution:
// classify, operating mode, policy, approval, sandbox, receipt. See
// pkg/cmd/gate.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/gate"
)

func main() {
	os.Exit(gate.Main())
}
