package auditor

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/monitor"
)

// The wiring of auditor's run: the engine is pkg/monitor (issue 20
// "engines out of pkg/cmd"); this file gives it a client, a clock, the
// state file, standard output and the webhook, and maps its end to an exit
// status.

const (
	// apiTimeout bounds one API request; verification reads the whole log.
	apiTimeout = 5 * time.Minute
	// Delivering queued webhook alerts at exit may take this long.
	webhookDrainDaemon = 10 * time.Second
	webhookDrainOnce   = 30 * time.Second
)

// run is auditor: --once or the daemon.
func run(o *Options) error {
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	var logMu sync.Mutex
	logf := func(format string, args ...any) {
		logMu.Lock()
		defer logMu.Unlock()
		fmt.Fprintf(o.IO.ErrOut, "auditor: "+format+"\n", args...)
	}

	// Its own transport, so that the monitor can close its idle
	// connections at the end: a connection dialed for a request that
	// another one served sits in auditd as new, and holds up a graceful
	// stop of auditd for 5 s.
	hc := &http.Client{Timeout: apiTimeout, Transport: http.DefaultTransport.(*http.Transport).Clone()}
	copts := []client.Option{client.WithUserAgent("auditor/" + build.String()), client.WithHTTPClient(hc)}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		copts = append(copts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.AuditURL, copts...)
	if err != nil {
		return cli.Fail(err, "pass --url http://HOST:PORT (or set GOVKIT_URL)")
	}

	d := monitor.Deps{Client: c, Now: o.now, Sleep: cli.Sleep, Logf: logf, State: monitor.State{SchemaVersion: monitor.StateVersion}}
	cfg := monitor.Config{
		Socket: o.Socket, AuditURL: o.AuditURL, TokenGiven: o.Token != "", VerifyInterval: o.VerifyInterval,
		Events:   detect.EventWatchConfig{MaxEventsPerMinute: o.MaxPerMinute, Hours: o.hours(), ClockSkew: o.ClockSkew},
		SinceSeq: o.SinceSeq, Verbose: o.Verbose, Keys: o.keys, ReconnectMin: o.ReconnectMin, ReconnectMax: o.ReconnectMax,
		CertHint: cli.CACertHint,
	}
	if o.State != "" {
		st, exists, err := readState(o.State)
		if err != nil {
			return cli.Failf("state file %s: %v", o.State, err).
				WithHint("auditor alone writes this file: restore it from a backup, or remove it to start afresh (losing its pinned head)")
		}
		d.State, d.Store = st, stateFile(o.State)
		if c := st.Checkpoint; c != nil && o.keys != nil {
			cp, err := checkpoint.Open([]byte(c.Note), o.keys)
			if err != nil {
				return cli.Failf("state file %s: its pinned checkpoint: %v", o.State, err).
					WithHint("pass the --checkpoint-key that signed it; if the key was rotated, or the file was edited, investigate, then remove the file to pin afresh")
			}
			d.Pinned = &cp
		}
		if !exists {
			// Written now, so that an unwritable --state fails at start, not
			// silently at the first save.
			if err := stateFile(o.State).Save(st); err != nil {
				return cli.Failf("creating the state file %s: %v", o.State, err).
					WithHint("pass --state FILE in an existing directory auditor may write to")
			}
		}
		cfg.Destinations += "; state " + o.State
	}

	out := &printer{w: o.IO.Out, json: o.Output.Resolve(o.IO) == cli.FormatJSON, loc: o.loc}
	var hook *webhook
	if o.Webhook != "" {
		if hook, err = newWebhook(o, logf); err != nil { // validate checked the URL
			return cli.Failf("--incident-webhook %v", err)
		}
		cfg.Destinations += "; alerts also to " + hook.shown
	}
	d.Emit = func(a detect.Alert) error {
		err := out.print(a)
		if hook != nil {
			hook.Send(a)
		}
		return err
	}
	if c.SendsTokenInClear() {
		logf("warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)", o.AuditURL)
	}

	m := monitor.New(cfg, d)
	drain := webhookDrainDaemon
	var alerts int
	if o.Once {
		drain = webhookDrainOnce
		alerts, err = m.RunOnce(ctx)
	} else {
		err = m.RunDaemon(ctx)
	}
	if hook != nil {
		ctx, cancel := context.WithTimeout(context.Background(), drain)
		hook.Close(ctx)
		cancel()
	}
	var me *monitor.Error
	switch {
	case errors.As(err, &me):
		return cli.Failf("%s", me.Msg).WithHint(me.Hint)
	case err != nil:
		return err
	case alerts > 0:
		return cli.Silent(exitAlerts)
	}
	return nil
}
