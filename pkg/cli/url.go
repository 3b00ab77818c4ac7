package cli

import "github.com/spf13/pflag"

// AddURLFlag declares --url, auditd's address: the one spelling every client
// binary takes (issue 20), so that GOVKIT_URL or one config key sets it for
// all. old are the binary's former spellings (--gateway, --audit-url), kept
// as hidden aliases.
func AddURLFlag(flags *pflag.FlagSet, p *string, value, usage string, old ...string) {
	flags.StringVar(p, "url", value, usage)
	AliasFlag(flags, "url", old...)
}
