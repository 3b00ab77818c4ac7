package cli

import (
	"errors"
	"testing"

	"github.com/spf13/cobra"
)

// --ca-cert reads GOVKIT_CA_CERT, and its errors name where the value
// came from.
func TestCACertFlag(t *testing.T) {
	var file string
	cmd := &cobra.Command{Use: "x", RunE: func(*cobra.Command, []string) error { return nil }}
	AddCACertFlag(cmd.Flags(), &file)
	l := &ConfigLoader{Prog: "x", LookupEnv: func(k string) (string, bool) {
		return map[string]string{"GOVKIT_CA_CERT": "/etc/ca.pem"}[k], k == "GOVKIT_CA_CERT"
	}}
	if err := l.Load(cmd); err != nil {
		t.Fatal(err)
	}
	if file != "/etc/ca.pem" {
		t.Fatalf("--ca-cert %q", file)
	}
	err := CACertFailure(cmd.Flags(), errors.New("CA certificate /etc/ca.pem: no such file or directory"))
	if err.Code != ExitFailure || err.Error() != "--ca-cert (from GOVKIT_CA_CERT): CA certificate /etc/ca.pem: no such file or directory" || err.Hint != CACertHint {
		t.Fatalf("%d %q %q", err.Code, err, err.Hint)
	}
	if got := CACertFailure(nil, errors.New("e")).Error(); got != "--ca-cert: e" {
		t.Fatalf("%q", got)
	}
}
