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
	// An hour's Sleep on an ended context returns (the hang guard only
	// stops a test that would wait the hour), with the context's error.
	done := make(chan error, 1)
	go func() { done <- Sleep(ctx, time.Hour) }()
	select {
	case err := <-done:
		if !errors.Is(err, context.Canceled) {
			t.Errorf("Sleep after cancel: %v", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Sleep after cancel did not return within 30s (hang guard)")
	}
	if err := Sleep(ctx, 0); !errors.Is(err, context.Canceled) {
		t.Errorf("Sleep(0) after cancel: %v", err)
	}
}
