package auditd

import (
	"context"
	"errors"
	"fmt"
	"log"
	"math"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/stream"
)

// Chain states reported by GET /health.
const (
	ChainUnverified = "unverified"
	ChainVerified   = "verified"
	ChainBroken     = "broken"
)

// Server is an audit daemon over one store. New starts its writer; Run
// serves it until its context ends; Close stops it (Run calls Close).
type Server struct {
	cfg    Config
	st     store.Store
	hub    *stream.Hub
	head   *headState
	w      *writer
	m      *metrics
	stream *stream.Server
	ap     *approvals
	gov    govState // the policy in force (governance*.go)

	batchBudget *byteBudget // batch bodies in flight (api_batch.go)

	verifyMu sync.Mutex // one verification at a time: each scans the whole log

	chainMu    sync.Mutex
	chainState string

	dbHealth *dbHealth // what GET /health says of the database (health.go)

	ckpt *checkpointer // nil without Config.Checkpoints (checkpoints.go)

	closeOnce sync.Once
}

// New reads the chain head from st, so that an auditd restarted on the same
// file continues the chain, and starts the writer. The caller keeps st and
// closes it after Close.
func New(cfg Config, st store.Store) (*Server, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	cfg.setDefaults()
	ctx := context.Background()
	seq, hash, err := st.Head(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the chain head: %w", err)
	}
	var last time.Time
	if seq > 0 {
		recs, err := st.Query(ctx, store.Filter{AfterSeq: seq - 1, Limit: 1})
		if err != nil {
			return nil, fmt.Errorf("reading the last event: %w", err)
		}
		if len(recs) == 1 {
			last = recs[0].Timestamp
			if !audit.IsHash(hash) {
				// Someone edited the column: the chain continues from what
				// the stored body hashes to, and verification reports
				// the edit.
				cfg.Logf("warning: the last event (seq %d) has an invalid event_hash column; continuing the chain from the hash of its body", seq)
				hash = audit.Hash(recs[0].Body)
			}
		}
	}
	s := &Server{cfg: cfg, st: st, chainState: ChainUnverified, head: &headState{}, batchBudget: newByteBudget(batchBudgetBytes)}
	s.gov.startedAt = cfg.Now().UTC()
	s.head.set(seq, hash)
	s.hub = stream.NewHub(cfg.SubscriberBuffer, seq)
	s.m = newMetrics(s.hub, s.head)
	s.dbHealth = &dbHealth{gauge: s.m.degraded}
	s.registerGovernanceMetrics()
	s.w = newWriter(st, &s.cfg, s.hub, s.m, s.head, last, s.dbHealth)
	s.ap = newApprovals(s)
	if s.w.sq != nil {
		// A store other instances write to: the stream and the approval
		// long-polls follow the log.
		s.w.follow = newFollower(st, s.hub, s.head, s.ap.followed, cfg.Logf)
	}
	if cfg.ReadOnly {
		s.w.failed = &unavailableError{govapi.ReasonReadOnly, errReadOnly}
		s.dbHealth.set(s.w.failed, true)
	}
	go s.w.run()
	s.stream = stream.NewServer(stream.Config{
		Hub:    s.hub,
		Replay: s.replay,
		Logf:   cfg.Logf,
	})
	if cfg.ReadOnly {
		// Serving what the file holds: the approvals table as it is.
		if cfg.Checkpoints != nil {
			cfg.Logf("warning: read-only: no checkpoints are signed")
		}
		return s, nil
	}
	if cfg.Checkpoints != nil {
		tree, ok := st.(store.Tree)
		if !ok {
			s.Close()
			return nil, errors.New("signing checkpoints: the store keeps no Merkle tree")
		}
		var leader store.Leader
		if e, ok := st.(store.Elector); ok {
			leader = e.CheckpointLeader()
		}
		s.ckpt = newCheckpointer(*cfg.Checkpoints, tree, leader, s.head, cfg.Now, cfg.Logf)
		if err := s.ckpt.start(ctx); err != nil {
			s.ckpt = nil
			s.Close()
			return nil, fmt.Errorf("signing checkpoints: %w", err)
		}
		s.w.ckpt = s.ckpt
		if s.w.follow != nil {
			s.w.follow.ckpt.Store(s.ckpt)
		}
	}
	if n, err := s.ap.catchUp(ctx); err != nil {
		s.Close()
		return nil, fmt.Errorf("rebuilding approval requests from the audit log: %w", err)
	} else if n > 0 {
		cfg.Logf("approvals: applied %d approval changes from the audit log that a stop had left out", n)
	}
	return s, nil
}

// append submits ev (with an EventID) to the writer and waits for its
// commit: how auditd records its own events (approval changes, decisions,
// incidents). clientID marks ev.EventID as a caller's idempotency key: a
// concurrent append of the same id then answers with the stored event
// (created false) instead of failing the batch. It waits for the commit
// even if ctx ends meanwhile, as postEvent does: the event is being stored
// either way.
func (s *Server) append(ctx context.Context, ev audit.Event, clientID bool) (appendResult, error) {
	s.w.pending.Add(1)
	req := &appendReq{ev: ev, recv: s.cfg.Now().UTC().Round(0), done: make(chan appendResult, 1), w: s.w, clientID: clientID}
	if err := s.w.submit(ctx, req); err != nil {
		s.w.pending.Add(-1)
		return appendResult{}, err
	}
	res := <-req.done
	return res, res.err
}

// Head returns the seq and hash of the last committed event.
func (s *Server) Head() (int64, string) { return s.head.get() }

// Run serves the HTTP API on ln and, when sock is not nil, the event stream
// on sock, until ctx ends or serving fails. Then it shuts down gracefully:
// it stops accepting, lets requests in flight finish (each waits for its
// commit), commits what is queued, ends the stream and removes its socket,
// and returns. The caller closes the store afterwards.
func (s *Server) Run(ctx context.Context, ln net.Listener, sock net.Listener) error {
	hs := &http.Server{
		Handler:           s.Handler(),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       time.Minute,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter(s.cfg.Logf), "", 0), // net/http says "http: " itself
	}
	hs.RegisterOnShutdown(s.ap.stopWaiting)
	errc := make(chan error, 2)
	go func() { errc <- hs.Serve(ln) }()
	if sock != nil {
		go func() { errc <- s.stream.Serve(sock) }()
	}
	bg, stopBG := context.WithCancel(context.Background())
	var bgDone sync.WaitGroup
	if s.cfg.VerifyOnStart {
		bgDone.Go(func() { s.verifyAtStart(bg) })
	}
	if !s.cfg.ReadOnly { // expiring a request is a write
		bgDone.Go(func() { s.ap.sweep(bg, s.cfg.SweepInterval) })
	}

	var err error
	select {
	case <-ctx.Done():
	case err = <-errc:
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
	}
	stopBG()
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if serr := hs.Shutdown(shutdown); serr != nil && err == nil {
		err = fmt.Errorf("stopping the HTTP server: %w", serr)
	}
	s.close(shutdown)
	bgDone.Wait()
	return err
}

// Close commits what is queued and ends the stream. For servers used
// through Handler; Run closes by itself.
func (s *Server) Close() {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	s.close(ctx)
}

func (s *Server) close(ctx context.Context) {
	s.closeOnce.Do(func() {
		s.ap.stopWaiting()
		s.w.close()
		if s.ckpt != nil {
			s.ckpt.close() // the last checkpoint, over every committed event
		}
		if s.w.follow != nil {
			s.w.follow.close()
		}
		s.stream.Shutdown(ctx)
		s.hub.Close()
	})
}

// ServeStream serves the event stream on ln until Close; for servers used
// through Handler (Run serves the stream by itself).
func (s *Server) ServeStream(ln net.Listener) error { return s.stream.Serve(ln) }

// Verify verifies the whole chain from the store with pkg/audit's Verifier,
// and the approvals table against the chain's approval events: the report
// of GET /api/verify and verify-chain.
func (s *Server) Verify(ctx context.Context) (audit.Report, error) {
	s.verifyMu.Lock()
	defer s.verifyMu.Unlock()
	v := audit.NewVerifier()
	// From the lowest possible seq: a row tampered to seq ≤ 0 must be seen.
	err := s.st.Scan(ctx, math.MinInt64, func(r audit.Record) error {
		v.Add(r)
		return nil
	})
	if err == nil {
		err = s.verifyApprovals(ctx, v)
	}
	if err != nil {
		s.m.verifications.WithLabelValues("error").Inc()
		return audit.Report{}, err
	}
	rep := v.Report()
	state := ChainVerified
	if !rep.Verified {
		state = ChainBroken
	}
	s.m.verifications.WithLabelValues(state).Inc()
	s.m.brokenLinks.Set(float64(v.BrokenCount())) // the report lists at most audit.MaxBrokenLinks
	s.chainMu.Lock()
	s.chainState = state
	s.chainMu.Unlock()
	return rep, nil
}

// verifyApprovals adds to v an approval_mismatch for every approval whose
// row in the approvals table disagrees with the chain (DESIGN §11, issue
// 13: the chain is the source of truth, the table a projection that
// approvers and gate are served from). It reads under the approvals lock,
// so no change is between its append and its put, and catchUp has put
// what a crash left out: here any lag is a mismatch (settled), such as a
// row rolled back to the state before its last change.
func (s *Server) verifyApprovals(ctx context.Context, v *audit.Verifier) error {
	s.ap.mu.Lock()
	snap, ok, err := s.st.ApprovalsSnapshot(ctx)
	s.ap.mu.Unlock()
	if err != nil || !ok {
		return err
	}
	ms, err := snap.Mismatches(true)
	if err != nil {
		return err
	}
	for _, m := range ms {
		v.AddApprovalMismatch(m.Link())
	}
	return nil
}

func (s *Server) chain() string {
	s.chainMu.Lock()
	defer s.chainMu.Unlock()
	return s.chainState
}

// verifyAtStart checks the chain once at start and logs a break: auditd
// still serves a tampered database (DESIGN §6), and says so.
func (s *Server) verifyAtStart(ctx context.Context) {
	rep, err := s.Verify(ctx)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		s.cfg.Logf("error: verifying the chain at start: %v", err)
	case rep.Verified:
		s.cfg.Logf("chain verified: %d events", rep.TotalEvents)
	default:
		first := rep.BrokenLinks[0]
		s.cfg.Logf("warning: chain broken: %d broken links in %d events, the first at seq %d (%s); GET /api/verify lists them",
			len(rep.BrokenLinks), rep.TotalEvents, first.Seq, first.Kind)
	}
}

// replay reads committed events after afterSeq for stream subscribers, a
// page at a time (no read transaction stays open while a subscriber reads).
func (s *Server) replay(ctx context.Context, afterSeq int64, fn func(stream.Item) error) error {
	for {
		recs, err := s.st.Query(ctx, store.Filter{AfterSeq: afterSeq, Limit: store.MaxLimit})
		if err != nil {
			return err
		}
		for _, rec := range recs {
			line, err := storedJSON(rec)
			if err != nil {
				return err
			}
			if err := fn(stream.Item{Seq: rec.Seq, Line: line}); err != nil {
				return err
			}
			afterSeq = rec.Seq
		}
		if len(recs) < store.MaxLimit {
			return nil
		}
	}
}

// logWriter adapts Logf for http.Server's error log.
type logWriter func(format string, args ...any)

func (f logWriter) Write(p []byte) (int, error) {
	f("%s", strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// ObserveNotification counts one approval notification attempt in
// /metrics (pkg/notify's Options.Observe).
func (s *Server) ObserveNotification(notifier, result string) {
	s.m.notifications.WithLabelValues(notifier, result).Inc()
}
