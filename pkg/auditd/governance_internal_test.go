package auditd

import (
	"errors"
	"strings"
	"testing"
)

// A policy_decision event without a trace (from before the decisions API,
// or written into the file by hand) has nothing to explain: 422, saying so.
func TestExplanationOfWithoutTrace(t *testing.T) {
	for _, body := range []string{
		`{"event_id":"bare","seq":3,"event_type":"policy_decision","policy_decision":{"effect":"allow"}}`,
		`{"event_id":"bare","seq":3,"event_type":"policy_decision"}`,
		`{"event_id":"bare","seq":3,"event_type":"policy_decision","policy_decision":"allow"}`,
	} {
		_, _, err := explanationOf([]byte(body))
		var nd *notDecisionError
		if !errors.As(err, &nd) || !strings.Contains(err.Error(), "event bare is a policy_decision event without a decision trace") {
			t.Errorf("%s: err = %v", body, err)
		}
	}
}
