// Command approvals lists, inspects, approves and denies approval requests,
// and requests one and waits for the decision. See pkg/cmd/approvals.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/approvals"
)

func main() {
	os.Exit(approvals.Main())
}
