package auditd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/termtext"
)

// approvals runs the approval workflow (DESIGN §7) over the store. Every
// state change is first appended to the audit chain, through the writer
// like any event, and then put into the approvals table with that event's
// seq: the chain is the record, the table a projection that catchUp redoes
// after a crash between the two.
type approvals struct {
	s *Server

	// mu serializes state changes: read, decide, append, put. Two
	// approvers racing on one request get one decision and a consistent
	// history; approvals are few, so one lock costs nothing. On a store
	// other instances share, each change of a request also holds the
	// request's lock in the database (lock).
	mu sync.Mutex

	// changed is closed and replaced after every change: long-polls wait
	// on it.
	cmu     sync.Mutex
	changed chan struct{}

	// stop is closed at shutdown: long-polls answer at once instead of
	// holding the HTTP server's graceful stop for up to govapi.MaxWait.
	stop     chan struct{}
	stopOnce sync.Once
}

func newApprovals(s *Server) *approvals {
	return &approvals{s: s, changed: make(chan struct{}), stop: make(chan struct{})}
}

// stopWaiting ends every long-poll, now and later.
func (a *approvals) stopWaiting() { a.stopOnce.Do(func() { close(a.stop) }) }

// changes returns a channel closed at the next change.
func (a *approvals) changes() <-chan struct{} {
	a.cmu.Lock()
	defer a.cmu.Unlock()
	return a.changed
}

func (a *approvals) broadcast() {
	a.cmu.Lock()
	close(a.changed)
	a.changed = make(chan struct{})
	a.cmu.Unlock()
}

// errNotFound is an unknown approval id (404).
var errNotFound = errors.New("no such approval request")

// create records a new request by requester for the principal
// requestedFor ("" when it is the requester itself), made by caller.
func (a *approvals) create(ctx context.Context, in approval.Input, requester, requestedFor string, caller *audit.Caller) (approval.Request, error) {
	// Made as event ids are (time, then 80 random bits), with a prefix of
	// its own so that an id says what it names.
	id := "apr_" + strings.TrimPrefix(audit.NewEventID(a.s.cfg.Now(), a.s.cfg.Rand), "evt_")
	r, err := approval.New(in, id, requester, a.s.cfg.Now(), a.s.cfg.ApprovalTTL)
	if err != nil {
		return approval.Request{}, badRequest(err)
	}
	if !strings.EqualFold(requestedFor, requester) {
		r.RequestedFor = requestedFor
	}
	r.ValidFor = a.s.cfg.ApprovalValidFor.String()
	// The request's raw_command is kept in the approvals table, in every
	// approval event's data and in notifications: redact it like an
	// event's (DESIGN §11). After New, so that action_hash is still the
	// hash of the command that will run, which consume compares.
	r.RawCommand, _ = a.s.cfg.Redactor.Redact(r.RawCommand)
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := a.record(ctx, &r, requester, caller); err != nil {
		return approval.Request{}, err
	}
	return r, nil
}

// decide records by's vote on request id.
func (a *approvals) decide(ctx context.Context, id, by string, d approval.Decision, reason string, caller *audit.Caller) (approval.Request, error) {
	return a.change(ctx, id, by, caller, func(r *approval.Request, now time.Time) error {
		return r.Decide(by, d, reason, now)
	})
}

// consume records that by consumed approved request id for the action whose
// hash is actionHash (DESIGN §11): the one execution it releases.
func (a *approvals) consume(ctx context.Context, id, by string, asGateway bool, actionHash string, caller *audit.Caller) (approval.Request, error) {
	return a.change(ctx, id, by, caller, func(r *approval.Request, now time.Time) error {
		return r.Consume(by, asGateway, actionHash, now)
	})
}

// cancel records that by withdrew request id.
func (a *approvals) cancel(ctx context.Context, id, by string, asAdmin bool, caller *audit.Caller) (approval.Request, error) {
	return a.change(ctx, id, by, caller, func(r *approval.Request, now time.Time) error {
		return r.Cancel(by, asAdmin, now)
	})
}

// lock takes the lock of request id across the instances that share the
// store (store.ApprovalLocker; issue 19), when it is such a store; the
// caller holds mu, so a process waits on at most one database lock at a
// time and never holds all of its connections waiting.
func (a *approvals) lock(ctx context.Context, id string) (unlock func(), err error) {
	l, ok := a.s.st.(store.ApprovalLocker)
	if !ok {
		return func() {}, nil
	}
	return l.LockApproval(ctx, id)
}

// change applies step to request id under the lock and records the result
// as by's change: a vote, a consumption or a cancellation. Under the
// locks, the row read is the last change's, whichever instance made it:
// each change puts its row before it releases the lock.
func (a *approvals) change(ctx context.Context, id, by string, caller *audit.Caller, step func(*approval.Request, time.Time) error) (approval.Request, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	unlock, err := a.lock(ctx, id)
	if err != nil {
		return approval.Request{}, err
	}
	defer unlock()
	row, ok, err := a.s.st.GetApproval(ctx, id)
	if err != nil {
		return approval.Request{}, err
	}
	if !ok {
		return approval.Request{}, fmt.Errorf("%w %q", errNotFound, termtext.Truncate(id, 100))
	}
	r := row.Request
	now := a.s.cfg.Now()
	if r.Expire(now) {
		// Record the expiry first: the refusal below says it expired, and
		// the chain must say so too.
		if err := a.record(ctx, &r, expiryActor, auditdCaller); err != nil {
			return approval.Request{}, err
		}
	}
	if err := step(&r, now); err != nil {
		return approval.Request{}, err
	}
	if err := a.record(ctx, &r, by, caller); err != nil {
		return approval.Request{}, err
	}
	return r, nil
}

// expiryActor is the principal of approval_expired events.
const expiryActor = "auditd"

// get returns request id, expiring it first when it is due.
func (a *approvals) get(ctx context.Context, id string) (store.ApprovalRow, error) {
	row, ok, err := a.s.st.GetApproval(ctx, id)
	if err != nil {
		return store.ApprovalRow{}, err
	}
	if !ok {
		return store.ApprovalRow{}, fmt.Errorf("%w %q", errNotFound, termtext.Truncate(id, 100))
	}
	if row.Request.Due(a.s.cfg.Now()) && !a.s.cfg.ReadOnly {
		if err := a.expireDue(ctx); err != nil {
			return store.ApprovalRow{}, err
		}
		return a.get(ctx, id)
	}
	return row, nil
}

// wait returns request id once it is no longer pending, or when d has
// passed, or when ctx ends: a long-poll.
func (a *approvals) wait(ctx context.Context, id string, d time.Duration) (store.ApprovalRow, error) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	a.s.m.waiters.Inc()
	defer a.s.m.waiters.Dec()
	for {
		changed := a.changes() // before reading: a change after the read wakes us
		row, err := a.get(ctx, id)
		if err != nil || row.Request.Status != approval.Pending || d <= 0 {
			return row, err
		}
		// Wake at the expiry too, in case the sweeper is slower.
		expiry := time.NewTimer(max(row.Request.ExpiresAt.Sub(a.s.cfg.Now()), 0))
		select {
		case <-changed:
		case <-expiry.C:
		case <-timer.C:
			d = 0
		case <-a.stop:
			d = 0
		case <-ctx.Done():
			expiry.Stop()
			return row, nil
		}
		expiry.Stop()
	}
}

// list returns requests matching f, expiring due ones first; with wait and
// f.AfterSeq it holds the answer until a change after AfterSeq or wait.
func (a *approvals) list(ctx context.Context, f store.ApprovalFilter, wait time.Duration) ([]store.ApprovalRow, error) {
	timer := time.NewTimer(wait)
	defer timer.Stop()
	if wait > 0 {
		a.s.m.waiters.Inc()
		defer a.s.m.waiters.Dec()
	}
	for {
		changed := a.changes()
		if err := a.expireDue(ctx); err != nil {
			return nil, err
		}
		rows, err := a.s.st.ListApprovals(ctx, f)
		if err != nil || len(rows) > 0 || wait <= 0 {
			return rows, err
		}
		select {
		case <-changed:
		case <-timer.C:
			wait = 0
		case <-a.stop:
			wait = 0
		case <-ctx.Done():
			return rows, nil
		}
	}
}

// expireDue expires every pending request past its expiry: lazily before
// reads, and from the sweeper.
func (a *approvals) expireDue(ctx context.Context) error {
	if a.s.cfg.ReadOnly {
		return nil // an expiry is a write; the table is served as it is
	}
	now := a.s.cfg.Now()
	for {
		due, err := a.s.st.ListApprovals(ctx, store.ApprovalFilter{DueBy: now, Limit: store.MaxLimit})
		if err != nil || len(due) == 0 {
			return err
		}
		a.mu.Lock()
		for _, row := range due {
			if err := a.expire(ctx, row.Request.ID, now); err != nil {
				a.mu.Unlock()
				return err
			}
		}
		a.mu.Unlock()
		if len(due) < store.MaxLimit {
			return nil
		}
	}
}

// expire records the expiry of request id if it is still due. The caller
// holds mu.
func (a *approvals) expire(ctx context.Context, id string, now time.Time) error {
	unlock, err := a.lock(ctx, id)
	if err != nil {
		return err
	}
	defer unlock()
	// Re-read under the locks: a vote, here or in another instance, may
	// have decided it since.
	cur, ok, err := a.s.st.GetApproval(ctx, id)
	if err == nil && ok && cur.Request.Expire(now) {
		err = a.record(ctx, &cur.Request, expiryActor, auditdCaller)
	}
	return err
}

// sweep expires due requests every interval until ctx ends, so that
// expiry is recorded (and notified) even when nobody reads.
func (a *approvals) sweep(ctx context.Context, interval time.Duration) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := a.expireDue(ctx); err != nil && ctx.Err() == nil {
				a.s.cfg.Logf("error: expiring approval requests: %v", err)
			}
		}
	}
}

// record appends r's change by actor, made by caller, to the chain, waits
// for the commit, and puts r with the event's seq. The caller holds mu.
func (a *approvals) record(ctx context.Context, r *approval.Request, actor string, caller *audit.Caller) error {
	ev, err := approval.Event(r, actor)
	if err != nil {
		return err
	}
	ev.Caller = caller
	ev.EventID = audit.NewEventID(a.s.cfg.Now(), a.s.cfg.Rand)
	res, err := a.s.append(ctx, ev, false)
	if err != nil {
		return fmt.Errorf("recording approval %s in the audit log: %w", r.ID, err)
	}
	stored, err := storedRef(res.json)
	if err != nil {
		return fmt.Errorf("recording approval %s: %w", r.ID, err)
	}
	if err := a.s.st.PutApproval(ctx, *r, stored.Seq); err != nil {
		// The chain has the change; the next start redoes the put.
		return fmt.Errorf("approval %s is recorded in the audit log (seq %d) but not in the approvals table, which auditd rebuilds at its next start: %w", r.ID, stored.Seq, err)
	}
	a.s.m.approvals.WithLabelValues(string(r.Status)).Inc()
	a.broadcast()
	if a.s.cfg.OnApprovalChange != nil {
		a.s.cfg.OnApprovalChange(*r)
	}
	return nil
}

// catchUp puts the approval changes that the chain holds and the table
// does not: a crash between a commit and its put leaves them behind.
func (a *approvals) catchUp(ctx context.Context) (int, error) {
	from, err := a.s.st.ApprovalsSeq(ctx)
	if err != nil {
		return 0, err
	}
	var recs []audit.Record
	for _, t := range approval.EventTypes {
		f := store.Filter{EventType: t, AfterSeq: from, Limit: store.MaxLimit}
		for {
			page, err := a.s.st.Query(ctx, f)
			if err != nil {
				return 0, err
			}
			recs = append(recs, page...)
			if len(page) < f.Limit {
				break
			}
			f.AfterSeq = page[len(page)-1].Seq
		}
	}
	slices.SortFunc(recs, func(x, y audit.Record) int { return int(x.Seq - y.Seq) })
	for _, rec := range recs {
		if err := a.put(ctx, rec); err != nil {
			return 0, err
		}
	}
	return len(recs), nil
}

// put puts the approval change that the chain's record rec holds.
func (a *approvals) put(ctx context.Context, rec audit.Record) error {
	var ev audit.Event
	if err := json.Unmarshal(rec.Body, &ev); err != nil {
		return fmt.Errorf("approval event seq %d: %w", rec.Seq, err)
	}
	r, err := approval.FromEvent(ev)
	if err != nil {
		return err
	}
	return a.s.st.PutApproval(ctx, r, rec.Seq)
}

// followed takes the approval changes among recs, events another auditd
// instance committed to the shared store (issue 19), and wakes this
// instance's long-polls: a requester waiting here learns of a decision
// made through another instance at once, not at its timeout. The deciding
// instance puts the same rows after its commit; put never replaces a row
// from a later event, so the two agree whichever runs first, and the
// waiter does not depend on the other instance's put having happened yet.
func (a *approvals) followed(ctx context.Context, recs []audit.Record) error {
	changed := false
	for _, rec := range recs {
		if !slices.Contains(approval.EventTypes, rec.EventType) {
			continue
		}
		changed = true
		if a.s.cfg.ReadOnly {
			continue // its table is served as the writers keep it
		}
		if err := a.put(ctx, rec); err != nil {
			return err
		}
	}
	if changed {
		a.broadcast()
	}
	return nil
}
