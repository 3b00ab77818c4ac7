package auditd

import (
	"crypto/rand"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"strings"

	"github.com/spf13/cobra"
	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
)

// KeyCreateOptions are the parsed flags of `auditd key create`.
type KeyCreateOptions struct {
	IO   *cli.IOStreams
	Out  string
	Name string
	// Random is the source of the key (crypto/rand).
	Random io.Reader
}

func newCmdKey(streams *cli.IOStreams) *cobra.Command {
	cmd := &cobra.Command{
		Use:   "key",
		Short: "Manage the key auditd signs checkpoints with",
		Long: `With --checkpoint-key FILE auditd signs checkpoints of its log: the size of the
log and the root of a Merkle tree (RFC 6962) over its events' hashes, as a
C2SP signed note with an Ed25519 key. Whoever holds the verifier key can then
check that the log they read is the one auditd signed: not shortened, not
rewritten (verify-chain, auditor). The same keys serve a witness (auditd
witness --key), which cosigns the checkpoints it verified.

Exit status: 0 done, 3 on a usage error or a failure.`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error { return c.Help() },
	}
	cmd.AddCommand(newCmdKeyCreate(streams, nil))
	return cmd
}

func newCmdKeyCreate(streams *cli.IOStreams, runF func(*KeyCreateOptions) error) *cobra.Command {
	opts := &KeyCreateOptions{IO: streams, Random: rand.Reader}
	cmd := &cobra.Command{
		Use:   "create --out FILE [--name ORIGIN]",
		Short: "Make a checkpoint signing key, write it to a file, and print its verifier key",
		Long: `Create makes a new Ed25519 signing key named --name (the log's origin, the
first line of every checkpoint; default HOSTNAME/audit), writes it to --out
with mode 0600, and prints the verifier key ("NAME+HASH+KEY"), and nothing
else, on standard output. It never overwrites a file.

Keep the signing key as secret as the database's backups are safe: whoever
holds it can sign a rewritten log. Hand the verifier key to whoever checks the
log (verify-chain --key, auditor); it cannot sign.

Exit status: 0 created, 3 on a usage error or a failure (nothing is written).`,
		Example: `  auditd key create --out /etc/govkit/checkpoint.key --name audit.example.com/prod > checkpoint.pub
  auditd --db audit.db --checkpoint-key /etc/govkit/checkpoint.key --checkpoint-log /var/lib/govkit/checkpoints.log`,
		Args: cobra.NoArgs,
		RunE: func(c *cobra.Command, args []string) error {
			if opts.Out == "" {
				return cli.Failf("--out is required").WithHint("pass --out FILE: where to write the private key (mode 0600)")
			}
			if opts.Name == "" {
				host, err := os.Hostname()
				if err != nil || host == "" {
					host = "auditd"
				}
				opts.Name = host + "/audit"
			}
			if err := checkKeyName(opts.Name); err != nil {
				return cli.Fail(err, "pass --name with no spaces or '+', e.g. audit.example.com/prod")
			}
			if runF != nil {
				return runF(opts)
			}
			return keyCreateRun(opts)
		},
	}
	cmd.Flags().StringVar(&opts.Out, "out", "", "write the private key to `FILE` (mode 0600; never overwritten)")
	cmd.Flags().StringVar(&opts.Name, "name", "", "the key's name and the log's `ORIGIN` (default HOSTNAME/audit)")
	cli.SkipConfig(cmd.Flags(), "out", "name")
	return cmd
}

// checkKeyName applies note's rules for key names (no Unicode spaces, no
// '+') and the checkpoint's for origins.
func checkKeyName(name string) error {
	if strings.ContainsFunc(name, func(r rune) bool { return r == '+' || r == ' ' || r == '\t' }) {
		return fmt.Errorf("key name %q has a space or '+'", name)
	}
	if err := checkpoint.CheckOrigin(name); err != nil {
		return fmt.Errorf("key name: %w", err)
	}
	return nil
}

func keyCreateRun(o *KeyCreateOptions) error {
	skey, vkey, err := note.GenerateKey(o.Random, o.Name)
	if err != nil {
		return cli.Fail(fmt.Errorf("making the key: %w", err), "pass --name with no spaces or '+'")
	}
	f, err := os.OpenFile(o.Out, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	switch {
	case errors.Is(err, fs.ErrExist):
		return cli.Failf("%s exists: key create never overwrites a key", o.Out).
			WithHint("pass another --out, or remove the old key first if nothing signs with it any more")
	case err != nil:
		return cli.Fail(err, "check --out: its directory must exist and be writable")
	}
	_, werr := f.WriteString(skey + "\n")
	if werr == nil {
		werr = f.Sync()
	}
	if cerr := f.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		os.Remove(o.Out)
		return cli.Fail(fmt.Errorf("writing %s: %w", o.Out, werr), "")
	}
	if _, err := fmt.Fprintln(o.IO.Out, vkey); err != nil {
		return cli.Fail(fmt.Errorf("printing the verifier key: %w", err), "the key is in "+o.Out+"; auditd logs its verifier key at start")
	}
	return nil
}

// maxKeyFile bounds a key file read.
const maxKeyFile = 4 << 10

// loadCheckpointKey reads --checkpoint-key: the signer, and its verifier
// key for the log line. A key readable by group or others is a warning,
// as a TLS key's is.
func loadCheckpointKey(path string, logf func(string, ...any)) (note.Signer, string, error) {
	return loadSignerKey("--checkpoint-key", path, logf)
}

// loadSignerKey reads the signing key file path given with flag.
func loadSignerKey(flag, path string, logf func(string, ...any)) (note.Signer, string, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, "", cli.Fail(err, "pass "+flag+" FILE as auditd key create wrote it")
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxKeyFile+1))
	if err != nil {
		return nil, "", cli.Fail(err, "")
	}
	skey := strings.TrimSpace(string(data))
	signer, err := note.NewSigner(skey)
	var vkey string
	if err == nil {
		vkey, err = checkpoint.VerifierKey(skey)
	}
	if len(data) > maxKeyFile || err != nil {
		return nil, "", cli.Failf("%s %s is not a signing key", flag, path).
			WithHint("pass the private key file auditd key create --out wrote (not the verifier key it printed)")
	}
	if fi, err := f.Stat(); err == nil && fi.Mode().Perm()&0o077 != 0 {
		logf("warning: signing key %s is readable by group or others (mode %04o): run 'chmod 600 %s'", path, fi.Mode().Perm(), path)
	}
	return signer, vkey, nil
}
