package cli

import (
	"testing"
	"time"
)

func TestApprox(t *testing.T) {
	for _, tc := range []struct {
		d    time.Duration
		want string
	}{
		{0, "0s"}, {-time.Second, "0s"}, {400 * time.Millisecond, "0s"}, {59 * time.Second, "59s"},
		{59*time.Second + 600*time.Millisecond, "1m"}, {4*time.Minute + 30*time.Second, "4m30s"},
		{5 * time.Minute, "5m"}, {25*time.Minute + 40*time.Second, "25m"}, {3*time.Hour + 20*time.Minute, "3h20m"},
		{2 * time.Hour, "2h"}, {30 * time.Hour, "30h"}, {5 * 24 * time.Hour, "5d"},
	} {
		if got := Approx(tc.d); got != tc.want {
			t.Errorf("Approx(%s) = %q, want %q", tc.d, got, tc.want)
		}
	}
}

func TestPlural(t *testing.T) {
	for _, c := range []struct {
		got, want string
	}{
		{Plural(0, "policy", "policies"), "0 policies"},
		{Plural(1, "policy", "policies"), "1 policy"},
		{Plural(int64(2), "event", "events"), "2 events"},
		{Plural(-1, "x", "xs"), "-1 xs"},
	} {
		if c.got != c.want {
			t.Errorf("got %q, want %q", c.got, c.want)
		}
	}
}
