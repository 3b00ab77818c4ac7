package detect

import (
	"fmt"
	"testing"
	"time"
)

func TestCooldown(t *testing.T) {
	type call struct {
		pattern, agent string
		at             time.Duration // after patNow
		want           bool
	}
	tests := []struct {
		name   string
		period time.Duration
		calls  []call
		// suppressed is Suppressed() after the calls.
		suppressed uint64
	}{
		{"one per pattern and agent per period", 5 * time.Minute, []call{
			{"potential_sql_injection", "a", 0, true},
			{"potential_sql_injection", "a", time.Second, false},
			{"potential_sql_injection", "b", time.Second, true},         // another agent
			{"potential_command_injection", "a", 2 * time.Second, true}, // another pattern
			{"potential_sql_injection", "a", 5*time.Minute - 1, false},  // still within
			{"potential_sql_injection", "a", 5 * time.Minute, true},     // the period is over
			{"potential_sql_injection", "a", 6 * time.Minute, false},    // a new period started
			{"potential_sql_injection", "b", 5*time.Minute + time.Second, true},
		}, 3},
		{"the empty agent is a key like any other", time.Minute, []call{
			{"hash_mismatch", "", 0, true},
			{"hash_mismatch", "", time.Second, false},
			{"hash_mismatch", "x", time.Second, true},
		}, 1},
		{"a clock that goes backwards lets it through", time.Minute, []call{
			{"hash_mismatch", "a", time.Hour, true},
			{"hash_mismatch", "a", 0, true},
			{"hash_mismatch", "a", time.Second, false},
		}, 1},
		{"no period holds nothing back", 0, []call{
			{"hash_mismatch", "a", 0, true},
			{"hash_mismatch", "a", 0, true},
		}, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c := NewCooldown(tt.period, 0)
			for i, k := range tt.calls {
				if got := c.Allow(k.pattern, k.agent, patNow.Add(k.at)); got != k.want {
					t.Errorf("call %d: Allow(%s, %q, +%s) = %v, want %v", i, k.pattern, k.agent, k.at, got, k.want)
				}
			}
			if got := c.Suppressed(); got != tt.suppressed {
				t.Errorf("Suppressed = %d, want %d", got, tt.suppressed)
			}
		})
	}
}

func TestCooldownRelease(t *testing.T) {
	c := NewCooldown(time.Minute, 0)
	if !c.Allow("p", "a", patNow) {
		t.Fatal("first call held back")
	}
	c.Release("p", "a") // the incident could not be created
	if !c.Allow("p", "a", patNow.Add(time.Second)) {
		t.Fatal("held back after Release")
	}
	if c.Allow("p", "a", patNow.Add(2*time.Second)) {
		t.Fatal("let through twice in a period")
	}
}

// TestCooldownMemory: expired pairs are forgotten, and no more than maxKeys
// pairs are remembered however many agents there are.
func TestCooldownMemory(t *testing.T) {
	c := NewCooldown(time.Minute, 100)
	for i := range 50 {
		c.Allow("p", fmt.Sprint(i), patNow)
	}
	if c.Len() != 50 {
		t.Fatalf("Len = %d, want 50", c.Len())
	}
	c.Allow("p", "late", patNow.Add(time.Minute))
	if c.Len() != 1 {
		t.Errorf("after the period: Len = %d, want 1", c.Len())
	}

	// A flood of distinct agents within one period: the oldest pairs are
	// forgotten early, and the newest are still held back.
	for i := range 10_000 {
		if !c.Allow("p", fmt.Sprint("flood-", i), patNow.Add(time.Minute+time.Duration(i))) {
			t.Fatalf("agent %d held back", i)
		}
	}
	if c.Len() > 100 {
		t.Errorf("Len = %d, want at most 100", c.Len())
	}
	if c.Allow("p", "flood-9999", patNow.Add(time.Minute+20_000)) {
		t.Error("the newest agent was let through twice")
	}
	if !c.Allow("p", "flood-0", patNow.Add(time.Minute+20_000)) {
		t.Error("the oldest agent is still held back beyond maxKeys")
	}

	// Release and retry within a period (an incident API that keeps
	// failing) must not grow the queue without bound.
	c = NewCooldown(time.Hour, 10)
	for i := range 10_000 {
		c.Allow("p", "a", patNow.Add(time.Duration(i)))
		c.Release("p", "a")
	}
	if n := len(c.queue) - c.head; n > 2*10+1 {
		t.Errorf("queue holds %d entries", n)
	}
	if c.Len() != 0 {
		t.Errorf("Len = %d after releasing everything", c.Len())
	}
}

func BenchmarkCooldownAllow(b *testing.B) {
	c := NewCooldown(time.Minute, 0)
	agents := make([]string, 1000)
	for i := range agents {
		agents[i] = fmt.Sprint("agent-", i)
	}
	now := patNow
	for i := 0; b.Loop(); i++ {
		now = now.Add(time.Millisecond)
		c.Allow(PotentialSQLInjection, agents[i%len(agents)], now)
	}
}
