package govexplain

import (
	"bytes"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/policy"
)

func newCmdTest(streams *cli.IOStreams) *cobra.Command {
	var policyFile, infraFile string
	var output cli.Format
	cmd := &cobra.Command{
		Use:   "test --policy FILE CASES.yaml",
		Short: "Run test cases against a policy file and report rule coverage",
		Long: `Test evaluates every case of CASES.yaml against the policy file and compares the
outcome with the case's expectation (effect, and optionally enforced effect,
deciding policy and rule, quorum, failed condition). It then reports, per rule,
how often cases reached it, how often it decided, how often a condition failed,
and for rules never reached, why.

A case without tags: takes its resource's tags from --infra. The case format is
described in README.md ("Testing policies") and in examples/policy-tests.yaml.

Exit status: 0 every case passes, 1 some case fails, 3 a file cannot be loaded
or a usage error.`,
		Args: cobra.ExactArgs(1),
		RunE: func(c *cobra.Command, args []string) error {
			if policyFile == "" {
				return cli.Failf("--policy is required").WithHint("pass --policy FILE or set GOVKIT_POLICY_FILE")
			}
			e, cfg, infra, err := loadEngine(policyFile, infraFile, false, "", time.Now)
			if err != nil {
				return err
			}
			data, err := policy.ReadFile(args[0]) // a FIFO would block
			if err != nil {
				return cli.Fail(err, "pass the path of a cases file, like examples/policy-tests.yaml")
			}
			cases, err := policy.LoadCases(args[0], bytes.NewReader(data))
			if err != nil {
				return cli.Fail(err, "fix the case file at the line it names")
			}
			if infra != nil {
				for i := range cases {
					if !cases[i].TagsGiven {
						cases[i].Request.Resource.Tags, _ = infra.Lookup(cases[i].Request.Resource.Type, cases[i].Request.Resource.Name)
					}
				}
			}
			rep := policy.RunCases(e, cfg, cases)
			if output.Resolve(streams) == cli.FormatJSON {
				if err := cli.WriteJSON(streams.Out, struct {
					SchemaVersion int  `json:"schema_version"`
					Passed        bool `json:"passed"`
					policy.Report
				}{1, rep.Passed(), rep}); err != nil {
					return err
				}
			} else {
				printReport(streams, args[0], rep)
			}
			if !rep.Passed() {
				return cli.Silent(1)
			}
			return nil
		},
	}
	cli.AddOutputFlag(cmd, &output)
	addPolicyFlag(cmd, &policyFile)
	addInfraFlag(cmd, &infraFile)
	return cmd
}

func printReport(streams *cli.IOStreams, file string, rep policy.Report) {
	w := streams.Out
	failed := 0
	for _, c := range rep.Cases {
		if c.Pass {
			fmt.Fprintf(w, "PASS  %s\n", c.Name)
			continue
		}
		failed++
		fmt.Fprintf(w, "FAIL  %s (%s:%d)\n", c.Name, file, c.Line)
		for _, d := range c.Differences {
			fmt.Fprintf(w, "      %s\n", d)
		}
		for _, l := range strings.Split(strings.TrimRight(c.Explanation, "\n"), "\n") {
			fmt.Fprintf(w, "      | %s\n", l)
		}
	}
	fmt.Fprintln(w, "\nCoverage (reached / decided / condition failed):")
	for _, p := range rep.Coverage {
		fmt.Fprintf(w, "  policy %q applied %d×", p.Policy, p.Applied)
		if p.Why != "" {
			fmt.Fprintf(w, " — never applied: %s", p.Why)
		}
		fmt.Fprintln(w)
		for _, r := range p.Rules {
			fmt.Fprintf(w, "    rule %d  %3d / %3d / %3d", r.Index, r.Reached, r.Decided, r.ConditionFailed)
			if r.Reached == 0 {
				fmt.Fprintf(w, "  never reached: %s", r.Why)
			}
			fmt.Fprintln(w)
		}
	}
	fmt.Fprintf(w, "\n%d cases: %d passed, %d failed\n", len(rep.Cases), len(rep.Cases)-failed, failed)
}
