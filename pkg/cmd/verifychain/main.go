package verifychain

import (
	"context"
	"os"
	"time"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/store/postgres"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// Main runs verify-chain with the process's arguments and standard streams
// and returns its exit code.
func Main() int {
	streams := cli.System()
	return cli.Main("verify-chain", NewCmdVerifyChain(streams, nil), streams, os.Args[1:])
}

// openDB opens an auditd database read-only: a SQLite file (mode=ro:
// it works on a database a running auditd writes to (WAL) and on a copy),
// or a PostgreSQL database named by a postgres:// URL or a key=value
// connection string (read-only transactions, issue 19).
func openDB(path string) (Records, error) {
	if postgres.IsDSN(path) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		return postgres.Open(ctx, path, postgres.Options{ReadOnly: true})
	}
	return sqlite.Open(path, sqlite.Options{ReadOnly: true})
}
