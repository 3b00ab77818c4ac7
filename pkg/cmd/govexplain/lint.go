package govexplain

import (
	"fmt"

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
hours, day names, quorums and duplicate names are errors) and then reports rules
that can never be reached, policies that can never apply, and settings that do
not do what they seem to.

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
					if err := writeJSON(streams.Out, struct {
						SchemaVersion int    `json:"schema_version"`
						File          string `json:"file"`
						policy.Finding
					}{1, file, f}); err != nil {
						return err
					}
				}
			} else {
				for _, f := range findings {
					where := fmt.Sprintf("policy %q", f.Policy)
					if f.Rule >= 0 {
						where += fmt.Sprintf(" rule %d", f.Rule)
					}
					fmt.Fprintf(streams.Out, "%s:%d: %s: %s: %s\n", file, f.Line, f.Kind, where, f.Message)
				}
				if len(findings) == 0 {
					fmt.Fprintf(streams.Out, "%s: %d policies, no findings\n", file, len(cfg.Policies))
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
