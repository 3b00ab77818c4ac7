package auditd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/token"
)

// TokenCreateOptions are the parsed flags of `auditd token create`.
type TokenCreateOptions struct {
	IO     *cli.IOStreams
	Tokens string
	Name   string
	Roles  []token.Role
	// Principal is who the token acts for (--principal-user and
	// --principal-roles); nil: its own name, with no policy roles.
	Principal *token.Principal
	// Random is the source of new tokens (crypto/rand).
	Random io.Reader
}

// TokenListOptions are the parsed flags of `auditd token list`.
type TokenListOptions struct {
	IO     *cli.IOStreams
	Tokens string
	Output cli.Format
}

// TokenRevokeOptions are the parsed flags of `auditd token revoke`.
type TokenRevokeOptions struct {
	IO     *cli.IOStreams
	Tokens string
	Name   string
}

func newCmdToken(streams *cli.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "token",
		Short: "Manage the bearer tokens that auditd's clients authenticate with",
		Long: `Auditd's HTTP clients authenticate with a bearer token ("Authorization: Bearer
TOKEN"). The tokens file (auditd --tokens FILE, or GOVKIT_TOKENS_FILE) holds,
for each token, only its SHA-256 hash, the name auditd records for whoever
uses it, and its roles:

    ROLE       MAY
    agent      append events, ask for decisions, request approvals, read its
               own requests
    approver   list approval requests and approve or deny them
    auditor    read everything: events, verification, approvals; report
               incidents
    admin      everything but gateway
    gateway    act for principals it authenticated itself: name the
               principal, agent and resource tags of a request (for a
               trusted enforcement point such as gate; granted only by name)

A token may also carry the principal it acts for in policy decisions
(--principal-user and --principal-roles: policy roles such as dba, not the
API roles above). Decisions, approval requests and events use it; a request
that names another principal, other roles or another agent is refused (403
principal_not_allowed) unless the token has the gateway role. Without a
principal a token acts as its own name, with no policy roles.

An approver's identity is the token's name, never a field of the request:
the requester of an approval can never approve it.

"auditd token create" prints a new token once, on standard output; it is not
stored anywhere, so hand it over then. A running auditd rereads the file
within a second of a change: created tokens work and revoked ones stop
without a restart. The file must not be writable by group or others (whoever
can write it can mint an admin token); create makes it with mode 0600.

Exit status: 0 done, 3 on a usage error or a failure.`,
		Example: `  auditd token create --tokens /etc/govkit/tokens.yaml --name alice --roles approver,auditor
  export GOVKIT_TOKENS_FILE=/etc/govkit/tokens.yaml
  GOVKIT_TOKEN=$(auditd token create --name ci-agent --roles agent)
  auditd token create --name deploy-7 --roles agent --principal-user alice@example.com --principal-roles dba
  auditd token list
  auditd token revoke --name alice`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	cmd.AddCommand(newCmdTokenCreate(streams, nil))
	cmd.AddCommand(newCmdTokenList(streams, nil))
	cmd.AddCommand(newCmdTokenRevoke(streams, nil))
	return cmd
}

// addTokensFlag declares --tokens, also GOVKIT_TOKENS_FILE.
func addTokensFlag(cmd *cobra.Command, p *string) {
	cmd.Flags().StringVar(p, "tokens", "", "the tokens `FILE` (YAML: names, roles and SHA-256 hashes)")
	cli.KeepEnv(cmd.Flags(), "tokens", "GOVKIT_TOKENS_FILE")
	_ = cmd.MarkFlagFilename("tokens", "yaml", "yml")
}

func checkTokensFlag(file string) error {
	if file == "" {
		return cli.Failf("--tokens is required").WithHint("pass --tokens FILE or set GOVKIT_TOKENS_FILE")
	}
	return nil
}

const nameHint = "pass --name with letters, digits and . - _ @, starting with a letter or a digit (e.g. alice or ci-bot@build)"

func newCmdTokenCreate(streams *cli.IOStreams, runF func(*TokenCreateOptions) error) *cobra.Command {
	opts := &TokenCreateOptions{IO: streams, Random: rand.Reader}
	var roles, principalUser, principalRoles, principalService string
	cmd := &cobra.Command{
		Use:   "create --tokens FILE --name NAME --roles ROLE[,ROLE...] [--principal-user U [--principal-roles R,...]]",
		Short: "Make a token, add its hash to the tokens file, and print it",
		Long: `Create makes a new token (gk_ and 43 URL-safe characters), adds its SHA-256
hash to the tokens file with --name and --roles, and prints the token, and
nothing else, on standard output. The token is not stored: keep it now.

The file is created (mode 0600) if it is missing, and otherwise rewritten
atomically, keeping the other tokens, their order, comments, mode and owner.
Names are 1 to 64 letters, digits and ". - _ @" and must be unique, compared
without case. Roles: agent, approver, auditor, admin, gateway (see "auditd
token --help").

--principal-user names the policy principal the token acts for, with
--principal-roles (its policy roles, e.g. dba,sre) and --principal-service
(a service account policies may match); auditd takes them from the token,
never from a request.

Exit status: 0 created, 3 on a usage error or a failure (nothing is written).`,
		Example: `  auditd token create --tokens tokens.yaml --name alice --roles approver,auditor
  GOVKIT_TOKEN=$(auditd token create --tokens tokens.yaml --name ci --roles agent)
  auditd token create --tokens tokens.yaml --name dba-agent --roles agent \
      --principal-user alice@example.com --principal-roles dba`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTokensFlag(opts.Tokens); err != nil {
				return err
			}
			if err := token.CheckName(opts.Name); err != nil {
				if opts.Name == "" {
					return cli.Failf("--name is required").WithHint("pass --name NAME: the name auditd records for whoever uses the token")
				}
				return cli.Fail(err, nameHint)
			}
			if roles == "" {
				return cli.Failf("--roles is required").WithHint("pass --roles with one or more of agent, approver, auditor, admin, gateway, comma-separated")
			}
			parsed, err := token.ParseRoles(roles)
			if err != nil {
				return cli.Fail(err, "pass --roles with one or more of agent, approver, auditor, admin, gateway, comma-separated")
			}
			opts.Roles = parsed
			if principalUser == "" && (principalRoles != "" || principalService != "") {
				return cli.Failf("--principal-roles and --principal-service need --principal-user").
					WithHint("pass --principal-user USER: the policy principal the token acts for")
			}
			if principalUser != "" {
				p := token.Principal{UserID: principalUser, Roles: token.ParsePrincipalRoles(principalRoles), Service: principalService}
				if err := token.CheckPrincipal(p); err != nil {
					return cli.Fail(err, "pass --principal-user and --principal-roles with letters, digits and . - _ @ (e.g. --principal-user alice@example.com --principal-roles dba,sre)")
				}
				opts.Principal = &p
			}
			if runF != nil {
				return runF(opts)
			}
			return tokenCreateRun(opts)
		},
	}
	cmd.Flags().StringVar(&principalUser, "principal-user", "", "the policy principal `USER` the token acts for (default: the token's name)")
	cmd.Flags().StringVar(&principalRoles, "principal-roles", "", "comma-separated policy `ROLES` of the principal (e.g. dba,sre)")
	cmd.Flags().StringVar(&principalService, "principal-service", "", "the principal's `SERVICE` account, for policies that match services")
	addTokensFlag(cmd, &opts.Tokens)
	cmd.Flags().StringVar(&opts.Name, "name", "", "the token's `NAME`: who auditd records for its requests and votes")
	cmd.Flags().StringVar(&roles, "roles", "", "comma-separated `ROLES`: agent, approver, auditor, admin, gateway")
	_ = cmd.RegisterFlagCompletionFunc("roles", cobra.FixedCompletions(
		[]string{"agent", "approver", "auditor", "admin", "gateway", "approver,auditor"}, cobra.ShellCompDirectiveNoFileComp))
	// A name, roles and principal describe one token, never a preference:
	// a "name:" in a config file must not become every new token's name.
	cli.SkipConfig(cmd.Flags(), "name", "roles", "principal-user", "principal-roles", "principal-service")
	return cmd
}

func tokenCreateRun(o *TokenCreateOptions) error {
	tok, err := token.CreateFor(o.Tokens, o.Name, o.Roles, o.Principal, o.Random)
	if errors.Is(err, fs.ErrNotExist) {
		return cli.Fail(err, "create the directory first (create makes only the file), or pass another --tokens")
	}
	if err != nil {
		return tokenError(err, o.Tokens)
	}
	if _, err := fmt.Fprintln(o.IO.Out, tok); err != nil {
		return cli.Fail(fmt.Errorf("printing the token: %w (its hash is in %s: revoke it)", err, o.Tokens),
			fmt.Sprintf("run 'auditd token revoke --tokens %s --name %s' and create it again", o.Tokens, o.Name))
	}
	fmt.Fprintf(o.IO.ErrOut, "auditd: added %s (%s%s) to %s; the token is shown only once\n", o.Name, joinRoles(o.Roles), principalText(o.Principal), o.Tokens)
	return nil
}

func newCmdTokenList(streams *cli.IOStreams, runF func(*TokenListOptions) error) *cobra.Command {
	opts := &TokenListOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "list --tokens FILE [-o text|json]",
		Short: "Print the names and roles in the tokens file",
		Long: `List checks the tokens file as auditd would load it and prints each token's
name and roles, in file order; never a token or a hash. JSON output is one
object per token: {"schema_version":1,"name":…,"roles":[…]}.

Exit status: 0 listed (also when there are no tokens), 3 when the file cannot
be loaded or on a usage error.`,
		Example: `  auditd token list --tokens tokens.yaml
  auditd token list --tokens tokens.yaml -o json | jq -r 'select(.roles | index("admin")) | .name'`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTokensFlag(opts.Tokens); err != nil {
				return err
			}
			if runF != nil {
				return runF(opts)
			}
			return tokenListRun(opts)
		},
	}
	addTokensFlag(cmd, &opts.Tokens)
	cli.AddOutputFlag(cmd, &opts.Output)
	return cmd
}

func tokenListRun(o *TokenListOptions) error {
	f, err := token.Load(o.Tokens)
	if err != nil {
		return tokenError(err, o.Tokens)
	}
	ids := f.Identities()
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		for _, id := range ids {
			if err := cli.WriteJSON(o.IO.Out, struct {
				SchemaVersion int              `json:"schema_version"`
				Name          string           `json:"name"`
				Roles         []token.Role     `json:"roles"`
				Principal     *token.Principal `json:"principal,omitempty"`
			}{1, id.Name, id.Roles, id.Principal}); err != nil {
				return err
			}
		}
		return nil
	}
	if len(ids) == 0 {
		_, err := fmt.Fprintf(o.IO.Out, "%s: no tokens (no one can log in to auditd)\n", o.Tokens)
		return err
	}
	tw := tabwriter.NewWriter(o.IO.Out, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "NAME\tROLES\tACTS FOR")
	for _, id := range ids {
		actsFor := "(itself)"
		if id.Principal != nil {
			actsFor = strings.TrimPrefix(principalText(id.Principal), "; acts for ")
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\n", id.Name, joinRoles(id.Roles), actsFor)
	}
	if err := tw.Flush(); err != nil {
		return cli.Fail(err, "")
	}
	return nil
}

func newCmdTokenRevoke(streams *cli.IOStreams, runF func(*TokenRevokeOptions) error) *cobra.Command {
	opts := &TokenRevokeOptions{IO: streams}
	cmd := &cobra.Command{
		Use:   "revoke --tokens FILE --name NAME",
		Short: "Remove a token from the tokens file",
		Long: `Revoke removes the token named --name (exactly) from the tokens file, with
the same atomic rewrite as create. A running auditd stops accepting it within
a second.

Exit status: 0 revoked, 3 when there is no such token, on a usage error or a
failure (nothing is written).`,
		Example: `  auditd token revoke --tokens tokens.yaml --name alice`,
		Args:    cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if err := checkTokensFlag(opts.Tokens); err != nil {
				return err
			}
			if opts.Name == "" {
				return cli.Failf("--name is required").WithHint("pass --name NAME; 'auditd token list' prints the names")
			}
			if runF != nil {
				return runF(opts)
			}
			return tokenRevokeRun(opts)
		},
	}
	addTokensFlag(cmd, &opts.Tokens)
	cmd.Flags().StringVar(&opts.Name, "name", "", "the `NAME` of the token to remove")
	cli.SkipConfig(cmd.Flags(), "name")
	return cmd
}

func tokenRevokeRun(o *TokenRevokeOptions) error {
	if err := token.Revoke(o.Tokens, o.Name); err != nil {
		return tokenError(err, o.Tokens)
	}
	fmt.Fprintf(o.IO.ErrOut, "auditd: revoked %s in %s\n", o.Name, o.Tokens)
	return nil
}

// tokenError gives a pkg/token error its hint.
func tokenError(err error, file string) error {
	var pe *token.ParseError
	switch {
	case errors.Is(err, token.ErrNameTaken):
		return cli.Fail(err, "pass another --name; to replace that token, remove it first with 'auditd token revoke'")
	case errors.Is(err, token.ErrNoSuchName):
		return cli.Fail(err, fmt.Sprintf("run 'auditd token list --tokens %s' for the names", file))
	case errors.Is(err, token.ErrUnsafeMode):
		return cli.Fail(err, fmt.Sprintf("run 'chmod go-w %s', and check who changed it", file))
	case errors.Is(err, fs.ErrNotExist):
		return cli.Fail(err, "check --tokens (or GOVKIT_TOKENS_FILE); 'auditd token create' makes the file")
	case errors.As(err, &pe):
		return cli.Fail(err, "fix the line it names; each token is {name, sha256, roles, principal?}")
	}
	return cli.Fail(err, "")
}

func joinRoles(roles []token.Role) string {
	s := make([]string, len(roles))
	for i, r := range roles {
		s[i] = string(r)
	}
	return strings.Join(s, ",")
}

// principalText describes the principal a token acts for, for messages:
// "; acts for alice (roles dba, sre)", or "" for none.
func principalText(p *token.Principal) string {
	if p == nil {
		return ""
	}
	s := "; acts for " + p.UserID
	if len(p.Roles) > 0 {
		s += " (roles " + strings.Join(p.Roles, ", ") + ")"
	}
	if p.Service != "" {
		s += " as service " + p.Service
	}
	return s
}
