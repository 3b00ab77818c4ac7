package govexplain

import (
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/policy"
)

func newCmdLint(streams *cli.IOStreams) *cobra.Command {
	var file string
	var output cli.Format
	cmd := &cobra.Command{
		Use:   "lint --policy FILE",
		Short: "Check a policy file: strict load, shadowed rules, policies that never apply",
		Long: `Lint loads the policy file strictly (unknown keys, bad effects, actions, time zones,
hours, day names, quorums, duplicate names and guardrail settings are errors) and
then reports rules that can never be reached, policies that can never apply, and
settings that do not do what they seem to (such as a circuit breaker whose
cooldown is under a minute).

Exit status: 0 clean, 1 findings, 3 the file cannot be loaded or a usage error.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if file == "" {
				return cli.Failf("--policy is required").WithHint("pass --policy FILE or set GOVKIT_POLICY_FILE")
			}
			cfg, err := policy.LoadFile(file)
			if err != nil {
				return cli.Fail(err, "fix the line it names; every key is described in policies.example.yaml")
			}
			findings := policy.Lint(cfg)
			if output.Resolve(streams) == cli.FormatJSON {
				for _, f := range findings {
					if err := cli.WriteJSON(streams.Out, struct {
						SchemaVersion int    `json:"schema_version"`
						File          string `json:"file"`
						policy.Finding
					}{1, file, f}); err != nil {
						return err
					}
				}
			} else {
				for _, f := range findings {
					fmt.Fprintln(streams.Out, findingLine(file, f))
				}
				if len(findings) == 0 {
					fmt.Fprintf(streams.Out, "%s: %d policies%s, no findings\n", file, len(cfg.Policies), guardrailSummary(cfg.Guardrails))
				}
			}
			if len(findings) > 0 {
				return cli.Silent(1)
			}
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output)
	addPolicyFlag(cmd, &file)
	return cmd
}

// findingLine is one finding as text: "FILE:LINE: KIND: WHERE: MESSAGE",
// where WHERE is the policy (and rule) or "guardrails". A finding about the
// whole file names neither, and one without a line only the file (issue 20:
// never "line 0, policy \"\"").
func findingLine(file string, f policy.Finding) string {
	loc := file
	if f.Line > 0 {
		loc = fmt.Sprintf("%s:%d", file, f.Line)
	}
	where := ""
	switch {
	case strings.HasPrefix(f.Kind, "guardrail_"):
		where = "guardrails: "
	case f.Policy != "" && f.Rule >= 0:
		where = fmt.Sprintf("policy %q rule %d: ", f.Policy, f.Rule)
	case f.Policy != "":
		where = fmt.Sprintf("policy %q: ", f.Policy)
	}
	return fmt.Sprintf("%s: %s: %s%s", loc, f.Kind, where, f.Message)
}

// guardrailSummary names the file's guardrails for lint's clean line:
// ", guardrails: rate_limit 20 writes/min per session; circuit_breaker 5
// errors in 10m, cooldown 15m".
func guardrailSummary(g *policy.Guardrails) string {
	if g == nil {
		return ""
	}
	var parts []string
	if rl := g.RateLimit; rl != nil {
		parts = append(parts, fmt.Sprintf("rate_limit %d writes/min per session", rl.WritesPerMinute))
	}
	if cb := g.CircuitBreaker; cb != nil {
		parts = append(parts, fmt.Sprintf("circuit_breaker %d errors in %s, cooldown %s", cb.ConsecutiveErrors, shortDuration(cb.Window), shortDuration(cb.Cooldown)))
	}
	return ", guardrails: " + strings.Join(parts, "; ")
}

// shortDuration is d without String's zero units: 10m, not 10m0s.
func shortDuration(d time.Duration) string {
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
