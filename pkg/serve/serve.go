// Package serve is gate serve's executor: it runs seed 001's conversation
// machine (pkg/session/conversation) against a real LLM endpoint and real
// tools, persisting every state before its effects run, and serves the
// conversations over HTTP with a server-sent event stream per conversation.
package serve

import (
	"context"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/convtools"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/toolgov"
)

// Options configure a Server.
type Options struct {
	Store *convstore.Store
	LLM   *llm.Client
	Model string
	// ContextWindows maps models to their context windows in tokens
	// (REQ-BED-022); nil is DefaultContextWindows.
	ContextWindows map[string]int
	Tools          *convtools.Runner
	// Session are the session gates' options (the receipt key).
	Session session.Options
	// Auditd, when set, records every tool execution and mode change and
	// turns a mode upgrade into an approval request (DESIGN §11).
	Auditd *client.Client
	// Tokens, when set, authenticates every API request but /health; each
	// caller sees and acts on its own conversations (admins on all,
	// auditors read all). Nil is local mode: loopback or a 0600 socket.
	Tokens Authenticator
	// WorkdirRoot, when set, is the directory every conversation's working
	// directory must lie under.
	WorkdirRoot string
	// LandlockAvailable says restricted mode can be enforced (REQ-BED-014).
	LandlockAvailable bool
	// EnvelopeProtocol describes tools in seed 002's strict text envelope
	// instead of native tool calling.
	EnvelopeProtocol bool
	// SubagentTimeout bounds a sub-agent's run (REQ-BED-008: a timeout is
	// reported to the parent as a failure).
	SubagentTimeout time.Duration
	// MaxImageDim bounds an attached image's width and height; larger ones
	// are resized before they are stored and sent.
	MaxImageDim int
	Log         io.Writer
	Now         func() time.Time
}

// Server runs conversations.
type Server struct {
	o     Options
	mu    sync.Mutex
	convs map[string]*driver
	wg    sync.WaitGroup
	ctx   context.Context
	stop  context.CancelFunc
	gov   *toolgov.Gov // with Auditd
}

// New starts a Server: every stored conversation is restored to idle with
// its complete history (REQ-BED-007) before New returns.
func New(o Options) (*Server, error) {
	if o.Store == nil || o.LLM == nil || o.Tools == nil {
		return nil, errors.New("serve: a store, an LLM client and a tool runner are required")
	}
	if o.ContextWindows == nil {
		o.ContextWindows = conversation.DefaultContextWindows
	}
	if o.SubagentTimeout <= 0 {
		o.SubagentTimeout = 10 * time.Minute
	}
	if o.MaxImageDim <= 0 {
		o.MaxImageDim = 1568
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	if o.Log == nil {
		o.Log = io.Discard
	}
	s := &Server{o: o, convs: map[string]*driver{}}
	if o.Auditd != nil {
		s.gov = toolgov.New(o.Auditd, nil, nil)
	}
	s.ctx, s.stop = context.WithCancel(context.Background())
	// What a predecessor killed with -9 left running dies before any
	// conversation is restored (REQ-BED-007: nothing stuck, nothing
	// running that no conversation knows of).
	if n := convtools.KillMarked(o.Tools.Mark); n > 0 {
		what := "processes"
		if n == 1 {
			what = "process"
		}
		s.logf("killed %d %s that the tools of a previous gate serve on this database left running", n, what)
	}
	all, err := o.Store.All(s.ctx)
	if err != nil {
		return nil, fmt.Errorf("serve: reading the stored conversations: %w", err)
	}
	for _, rec := range all {
		c, err := s.restoreConversation(rec.Snapshot)
		if err != nil {
			return nil, fmt.Errorf("serve: conversation %s: its stored state is damaged: %v", rec.ID, err)
		}
		rec.Snapshot = nil
		d := s.start(c, rec)
		d.post(restoreEvent{})
	}
	return s, nil
}

// Close stops every conversation's driver: running tools are killed and
// LLM requests aborted, and nothing more is persisted.
func (s *Server) Close() {
	s.stop()
	s.wg.Wait()
}

func (s *Server) logf(format string, args ...any) {
	fmt.Fprintf(s.o.Log, "gate serve: "+format+"\n", args...)
}

func (s *Server) at() string { return s.o.Now().UTC().Format(time.RFC3339Nano) }

// start registers c and starts its driver.
func (s *Server) start(c *session.Conversation, rec convstore.Conversation) *driver {
	d := newDriver(s, c, rec)
	s.mu.Lock()
	s.convs[c.Machine.ID] = d
	s.mu.Unlock()
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		d.loop(s.ctx)
	}()
	return d
}

func (s *Server) driver(id string) (*driver, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	d, ok := s.convs[id]
	return d, ok
}
