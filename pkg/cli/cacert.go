package cli

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// CACertHint says what to do when auditd's TLS certificate is not trusted
// or --ca-cert does not load.
const CACertHint = "pass --ca-cert FILE (or set GOVKIT_CA_CERT) with the PEM certificate of the CA that signed auditd's certificate (auditd --tls-cert)"

// AddCACertFlag declares --ca-cert (GOVKIT_CA_CERT), which every client of
// auditd takes (DESIGN §11 "Transport"): the CA certificates to trust for an
// https:// auditd instead of the system's, for a private CA.
func AddCACertFlag(flags *pflag.FlagSet, p *string) {
	flags.StringVar(p, "ca-cert", "", "trust the CA certificates in the PEM `FILE` for an https:// auditd (default: the system's CAs)")
	_ = flags.SetAnnotation("ca-cert", cobra.BashCompFilenameExt, []string{"pem", "crt"})
}

// CACertFailure is the exit-3 error for a --ca-cert that did not load (err
// from client.LoadCACert), naming the flag as the user set it.
// Nil flags name it "--ca-cert".
func CACertFailure(flags *pflag.FlagSet, err error) *ExitError {
	name := "--ca-cert"
	if flags != nil {
		name = FlagName(flags, "ca-cert")
	}
	return Failf("%s: %v", name, err).WithHint(CACertHint)
}
