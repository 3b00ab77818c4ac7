// Command auditd is the audit daemon: a durable, hash-chained event log
// with an HTTP API and a Unix-socket event stream. See pkg/cmd/auditd.
package main

import (
	"os"

	"github.com/govkit/govkit/pkg/cmd/auditd"
)

func main() {
	os.Exit(auditd.Main())
}
