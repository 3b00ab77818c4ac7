// Package govexplain is the command tree of the govexplain binary: it
// evaluates a request against a policy file and explains the decision, and
// lints and tests policy files (DESIGN §5).
package govexplain

import (
	"crypto/x509"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/policy"
)

// ExplainOptions are the parsed flags of a hypothetical evaluation.
type ExplainOptions struct {
	IO            *cli.IOStreams
	Output        cli.Format
	PolicyFile    string
	InfraFile     string
	Resource      string
	Action        string
	Tags          []string
	tagsSet       bool
	User          string
	Roles         []string
	Service       string
	Rows, Pods    int
	At            string
	DryRun        bool
	DefaultEffect string
	// Gateway is auditd's URL: evaluate there (hypothetical, recording
	// nothing) or, with Event, show a recorded decision (gateway.go).
	Gateway string
	Token   string
	Event   string
	// Session checks the policy file's guardrails against that session's
	// recorded history (with --url only: auditd holds the history).
	Session string
	CACert  string // --ca-cert: the CA of an https:// --url
	// given reports whether a flag was on the command line.
	given func(name string) bool
	// flags are the command's, to name a flag as the user set it; roots
	// is --ca-cert, loaded by validateGateway.
	flags *pflag.FlagSet
	roots *x509.CertPool
	// Now is the clock for schedules when --at is absent (tests pin it).
	Now func() time.Time
}

// NewCmdGovexplain returns the govexplain root command.
func NewCmdGovexplain(streams *cli.IOStreams, runF func(*ExplainOptions) error) *cobra.Command {
	opts := &ExplainOptions{IO: streams, Now: time.Now}
	cmd := &cobra.Command{
		Use:   "govexplain (--policy FILE | --url URL) --resource TYPE:NAME --action ACTION [flags]",
		Short: "Evaluate a request against policy and explain the decision",
		Long: `Govexplain answers "what would happen if this principal did this action to this
resource?" from a policy file, without running anything, and explains why:
which policies applied or were skipped, which rule decided, which conditions
passed or failed, and what would change the outcome.

Tags come from --tags, or else from the resource's entry in --infra.

With --url URL the question goes to a running auditd instead, which
answers from the policy and infra files it has loaded and records nothing.
With --url URL --event ID govexplain shows the decision auditd recorded
with that policy_decision event: the trace stored then, not a re-evaluation,
so a policy changed since does not change the answer.

The policy file's guardrails (a rate limit and a circuit breaker per agent
session) are computed from the session's recorded events, which auditd
holds: --url URL --session ID checks them for that session; a local
evaluation lists them as not evaluated.

Exit status follows the enforced effect:

    0  allowed
    1  denied
    2  requires approval
    3  usage error, unreadable or invalid policy file, internal failure`,
		Example: `  govexplain --policy policies.yaml --resource database:prod-db --tags production \
    --action write --role dba
  govexplain --policy policies.yaml --infra infra.yaml --resource database:prod-db \
    --action write --rows 1500 -o json
  govexplain --url http://127.0.0.1:1199 --resource database:prod-db --action write
  govexplain --url http://127.0.0.1:1199 --session s-42 --resource database:prod-db --action write
  govexplain --url http://127.0.0.1:1199 --event 01JBX4T5WKQ2V8N3M6P9R0S7YZ -o json
  govexplain lint --policy policies.yaml
  govexplain test --policy policies.yaml examples/policy-tests.yaml`,
		Version: build.String(),
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			opts.tagsSet = c.Flags().Changed("tags") || cli.FlagSource(c.Flags(), "tags") != ""
			opts.given = func(name string) bool { return c.Flags().Changed(name) }
			opts.flags = c.Flags()
			// --policy on the command line asks locally even when --url
			// comes from the environment or a config file (GOVKIT_URL is
			// shared by every client binary): the command line wins.
			if c.Flags().Changed("policy") && cli.FlagSource(c.Flags(), "url") != "" {
				opts.Gateway = ""
			}
			if err := opts.validate(); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			if opts.Gateway != "" {
				return gatewayRun(opts)
			}
			return explainRun(opts)
		},
	}
	f := cmd.Flags()
	cli.AddOutputFlag(cmd, &opts.Output)
	cli.AddConfigFlag(cmd) // issue 20: every binary takes --config
	addPolicyFlag(cmd, &opts.PolicyFile)
	addInfraFlag(cmd, &opts.InfraFile)
	f.StringVar(&opts.Resource, "resource", "", "the resource as `TYPE:NAME` (database:prod-db)")
	f.StringVar(&opts.Action, "action", "", "the `ACTION`: read, write or destructive")
	f.StringSliceVar(&opts.Tags, "tags", nil, "the resource's `TAGS`, comma-separated (default: from --infra)")
	f.StringVar(&opts.User, "user", "", "evaluate as this `USER` id")
	f.StringSliceVar(&opts.Roles, "role", nil, "evaluate with this `ROLE` (repeatable)")
	f.StringVar(&opts.Service, "service", "", "evaluate as this `SERVICE` account")
	f.IntVar(&opts.Rows, "rows", 0, "rows affected, as after execution (`N`; 0 = not known)")
	f.IntVar(&opts.Pods, "pods", 0, "pods affected, as after execution (`N`; 0 = not known)")
	f.StringVar(&opts.At, "at", "", "evaluate at this `TIME` (RFC 3339) for schedules (default: now)")
	f.BoolVar(&opts.DryRun, "dry-run", false, "global dry-run: report the effect, enforce allow")
	f.StringVar(&opts.DefaultEffect, "default-effect", "", "override the file's default_effect with `EFFECT`: deny, allow or require_approval")
	cli.AddURLFlag(f, &opts.Gateway, "", "ask the auditd at `URL` instead of reading --policy (its loaded policy; nothing is recorded)", "gateway")
	f.StringVar(&opts.Event, "event", "", "with --url: show the decision recorded with event `ID` (no re-evaluation)")
	f.StringVar(&opts.Session, "session", "", "with --url: check the guardrails against session `ID`'s recorded history")
	f.StringVar(&opts.Token, "token", "", "with --url: the bearer `TOKEN` for auditd (prefer GOVKIT_TOKEN: a flag shows in ps)")
	cli.AddCACertFlag(f, &opts.CACert)
	cli.KeepEnv(f, "dry-run", "GOVKIT_POLICY_DRY_RUN")
	cli.SkipConfig(f, "resource", "action", "tags", "user", "role", "service", "rows", "pods", "at", "event", "session")
	cmd.AddCommand(newCmdLint(streams), newCmdTest(streams))
	return cmd
}

// addPolicyFlag: --policy, also GOVKIT_POLICY_FILE (seed 003's
// HELPDESK_POLICY_FILE).
func addPolicyFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "policy", "", "the policy `FILE` (YAML; see policies.example.yaml)")
	cli.KeepEnv(cmd.Flags(), "policy", "GOVKIT_POLICY_FILE")
}

// addInfraFlag: --infra, also GOVKIT_INFRA_CONFIG (seed 003's
// HELPDESK_INFRA_CONFIG).
func addInfraFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "infra", "", "the infrastructure `FILE` that gives resources their tags")
	cli.KeepEnv(cmd.Flags(), "infra", "GOVKIT_INFRA_CONFIG")
}

func (o *ExplainOptions) validate() error {
	if o.Gateway != "" {
		return o.validateGateway()
	}
	if o.Event != "" {
		return cli.Failf("--event needs --url: recorded decisions are in auditd").WithHint("pass --url URL (auditd's address) with --event ID")
	}
	if o.Session != "" {
		return cli.Failf("--session needs --url: guardrails are computed by auditd from the session's recorded events").
			WithHint("pass --url URL (auditd's address) with --session ID, or drop --session")
	}
	if o.PolicyFile == "" {
		return cli.Failf("--policy is required").WithHint("pass --policy FILE or set GOVKIT_POLICY_FILE, or ask a running auditd with --url URL")
	}
	if err := o.validateQuestion(); err != nil {
		return err
	}
	if o.At != "" {
		if _, err := time.Parse(time.RFC3339Nano, o.At); err != nil {
			return cli.Failf("--at %q is not an RFC 3339 time", o.At).WithHint("pass --at like 2026-03-09T14:00:00-05:00")
		}
	}
	switch policy.Effect(o.DefaultEffect) {
	case "", policy.EffectAllow, policy.EffectDeny, policy.EffectRequireApproval:
	default:
		return cli.Failf("--default-effect %q is not deny, allow or require_approval", o.DefaultEffect)
	}
	return nil
}

// validateQuestion checks what both modes ask about: the resource, the
// action and the counts.
func (o *ExplainOptions) validateQuestion() error {
	if _, _, err := o.resource(); err != nil {
		return err
	}
	// Any case, as the engine matches actions (issue 20: --action READ);
	// lower-cased so that the trace, and auditd with --url, see "read".
	switch policy.Action(strings.ToLower(o.Action)) {
	case policy.ActionRead, policy.ActionWrite, policy.ActionDestructive:
		o.Action = strings.ToLower(o.Action)
	case "":
		return cli.Failf("--action is required").WithHint("pass --action read, write or destructive")
	default:
		return cli.Failf("--action %q is not read, write or destructive", o.Action).WithHint("pass --action read, write or destructive")
	}
	if o.Rows < 0 || o.Pods < 0 {
		return cli.Failf("--rows and --pods must not be negative")
	}
	return nil
}

func (o *ExplainOptions) resource() (typ, name string, err error) {
	typ, name, ok := strings.Cut(o.Resource, ":")
	if o.Resource == "" {
		return "", "", cli.Failf("--resource is required").WithHint("pass --resource TYPE:NAME, e.g. --resource database:prod-db")
	}
	if !ok || typ == "" || name == "" {
		return "", "", cli.Failf("--resource %q is not TYPE:NAME", o.Resource).WithHint("pass --resource TYPE:NAME, e.g. --resource database:prod-db")
	}
	return typ, name, nil
}

// request builds the policy request, taking tags from --infra when --tags
// is not given; unknownToInfra reports a resource the infra file lacks.
func (o *ExplainOptions) request(infra *policy.Infra) (req policy.Request, unknownToInfra bool) {
	typ, name, _ := o.resource()
	req = policy.Request{
		Principal: policy.RequestPrincipal{UserID: o.User, Roles: o.Roles, Service: o.Service},
		Resource:  policy.RequestResource{Type: typ, Name: name, Tags: o.Tags},
		Action:    policy.Action(o.Action),
		Context:   policy.RequestContext{RowsAffected: o.Rows, PodsAffected: o.Pods},
	}
	if o.At != "" {
		req.Context.Time, _ = time.Parse(time.RFC3339Nano, o.At)
	}
	if !o.tagsSet && infra != nil {
		tags, found := infra.Lookup(typ, name)
		req.Resource.Tags = tags
		unknownToInfra = !found
	}
	return req, unknownToInfra
}

// loadEngine loads the policy (and infra) files for any subcommand.
func loadEngine(policyFile, infraFile string, dryRun bool, defaultEffect string, now func() time.Time) (*policy.Engine, *policy.Config, *policy.Infra, error) {
	cfg, err := policy.LoadFile(policyFile)
	if err != nil {
		return nil, nil, nil, cli.Fail(err, "fix the policy file; govexplain lint --policy "+policyFile+" checks it")
	}
	var infra *policy.Infra
	if infraFile != "" {
		if infra, err = policy.LoadInfraFile(infraFile); err != nil {
			return nil, nil, nil, cli.Fail(err, "fix the infrastructure file named by --infra")
		}
	}
	e := policy.NewEngine(policy.EngineConfig{PolicyConfig: cfg, DefaultEffect: policy.Effect(defaultEffect), DryRun: dryRun, Clock: now})
	return e, cfg, infra, nil
}

func explainRun(o *ExplainOptions) error {
	e, _, infra, err := loadEngine(o.PolicyFile, o.InfraFile, o.DryRun, o.DefaultEffect, o.Now)
	if err != nil {
		return err
	}
	req, unknown := o.request(infra)
	// Guardrails count a session's recorded events, which only auditd
	// has: here they are listed as not evaluated (DESIGN §12).
	trace := e.ExplainUnguarded(req, "evaluated by auditd per session from its recorded events; ask it with --url URL --session ID")
	if o.Rows > 0 || o.Pods > 0 {
		// Counts are only known after execution: that is the blast-radius
		// check (seed 003 "Guardrails"), and the decision says so.
		trace = e.CheckPostExecutionSession(req)
	}
	note := ""
	if unknown {
		note = fmt.Sprintf("the resource is not in %s, so it has no tags.", o.InfraFile)
	}
	out := struct {
		SchemaVersion int `json:"schema_version"`
		policy.DecisionTrace
	}{1, trace}
	if err := printTrace(o.IO, o.Output.Resolve(o.IO), out, trace.Explanation, note); err != nil {
		return err
	}
	return exitFor(trace.Decision.EnforcedEffect)
}

// printTrace prints asJSON (DESIGN §5's trace, with schema_version) in
// JSON, or else the explanation and a note after it; every mode prints
// through it, so that local and gateway answers look alike.
func printTrace(io_ *cli.IOStreams, format cli.Format, asJSON any, explanation, note string) error {
	if format == cli.FormatJSON {
		return cli.WriteJSON(io_.Out, asJSON)
	}
	fmt.Fprintln(io_.Out, strings.TrimRight(explanation, "\n"))
	if note != "" {
		fmt.Fprintf(io_.Out, "\nNote: %s\n", note)
	}
	return nil
}

// exitFor maps the enforced effect to DESIGN §5's exit code.
func exitFor(e policy.Effect) error {
	switch e {
	case policy.EffectAllow:
		return nil
	case policy.EffectRequireApproval:
		return cli.Silent(2)
	}
	return cli.Silent(1)
}
