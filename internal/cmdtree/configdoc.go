package cmdtree

import (
	"bytes"
	"fmt"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/govkit/govkit/pkg/cli"
)

// ConfigDoc renders docs/config.md from roots: every flag of every
// command with its default, its variables in the order they are read and
// its config-file key, then the files and the variables that are not
// flags. make docs writes it; TestConfigDoc fails when it is stale.
func ConfigDoc(roots []*cobra.Command) []byte {
	var b bytes.Buffer
	b.WriteString(configIntro)
	b.WriteString("\n## Binaries\n\n")
	for _, root := range roots {
		fmt.Fprintf(&b, "- [%s](#%s)\n", root.Name(), root.Name())
	}
	for _, root := range roots {
		prog := root.Name()
		fmt.Fprintf(&b, "\n## %s\n\n%s.\n", prog, strings.TrimSuffix(root.Short, "."))
		cli.VisitCommands(root, func(c *cobra.Command) {
			if c.Hidden || c.Name() == "help" || isCompletion(c) {
				return
			}
			var rows []string
			c.LocalFlags().VisitAll(func(f *pflag.Flag) {
				if f.Hidden || !documented(f) {
					return
				}
				rows = append(rows, flagRow(prog, c, f))
			})
			if len(rows) == 0 {
				return
			}
			fmt.Fprintf(&b, "\n### `%s`\n\n", c.CommandPath())
			if c.HasSubCommands() && c.HasPersistentFlags() {
				b.WriteString("Flags marked *every command* apply to its subcommands too.\n\n")
			}
			b.WriteString("| flag | default | variables, first set wins | config key | what |\n|---|---|---|---|---|\n")
			for _, r := range rows {
				b.WriteString(r)
			}
		})
	}
	b.WriteString(configFiles)
	return b.Bytes()
}

func isCompletion(c *cobra.Command) bool {
	for p := c; p != nil; p = p.Parent() {
		if p.Name() == "completion" && p.Parent() != nil && p.Parent().Parent() == nil {
			return true
		}
	}
	return false
}

// documented leaves out the flags every binary has and README explains.
func documented(f *pflag.Flag) bool {
	switch f.Name {
	case "help", "version", "config":
		return false
	}
	return true
}

// flagRow is one table row: the flag and its former spellings, the
// default, the variables, the config keys and the usage.
func flagRow(prog string, c *cobra.Command, f *pflag.Flag) string {
	flags := c.Flags()
	name, usage := pflag.UnquoteUsage(f)
	spell := "`--" + f.Name
	if f.Shorthand != "" {
		spell = "`-" + f.Shorthand + "`, " + spell
	}
	if name != "" && name != "bool" {
		spell += " " + name
	}
	spell += "`"
	old := cli.Aliases(flags, f.Name)
	if len(old) > 0 {
		spell += " (formerly " + join(old, "`--", "`") + ")"
	}
	def := ""
	switch f.DefValue {
	case "", "[]", "false", "0":
		if f.Value.Type() == "duration" && f.DefValue == "0s" {
			break
		}
	default:
		def = "`" + f.DefValue + "`"
	}
	vars, keys := "command line only", "—"
	if cli.Configurable(f) {
		envs := cli.EnvNames(prog, f)
		for _, o := range old {
			for _, env := range cli.EnvNames(prog, flags.Lookup(o)) {
				if !slices.Contains(envs, env) {
					envs = append(envs, env)
				}
			}
		}
		vars = join(envs, "`", "`")
		keys = join(append([]string{f.Name}, old...), "`", "`")
	}
	if c.HasSubCommands() && c.PersistentFlags().Lookup(f.Name) != nil {
		usage += " (*every command*)"
	}
	return fmt.Sprintf("| %s | %s | %s | %s | %s |\n", spell, cell(def), vars, keys, cell(usage))
}

func join(items []string, pre, post string) string {
	out := make([]string, len(items))
	for i, s := range items {
		out[i] = pre + s + post
	}
	return strings.Join(out, ", ")
}

// cell escapes what would end a Markdown table cell.
func cell(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	return strings.ReplaceAll(s, "\n", " ")
}

const configIntro = `# Configuration reference

<!-- Generated from the command trees by ` + "`make docs`" + ` (internal/gendocs); do not edit by hand.
TestConfigDoc fails when this file is stale. -->

Every govkit binary takes its settings the same way. A flag not given on the command line is looked
up, first match wins:

1. the environment, the first variable set in the flag's *variables* column: ` + "`GOVKIT_<BINARY>_<FLAG>`" + `
   (this binary only), then any older name the flag keeps, then ` + "`GOVKIT_<FLAG>`" + ` (every binary with that
   flag); ` + "`<BINARY>`" + ` and ` + "`<FLAG>`" + ` are upper case with ` + "`-`" + ` as ` + "`_`" + `, and an empty value counts as unset;
2. the config file: the *config key* in the binary's own section, then at the top level;
3. the default.

A flag's former spelling (in parentheses) still works on the command line, as a config key and
through its own variables, read after the flag's. A shared variable or top-level key sets the flag of
that name in every binary, whatever it means there (auditd's ` + "`--socket`" + ` is the audit socket, gate
serve's its own); where the meanings differ, use the binary's own variable or section. Flags marked
*command line only* describe one invocation and read neither. ` + "`--help`" + `, ` + "`-v`/`--version`" + ` and
` + "`--config FILE`" + ` are on every binary and read neither (the config file's own variable is
` + "`GOVKIT_CONFIG`" + `, below).
`

const configFiles = `
## Files

| file | read by | what |
|---|---|---|
| ` + "`--config FILE`" + `, or ` + "`GOVKIT_CONFIG`" + ` | every binary | the config file (YAML); it must exist; ` + "`--config ''`" + ` reads none |
| ` + "`$XDG_CONFIG_HOME/govkit/config.yaml`" + ` (` + "`~/.config/govkit/config.yaml`" + ` without ` + "`XDG_CONFIG_HOME`" + `) | every binary | the user's config file, read when it exists and no file is named |
| ` + "`/etc/govkit/config.yaml`" + ` | every binary | the system's config file, read when it exists and no file is named; the user's file wins key by key |

A config file is YAML of at most 1 MiB; its keys are the long flag names above:

` + "```yaml" + `
url: http://127.0.0.1:1199   # every binary with --url
output: json                 # every binary with -o/--output
govbot:                      # govbot only; wins over the top-level keys
  since: 6h
` + "```" + `

The other files a binary reads or writes are named by its flags (` + "`--db`, `--state`, `--policy`, `--tokens`" + `, …).

## Variables that are not flags

| variable | read by | what |
|---|---|---|
| ` + "`GOVKIT_CONFIG`" + ` | every binary | the config file, when ` + "`--config`" + ` is not given |
| ` + "`XDG_CONFIG_HOME`, `HOME`" + ` | every binary | where the user's config file is |
| ` + "`XDG_STATE_HOME`" + ` | gate | where gate keeps its state by default (` + "`~/.local/state/govkit`" + ` without it) |
| ` + "`USER`" + ` | approvals | who requests and decides, in local mode (else the account's name) |
| ` + "`GOMEMLIMIT`, `GOGC`" + ` | auditd | the Go runtime's; auditd sets its own defaults when they are unset |
| ` + "`GOVKIT_SERVE_TOOL`" + ` | gate serve | set by gate serve in the tools it runs, so that after a crash it finds and ends those left behind |
`
