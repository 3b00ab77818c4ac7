package verifychain

import (
	"os"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// Main runs verify-chain with the process's arguments and standard streams
// and returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("verify-chain", NewCmdVerifyChain(streams, nil), streams, os.Args[1:])
}

// openSQLite opens an auditd database read-only (mode=ro): it works on a
// database a running auditd writes to (WAL) and on a copy.
func openSQLite(path string) (Records, error) {
	return sqlite.Open(path, sqlite.Options{ReadOnly: true})
}
