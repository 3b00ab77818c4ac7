package secbot

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/respond"
	"github.com/govkit/govkit/pkg/servertls"
	"github.com/govkit/govkit/pkg/termtext"
)

// The wiring of secbot's run: the engine is pkg/respond (issue 20
// "engines out of pkg/cmd"); this file gives it a client, a clock, standard
// output and the metrics, and serves /health, /metrics and /callback.

// requestTimeout bounds the start's request to auditd.
const requestTimeout = 10 * time.Second

// logger writes secbot's log lines on stderr, from the stream goroutine
// and the HTTP handlers.
type logger struct {
	mu sync.Mutex
	w  io.Writer
}

func (l *logger) logf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, "secbot: "+format+"\n", args...)
}

// secbot is one run: the engine and what serves and prints around it.
type secbot struct {
	o       *Options
	r       *respond.Responder
	log     *logger
	m       *metrics
	jsonOut bool
}

func run(o *Options) error {
	ctx, stop := cli.RunContext(o.Context)
	defer stop()
	log := &logger{w: o.IO.ErrOut}
	copts := []client.Option{client.WithUserAgent("secbot/" + build.String())}
	if o.Token != "" {
		copts = append(copts, client.WithToken(o.Token))
	}
	if o.roots != nil {
		copts = append(copts, client.WithRootCAs(o.roots))
	}
	c, err := client.New(o.Gateway, copts...)
	if err != nil {
		return cli.Fail(err, "pass --url http://HOST:PORT (or set GOVKIT_URL) naming auditd")
	}
	if c.SendsTokenInClear() {
		log.logf("warning: --url %s is plain HTTP beyond loopback: the token crosses the network in the clear; use https:// (auditd --tls-cert)", o.Gateway)
	}
	if err := checkTrust(ctx, c, o.Gateway); err != nil {
		return err
	}
	s := &secbot{o: o, log: log, m: newMetrics(), jsonOut: o.Output.Resolve(o.IO) == cli.FormatJSON}
	s.r = respond.New(respond.Config{
		Socket: o.Socket, Gateway: o.Gateway, SinceSeq: o.SinceSeq, Cooldown: o.Cooldown, DryRun: o.DryRun,
		MinBackoff: o.MinBackoff, MaxBackoff: o.MaxBackoff,
	}, respond.Deps{Client: c, Now: o.now, Sleep: cli.Sleep, Logf: log.logf, Report: s.print, Counters: s.m})
	if o.Once {
		return s.once(ctx)
	}

	// Bind first, so that a taken --listen fails at once; serve only once
	// the starting point is fixed, so that /health answering means every
	// event committed from then on will be matched.
	var ln net.Listener
	if o.Listen != "" {
		if ln, err = net.Listen("tcp", o.Listen); err != nil {
			return cli.Failf("--listen %s: %v", o.Listen, err).
				WithHint("pass another --listen HOST:PORT (or set GOVKIT_SECBOT_LISTEN), or --listen '' to serve nothing")
		}
		defer ln.Close()
	}
	mode := "creating incidents at " + o.Gateway
	if o.DryRun {
		mode = "dry run: printing incidents, creating none"
	}
	log.logf("following %s (%s; cooldown %s)", o.Socket, mode, o.Cooldown)
	s.r.Start(ctx)

	if ln != nil {
		srv := s.httpServer()
		served := make(chan struct{})
		go func() {
			defer close(served)
			if err := srv.Serve(ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
				log.logf("error: serving %s: %v", ln.Addr(), err)
			}
		}()
		defer func() {
			sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
			defer cancel()
			_ = srv.Shutdown(sctx)
			<-served
		}()
		addr := ln.Addr().String()
		if !servertls.IsLoopbackAddr(ln.Addr()) {
			log.logf("warning: --listen %s is not loopback: /callback and /metrics answer anyone who can reach it", o.Listen)
		}
		if o.URLFile != "" {
			remove, err := cli.WriteURLFile("--url-file", o.URLFile, "http://"+addr)
			if err != nil {
				return err
			}
			defer remove()
		}
		log.logf("serving /health, /metrics and /callback on http://%s", addr)
		if o.Ready != nil {
			o.Ready(addr)
		}
	}

	err = s.r.Run(ctx)
	if ctx.Err() != nil {
		log.logf("stopped: %d events seen, the last seq %d", s.r.Seen(), s.r.LastSeq())
		return nil // SIGTERM or SIGINT: the normal end of a daemon
	}
	return err
}

// output is one line of standard output: an incident created, or one that
// would be (--dry-run).
type output struct {
	SchemaVersion int  `json:"schema_version"`
	DryRun        bool `json:"dry_run"`
	govapi.IncidentInput
	// Event is the incident's place in the chain, when it was created.
	Event *govapi.EventRef `json:"event,omitempty"`
}

// print writes one incident line on standard output.
func (s *secbot) print(in govapi.IncidentInput, ev *govapi.EventRef, now time.Time) {
	if s.jsonOut {
		if err := cli.WriteJSON(s.o.IO.Out, output{SchemaVersion: audit.SchemaVersion, DryRun: s.o.DryRun, IncidentInput: in, Event: ev}); err != nil {
			s.log.logf("error: %v", err)
		}
		return
	}
	verb, at := "would create", now
	if ev != nil {
		verb, at = "created", ev.Timestamp
	}
	agent := in.Agent
	if agent == "" {
		agent = "-"
	}
	line := fmt.Appendf(nil, "%s %s %s %s agent=%s: %s (%s)\n",
		at.Local().Format(time.TimeOnly), verb, in.Severity, in.Type, termtext.Clean(agent, 64), termtext.Clean(in.Message, 300), in.IncidentID)
	if _, err := s.o.IO.Out.Write(line); err != nil {
		s.log.logf("error: writing the output: %v", err)
	}
}

// checkTrust ends secbot at start when an https:// --gateway presents a
// certificate it does not trust: that is configuration, not an outage, and
// no retry fixes it (DESIGN §11 "Transport"). Any other failure is an
// outage secbot rides out.
func checkTrust(ctx context.Context, c *client.Client, gateway string) error {
	if !strings.HasPrefix(gateway, "https://") {
		return nil
	}
	cctx, cancel := context.WithTimeout(ctx, requestTimeout)
	defer cancel()
	if _, err := c.Health(cctx); client.IsCertificateError(err) {
		return cli.Failf("auditd at %s: %s", gateway, client.NetReason(err)).WithHint(cli.CACertHint)
	}
	return nil
}
