package postgres

import (
	"context"
	"testing"
	"time"
)

// LockApproval holds one request's lock across stores until unlock; other
// requests' locks are free meanwhile.
func TestLockApproval(t *testing.T) {
	ctx := context.Background()
	s, dsn := openTest(t)
	other, err := Open(ctx, dsn, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	unlock, err := s.LockApproval(ctx, "apr_1")
	if err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 200*time.Millisecond)
	defer cancel()
	if _, err := other.LockApproval(short, "apr_1"); err == nil {
		t.Fatal("a second lock of apr_1 while it is held")
	}
	u2, err := other.LockApproval(ctx, "apr_2")
	if err != nil {
		t.Fatalf("lock of apr_2 while apr_1 is held: %v", err)
	}
	u2()
	unlock()
	u1, err := other.LockApproval(ctx, "apr_1")
	if err != nil {
		t.Fatalf("lock of apr_1 after unlock: %v", err)
	}
	u1()
}
