package auditd

import (
	"context"
	"time"

	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/postgres"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// openTimeout bounds connecting to PostgreSQL and migrating at start: an
// unreachable server is an error to report, not a hang.
const openTimeout = 30 * time.Second

// openStore opens --db: a PostgreSQL database for a postgres:// URL or a
// key=value connection string (several auditd instances may share it,
// issue 19), else a SQLite file.
func openStore(db string, readOnly bool) (store.Store, error) {
	if postgres.IsDSN(db) {
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		return postgres.Open(ctx, db, postgres.Options{ReadOnly: readOnly})
	}
	return sqlite.Open(db, sqlite.Options{ReadOnly: readOnly})
}

// dbName is --db for logs: a connection string without its password.
func dbName(db string) string {
	if postgres.IsDSN(db) {
		return postgres.Describe(db)
	}
	return db
}
