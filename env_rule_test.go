package govkit_test

import (
	"os"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/internal/cmdtree"
	"github.com/govkit/govkit/pkg/cli"
)

// noVariable are the flags that take no value from the environment or a
// config file, with the reason. Every other flag of every binary follows
// the README's environment rule (TestEnvironmentRule).
var noVariable = map[string]string{
	// Everywhere.
	"--help":            "asks for help, never a setting",
	"--version":         "asks for the version, never a setting",
	"--config":          "names the config file; GOVKIT_CONFIG does that, and a file cannot name itself",
	"--no-descriptions": "cobra's completion script option, one invocation's choice",

	// One invocation's input, or the question it asks: a variable or a
	// config key would silently change every later run (cli.SkipConfig).
	"approvals approve --reason":              "one decision's reason",
	"approvals deny --reason":                 "one decision's reason",
	"approvals consume --action-hash":         "one action's hash",
	"approvals list --limit":                  "one listing",
	"approvals list --pending":                "one listing",
	"approvals list --status":                 "one listing",
	"approvals request --action":              "one request",
	"approvals request --command":             "one request",
	"approvals request --reason":              "one request",
	"approvals request --resource":            "one request",
	"approvals request --tags":                "one request",
	"approvals request --tag":                 "one request (former spelling of --tags)",
	"approvals request --tool":                "one request",
	"approvals request --ttl":                 "one request",
	"approvals request --wait":                "one request",
	"approvals wait --timeout":                "one wait",
	"auditd key create --name":                "one key",
	"auditd key create --out":                 "one key",
	"auditd token create --name":              "one token",
	"auditd token create --principal-roles":   "one token",
	"auditd token create --principal-service": "one token",
	"auditd token create --principal-user":    "one token",
	"auditd token create --roles":             "one token",
	"auditd token revoke --name":              "one token",
	"auditd witness --once":                   "one run's mode: set in a config file it would turn the service into a one-shot",
	"auditor --once":                          "one run's mode: set in a config file it would turn the service into a one-shot",
	"auditor --since-seq":                     "one run's starting point",
	"secbot --once":                           "one run's mode: set in a config file it would turn the service into a one-shot",
	"secbot --since-seq":                      "one run's starting point",
	"classify --null":                         "describes one invocation's input",
	"classify doctor --agent":                 "one check",
	"classify doctor --dir":                   "one check",
	"classify hook --agent":                   "set by the hook command line the agent runs",
	"classify hook install --agent":           "one installation",
	"classify hook install --command":         "one installation",
	"gate check --approval":                   "one command's approval",
	"gate check --command":                    "one command",
	"gate check --report":                     "one command's report",
	"gate check --resource":                   "one command's resource",
	"gate check --wait":                       "one command's wait",
	"gate run --approval":                     "one command's approval",
	"gate run --command":                      "one command",
	"gate run --report":                       "one command's report",
	"gate run --resource":                     "one command's resource",
	"gate run --wait":                         "one command's wait",
	"gate doctor --agent":                     "one check",
	"gate doctor --dir":                       "one check",
	"gate doctor --hook-command":              "one check",
	"gate hook --agent":                       "set by the hook command line the agent runs",
	"gate hook install --agent":               "one installation",
	"gate hook install --command":             "one installation",
	"gate hook reset --session":               "one session",
	"gate mcp --print-kinds":                  "one listing",
	"gate session --emit":                     "one session's mode",
	"gate session --force":                    "one session's mode",
	"gate session --record":                   "one session's recording",
	"gate session --replay":                   "one session's replay",
	"govexplain --action":                     "the question asked",
	"govexplain --at":                         "the question asked",
	"govexplain --event":                      "the question asked",
	"govexplain --pods":                       "the question asked",
	"govexplain --resource":                   "the question asked",
	"govexplain --role":                       "the question asked",
	"govexplain --rows":                       "the question asked",
	"govexplain --service":                    "the question asked",
	"govexplain --session":                    "the question asked",
	"govexplain --tags":                       "the question asked",
	"govexplain --user":                       "the question asked",
	"verify-chain --checkpoint":               "the evidence checked",
	"verify-chain --checkpoint-log":           "the evidence checked",
	"verify-chain --event":                    "the evidence checked",
	"verify-chain --jsonl":                    "the evidence checked",
	"verify-chain --key":                      "the evidence checked",
	"verify-chain --proof":                    "the evidence checked",
}

// olderNames are the variables that flags keep from before the rule
// (cli.KeepEnv), read after GOVKIT_<BINARY>_<FLAG> and before
// GOVKIT_<FLAG>; docs/config.md lists them. A new one is a contract:
// add it here on purpose.
var olderNames = map[string][]string{
	"approvals --url":              {"GOVKIT_AUDIT_URL"},
	"auditor --url":                {"GOVKIT_AUDIT_URL"},
	"secbot --url":                 {"GOVKIT_AUDIT_URL"},
	"govbot --url":                 {"GOVKIT_AUDIT_URL"},
	"auditor --socket":             {"GOVKIT_AUDIT_SOCKET"},
	"secbot --socket":              {"GOVKIT_AUDIT_SOCKET"},
	"auditd --socket":              {"GOVKIT_AUDIT_SOCKET"},
	"auditd --db":                  {"GOVKIT_AUDIT_DB"},
	"auditd export --db":           {"GOVKIT_AUDIT_DB"},
	"verify-chain --db":            {"GOVKIT_AUDIT_DB"},
	"auditd --tokens":              {"GOVKIT_TOKENS_FILE"},
	"auditd token create --tokens": {"GOVKIT_TOKENS_FILE"},
	"auditd token list --tokens":   {"GOVKIT_TOKENS_FILE"},
	"auditd token revoke --tokens": {"GOVKIT_TOKENS_FILE"},
	"auditd --policy":              {"GOVKIT_POLICY_FILE"},
	"govexplain --policy":          {"GOVKIT_POLICY_FILE"},
	"govexplain lint --policy":     {"GOVKIT_POLICY_FILE"},
	"govexplain test --policy":     {"GOVKIT_POLICY_FILE"},
	"auditd --infra":               {"GOVKIT_INFRA_CONFIG"},
	"govexplain --infra":           {"GOVKIT_INFRA_CONFIG"},
	"govexplain test --infra":      {"GOVKIT_INFRA_CONFIG"},
	"govexplain --dry-run":         {"GOVKIT_POLICY_DRY_RUN"},
	"auditd --redact-pattern":      {"GOVKIT_REDACT_PATTERNS"},
	"gate receipt verify --key":    {"GOVKIT_RECEIPT_KEY"},
	"gate conversations --server":  {"GOVKIT_SERVE"},
}

// TestEnvironmentRule walks every flag of every binary's command tree and
// checks, by loading it, that each variable the README's rule names sets
// it: GOVKIT_<BINARY>_<FLAG>, then the older names above, then
// GOVKIT_<FLAG>; a former spelling of a flag (--gateway for --url) is a
// flag too. The flags in noVariable, and only those, read none (issue 20).
func TestEnvironmentRule(t *testing.T) {
	readme, err := os.ReadFile("README.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, rule := range []string{"`GOVKIT_<BINARY>_<FLAG>`", "`GOVKIT_<FLAG>`", "docs/config.md"} {
		if !strings.Contains(string(readme), rule) {
			t.Errorf("README.md's configuration section does not state the rule's %s", rule)
		}
	}

	streams, _, _, _ := cli.Test()
	seenNoVar, seenOlder := map[string]bool{}, map[string]bool{}
	checked := 0
	for _, root := range cmdtree.Roots(streams) {
		prog := root.Name()
		cli.VisitCommands(root, func(c *cobra.Command) {
			c.Flags().VisitAll(func(f *pflag.Flag) {
				key := flagKey(c, f)
				envs := cli.EnvNames(prog, f)
				if entry, reason, ok := lookupNoVariable(key, f.Name); ok {
					seenNoVar[entry] = true
					if envs != nil {
						t.Errorf("%s reads %q, but takes no variable: %s", key, envs, reason)
					}
					return
				}
				want := []string{"GOVKIT_" + word(prog) + "_" + word(f.Name)}
				if older := olderNames[key]; older != nil {
					seenOlder[key] = true
					want = append(want, older...)
				}
				want = append(want, "GOVKIT_"+word(f.Name))
				if !slices.Equal(envs, want) {
					t.Errorf("%s: variables %q, want %q", key, envs, want)
					return
				}
				for _, env := range want {
					checkVariable(t, prog, c.CommandPath(), f.Name, env)
					checked++
				}
			})
		})
	}
	for _, list := range []struct {
		name string
		keys []string
		seen map[string]bool
	}{{"noVariable", keysOf(noVariable), seenNoVar}, {"olderNames", keysOf(olderNames), seenOlder}} {
		for _, k := range list.keys {
			if !list.seen[k] {
				t.Errorf("%s lists %q, which no command has", list.name, k)
			}
		}
	}
	t.Logf("%d variables checked", checked)
}

// checkVariable loads the command at path in a fresh tree of binary prog
// with only env set, and checks that env set the flag (or, for a former
// spelling, the flag it stands for).
func checkVariable(t *testing.T, prog, path, flag, env string) {
	t.Helper()
	streams, _, _, _ := cli.Test()
	var c *cobra.Command
	cli.VisitCommands(cmdtree.Root(streams, prog), func(sub *cobra.Command) {
		if sub.CommandPath() == path {
			c = sub
		}
	})
	f := c.Flags().Lookup(flag)
	target := flag
	if alias := cli.AliasOf(f); alias != "" {
		target = alias
	}
	loader := &cli.ConfigLoader{
		Prog: prog,
		LookupEnv: func(k string) (string, bool) {
			if k == env {
				return valueFor(f), true
			}
			return "", false
		},
	}
	_ = loader.Load(c) // a value the flag refuses still names its source
	if got := cli.FlagSource(c.Flags(), target); got != env {
		t.Errorf("%s --%s: %s did not set it (source %q)", path, flag, env, got)
	}
}

// valueFor is a value most flags of f's type accept.
func valueFor(f *pflag.Flag) string {
	switch f.Value.Type() {
	case "bool":
		return "true"
	case "duration":
		return "1s"
	case "format":
		return "json"
	}
	return "1" // a number, or any text
}

// flagKey names f by the command that declares it: a persistent flag by
// the ancestor whose subcommands inherit it.
func flagKey(c *cobra.Command, f *pflag.Flag) string {
	owner := c
	for p := c; p != nil; p = p.Parent() {
		if p.PersistentFlags().Lookup(f.Name) != nil {
			owner = p
		}
	}
	return owner.CommandPath() + " --" + f.Name
}

// lookupNoVariable finds key in noVariable, or the flag's name alone for
// the flags that no binary configures, and returns the entry found.
func lookupNoVariable(key, name string) (entry, reason string, ok bool) {
	for _, entry := range []string{"--" + name, key} {
		if reason, ok := noVariable[entry]; ok {
			return entry, reason, true
		}
	}
	return "", "", false
}

func word(s string) string { return strings.ToUpper(strings.ReplaceAll(s, "-", "_")) }

func keysOf[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}
