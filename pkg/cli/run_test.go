package cli

import (
	"context"
	"errors"
	"testing"
	"time"
)

func TestRunContext(t *testing.T) {
	parent, cancelParent := context.WithCancel(context.Background())
	ctx, stop := RunContext(parent)
	if ctx.Err() != nil {
		t.Fatal("the run's context ended before its parent")
	}
	cancelParent()
	<-ctx.Done()

	ctx, stop2 := RunContext(context.Background())
	stop2()
	if ctx.Err() == nil {
		t.Error("stop did not end the run's context")
	}
	stop()

	// Without a parent: the signal context, which stop releases.
	var none context.Context // as in Options{} with no Context
	ctx, stop = RunContext(none)
	if ctx.Err() != nil {
		t.Error("the signal context ended at once")
	}
	stop()
	if ctx.Err() == nil {
		t.Error("stop did not end the signal context")
	}
}

func TestSleep(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	if err := Sleep(ctx, time.Millisecond); err != nil {
		t.Errorf("Sleep: %v", err)
	}
	if err := Sleep(ctx, -time.Second); err != nil {
		t.Errorf("Sleep(negative): %v", err)
	}
	cancel()
	start := time.Now()
	if err := Sleep(ctx, time.Hour); !errors.Is(err, context.Canceled) || time.Since(start) > time.Second {
		t.Errorf("Sleep after cancel: %v after %s", err, time.Since(start))
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) after cancel: %v", err)
	}
}
