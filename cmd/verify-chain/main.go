// Command verify-chain verifies the hash chain of an audit database or
// export. See pkg/cmd/verifychain.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/verifychain"
)

func main() {
	os.Exit(verifychain.Main())
}
