package postgres

import (
	"context"
	"sync"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/govkit/govkit/pkg/store"
)

var _ store.Elector = (*Store)(nil)

// CheckpointLeader returns this instance's candidacy for signing
// checkpoints (store.Elector): the session-scoped advisory lock
// CheckpointLock, held on a connection of its own for as long as the
// instance leads. A leader that dies, or loses its connection, loses the
// lock with its session, and the next instance that tries takes it.
//
// Two leaders at once (the old one not yet aware that its session ended)
// sign only checkpoints of the one tree that every instance extends under
// appendLock, so their checkpoints are consistent with each other: the
// lock saves the duplicate work and keeps one checkpoint log complete; it
// is not what makes the log consistent.
func (s *Store) CheckpointLeader() store.Leader { return &leader{s: s} }

type leader struct {
	s    *Store
	mu   sync.Mutex
	conn *pgx.Conn // the session that holds, or tries, the lock
	held bool
}

// Lead takes CheckpointLock when free, or checks that this session still
// holds it (store.Leader).
func (l *leader) Lead(ctx context.Context) (bool, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn == nil {
		pc, err := l.s.pool.Acquire(ctx)
		if err != nil {
			return false, classify(err)
		}
		// A session lock belongs to the connection: it must not go back
		// to the pool while it holds it.
		l.conn = pc.Hijack()
	}
	if l.held {
		if err := l.conn.Ping(ctx); err != nil {
			l.drop()
			return false, classify(err)
		}
		return true, nil
	}
	if err := l.conn.QueryRow(ctx, "SELECT pg_try_advisory_lock($1)", CheckpointLock).Scan(&l.held); err != nil {
		l.drop()
		return false, classify(err)
	}
	return l.held, nil
}

// drop closes the session, which releases its locks on the server.
func (l *leader) drop() {
	l.conn.Close(context.Background())
	l.conn, l.held = nil, false
}

// Resign releases the lock and closes the session (store.Leader). The
// unlock comes first because closing alone frees the lock only when the
// server's backend has noticed and exited, a moment later: a successor
// asking at once would be refused.
func (l *leader) Resign() error {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.conn != nil {
		if l.held {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
			_, _ = l.conn.Exec(ctx, "SELECT pg_advisory_unlock($1)", CheckpointLock) // best effort: closing frees it too
			cancel()
		}
		l.drop()
	}
	return nil
}
