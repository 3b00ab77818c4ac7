package auditd_test

import (
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/govapi"
)

// Routes is what Handler serves: every path it lists answers a method it
// does not take with 405 and an Allow header naming exactly the methods
// Routes lists for it, so docs checked against Routes (docs/api.md, issue
// 20) are checked against the router.
func TestRoutesAreServed(t *testing.T) {
	d := startDaemon(t, "", nil)
	h := d.srv.Handler()
	methods := map[string][]string{}
	for _, r := range auditd.Routes() {
		methods[r.Path] = append(methods[r.Path], r.Method)
		if r.Path != govapi.PathHealth && len(r.Roles) == 0 {
			t.Errorf("%s %s needs no role: only %s may be unauthenticated", r.Method, r.Path, govapi.PathHealth)
		}
	}
	if len(methods) < 20 {
		t.Fatalf("Routes lists %d paths", len(methods))
	}
	for path, ms := range methods {
		req := httptest.NewRequest("OPTIONS", govapi.WithID(path, "x"), nil)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		slices.Sort(ms)
		if rec.Code != http.StatusMethodNotAllowed || rec.Header().Get("Allow") != strings.Join(ms, ", ") {
			t.Errorf("OPTIONS %s: %d, Allow %q; Routes lists %v", path, rec.Code, rec.Header().Get("Allow"), ms)
		}
	}
}
