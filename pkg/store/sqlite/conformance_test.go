package sqlite

import (
	"testing"

	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/store/storetest"
)

// The store conformance suite (issue 19: one suite, every store).
func TestConformance(t *testing.T) {
	storetest.Run(t, func(t *testing.T) store.Store {
		s, _ := openTest(t)
		return s
	})
}

// storetest's Scan crosses the page boundaries of scanPage.
var _ = [1]struct{}{}[scanPage-4096]
