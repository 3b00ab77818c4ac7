package cli

import (
	"context"
	"os/signal"
	"syscall"
	"time"
)

// RunContext returns the context of one run of a command: a child of
// parent when the caller gives one (tests end runs that way), otherwise one
// that ends on SIGINT or SIGTERM, so that Ctrl-C and a service manager's
// stop end the run cleanly. The caller must call the CancelFunc.
func RunContext(parent context.Context) (context.Context, context.CancelFunc) {
	if parent != nil {
		return context.WithCancel(parent)
	}
	return signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
}

// Sleep waits d, or until ctx ends and then returns ctx.Err(): the pause
// of a command's retry and poll loops. A d of zero or less does not wait.
func Sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}
