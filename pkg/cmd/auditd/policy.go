package auditd

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	daemon "github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/servertls"
)

// loadHint says what to do about a file that did not load, naming its
// flag (DESIGN §3): a file that cannot be read is a wrong path; one that
// does not parse needs fixing (and govexplain lint says how).
func loadHint(flag, env, path string, readErr bool) string {
	switch {
	case readErr:
		return fmt.Sprintf("check --%s (or %s): auditd reads the file at start and on SIGHUP", flag, env)
	case flag == "policy":
		return fmt.Sprintf("fix the file named by --policy (or %s); govexplain lint --policy %s checks it", env, path)
	}
	return fmt.Sprintf("fix the file named by --%s (or %s)", flag, env)
}

// loadPolicy reads --policy and --infra into what the daemon governs with.
// The policy file's hash is of the very bytes that were parsed, so the
// sha256 that status and every decision report names the version in force.
func loadPolicy(o *ServeOptions) (daemon.Policy, error) {
	p := daemon.Policy{File: o.PolicyFile, DefaultEffect: policy.Effect(o.DefaultEffect), DryRun: o.PolicyDryRun, InfraFile: o.InfraFile}
	if o.PolicyFile != "" {
		data, err := policy.ReadFile(o.PolicyFile)
		if err != nil {
			return p, cli.Fail(err, loadHint("policy", "GOVKIT_POLICY_FILE", o.PolicyFile, true))
		}
		if p.Config, err = policy.LoadNamed(o.PolicyFile, bytes.NewReader(data)); err != nil {
			return p, cli.Fail(err, loadHint("policy", "GOVKIT_POLICY_FILE", o.PolicyFile, false))
		}
		sum := sha256.Sum256(data)
		p.SHA256 = hex.EncodeToString(sum[:])
	}
	if o.InfraFile != "" {
		data, err := policy.ReadFile(o.InfraFile)
		if err != nil {
			return p, cli.Fail(err, loadHint("infra", "GOVKIT_INFRA_CONFIG", o.InfraFile, true))
		}
		if p.Infra, err = policy.LoadInfraNamed(o.InfraFile, bytes.NewReader(data)); err != nil {
			return p, cli.Fail(err, loadHint("infra", "GOVKIT_INFRA_CONFIG", o.InfraFile, false))
		}
	}
	return p, nil
}

// describePolicy is the log's one-line summary of what governs.
func describePolicy(p daemon.Policy) string {
	var parts []string
	if p.Config != nil {
		parts = append(parts, fmt.Sprintf("%s, sha256 %s", cli.Plural(len(p.Config.Policies), "policy", "policies"), p.SHA256))
	}
	if p.Infra != nil {
		parts = append(parts, fmt.Sprintf("infra %s with %s", p.InfraFile, cli.Plural(len(p.Infra.Resources), "resource", "resources")))
	}
	return strings.Join(parts, ", ")
}

// reloadOnHangup reloads --policy and --infra, and the TLS pair when cert
// is not nil, on each SIGHUP until ctx ends. A file that does not load
// leaves the policy in force untouched: a typo must never switch
// governance off (seed 003 "Governance Misconfiguration Incidents"); the
// error goes to the log and to GET /api/v1/governance. A TLS pair that does
// not load leaves the one in use.
func reloadOnHangup(ctx context.Context, hup <-chan os.Signal, o *ServeOptions, srv *daemon.Server, cert *servertls.Certificate, log *syncWriter) {
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
		}
		if cert != nil {
			if err := cert.Reload(time.Now()); err != nil {
				log.logf("error: reloading the TLS certificate on SIGHUP: %s; keeping the certificate in use (expires %s)", oneLine(err), cert.Leaf().NotAfter.UTC().Format(time.RFC3339))
			} else {
				log.logf("TLS certificate reloaded from %s (expires %s)", cert.CertFile, cert.Leaf().NotAfter.UTC().Format(time.RFC3339))
			}
		}
		if o.PolicyFile == "" && o.InfraFile == "" {
			if cert != nil {
				continue
			}
			log.logf("SIGHUP: nothing to reload: auditd runs without --policy and --infra")
			continue
		}
		p, err := loadPolicy(o)
		if err == nil {
			err = srv.SetPolicy(p)
		}
		if err != nil {
			srv.PolicyReloadFailed(err)
			kept := "no policy"
			if st := srv.PolicyStatus(); st.Loaded {
				kept = fmt.Sprintf("the policy loaded from %s at %s (sha256 %s)", st.File, st.LoadedAt.Format("2006-01-02T15:04:05Z07:00"), st.SHA256)
			}
			log.logf("error: reloading on SIGHUP: %s; keeping %s", oneLine(err), kept)
			continue
		}
		switch {
		case p.Config != nil:
			log.logf("policy reloaded from %s (%s)", p.File, describePolicy(p))
		default:
			log.logf("infra reloaded from %s (%d resources)", p.InfraFile, len(p.Infra.Resources))
		}
	}
}

// notifyHangup starts catching SIGHUP. It is called before auditd says it
// listens: a SIGHUP sent as soon as the address is known must reload, not
// kill the daemon (SIGHUP's default action).
func notifyHangup() (<-chan os.Signal, func()) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	return hup, func() { signal.Stop(hup) }
}

// oneLine joins a multi-line error (the loader reports up to ten problems)
// for the one-line log.
func oneLine(err error) string {
	return strings.ReplaceAll(err.Error(), "\n", "; ")
}
