package auditd_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/sqlite"
)

// failingStore is a SQLite store whose commits fail while fail holds an
// error: a full disk without filling one.
type failingStore struct {
	*sqlite.Store
	fail atomic.Pointer[error]
}

func (f *failingStore) Append(ctx context.Context, b []audit.Record) error {
	if err := f.fail.Load(); err != nil {
		return *err
	}
	return f.Store.Append(ctx, b)
}

// /health follows the last commit (DESIGN §11 "Health tells the truth"): a
// failed commit degrades it until one succeeds; a full disk is 503
// disk_full for the writes and on /health, any other failure 500 and
// write_failed; govkit_auditd_degraded follows.
func TestHealthFollowsCommits(t *testing.T) {
	st, err := sqlite.Open(filepath.Join(t.TempDir(), "audit.db"), sqlite.Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	fs := &failingStore{Store: st}
	srv, err := auditd.New(auditd.DefaultConfig(), fs)
	if err != nil {
		t.Fatal(err)
	}
	defer srv.Close()
	ts := httptest.NewServer(srv.Handler())
	defer ts.Close()
	c, _ := client.New(ts.URL)
	ctx := ctxT(t)

	check := func(wantStatus int, wantReason, wantGauge string) {
		t.Helper()
		h, err := c.Health(ctx)
		if err != nil || h.Reason != wantReason || (wantReason == "") != (h.Status == "ok") {
			t.Fatalf("health: %+v, %v; want reason %q", h, err, wantReason)
		}
		resp, err := http.Get(ts.URL + "/health")
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != wantStatus {
			t.Fatalf("GET /health: %d, want %d", resp.StatusCode, wantStatus)
		}
		resp, err = http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !strings.Contains(string(b), "\ngovkit_auditd_degraded "+wantGauge+"\n") {
			t.Fatalf("metrics: want govkit_auditd_degraded %s", wantGauge)
		}
	}

	if _, err := c.Append(ctx, toolEvent("a1", "ls")); err != nil {
		t.Fatal(err)
	}
	check(http.StatusOK, "", "0")

	for _, tc := range []struct {
		err        error
		status     int
		code       string
		wantReason string
	}{
		{fmt.Errorf("store: append: commit: %w: database or disk is full (13)", store.ErrFull), http.StatusServiceUnavailable, govapi.ReasonDiskFull, govapi.ReasonDiskFull},
		{errors.New("store: append: commit: disk I/O error (10)"), http.StatusInternalServerError, "", govapi.ReasonWriteFailed},
	} {
		fs.fail.Store(&tc.err)
		_, err := c.Append(ctx, toolEvent("a1", "ls"))
		var ce *client.Error
		if !errors.As(err, &ce) || ce.StatusCode != tc.status || ce.Code != tc.code {
			t.Fatalf("append while %v: %v; want %d %q", tc.err, err, tc.status, tc.code)
		}
		check(http.StatusServiceUnavailable, tc.wantReason, "1")
		// The next commit that succeeds ends it.
		fs.fail.Store(nil)
		if _, err := c.Append(ctx, toolEvent("a1", "ls")); err != nil {
			t.Fatal(err)
		}
		check(http.StatusOK, "", "0")
	}
}
