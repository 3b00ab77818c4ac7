package auditd

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strconv"
	"sync"
	"time"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/termtext"
)

// Checkpoint defaults (issue 19).
const (
	DefaultCheckpointEvery    = 1000
	DefaultCheckpointInterval = 10 * time.Second
)

// CheckpointConfig makes auditd sign checkpoints of its Merkle tree
// (issue 19): after a commit once Every events or Interval have passed
// since the last one and the log grew, and at shutdown.
type CheckpointConfig struct {
	// Signer signs the checkpoints (note.NewSigner of the key that
	// auditd key create wrote).
	Signer note.Signer
	// Origin is the checkpoints' first line; empty: Signer.Name().
	Origin string
	// Every is how many events may pass between checkpoints (default
	// 1000); Interval how long (default 10s).
	Every    int64
	Interval time.Duration
	// Log, when not nil, receives every checkpoint auditd signs
	// (checkpoint.AppendNote) and is synced before the next one: the copy
	// kept outside the database (--checkpoint-log).
	Log interface {
		Write(p []byte) (int, error)
		Sync() error
	}
}

func (c *CheckpointConfig) validate() error {
	switch {
	case c.Signer == nil:
		return errors.New("auditd config: Checkpoints without a Signer")
	case c.Every < 0:
		return fmt.Errorf("auditd config: Checkpoints.Every %d is negative", c.Every)
	case c.Interval < 0:
		return fmt.Errorf("auditd config: Checkpoints.Interval %s is negative", c.Interval)
	}
	if c.Origin != "" {
		if err := checkpoint.CheckOrigin(c.Origin); err != nil {
			return fmt.Errorf("auditd config: Checkpoints.Origin: %w", err)
		}
	}
	return nil
}

// checkpointer is the goroutine that signs checkpoints, off the writer's
// path: the writer only nudges it after a commit (a non-blocking send), and
// it reads the tree's hashes (log₂ n of them) through the store's read
// pool, signs (Ed25519, ~50 µs) and stores the note in a transaction of its
// own. Stored hashes never change once committed, so it reads the tree of
// any committed size while the writer appends.
//
// On a store several instances share (store.Elector: PostgreSQL), only the
// instance that leads signs (issue 19: one signer at a time, elected by
// an advisory lock); the others try to take the lead at every tick, and
// the first to try after the leader died signs from the latest stored
// checkpoint on. On SQLite the one process always signs.
type checkpointer struct {
	cfg    CheckpointConfig
	tree   store.Tree
	leader store.Leader // nil: this process is the only signer
	// leading: the last Lead said so (the checkpointer's goroutine only).
	leading bool
	head    *headState
	now     func() time.Time
	logf    func(string, ...any)
	nudge   chan struct{}
	stop    chan struct{}
	done    chan struct{}
	once    sync.Once
	signed  int64     // the size of the last checkpoint signed or found
	at      time.Time // when
}

func newCheckpointer(cfg CheckpointConfig, tree store.Tree, leader store.Leader, head *headState, now func() time.Time, logf func(string, ...any)) *checkpointer {
	if cfg.Origin == "" {
		cfg.Origin = cfg.Signer.Name()
	}
	if cfg.Every == 0 {
		cfg.Every = DefaultCheckpointEvery
	}
	if cfg.Interval == 0 {
		cfg.Interval = DefaultCheckpointInterval
	}
	return &checkpointer{cfg: cfg, tree: tree, leader: leader, leading: leader == nil, head: head, now: now, logf: logf,
		nudge: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
}

// start reads where the last run left off, says so when the log no longer
// contains what was signed, and starts the goroutine.
func (c *checkpointer) start(ctx context.Context) error {
	latest, ok, err := c.tree.LatestCheckpoint(ctx)
	if err != nil {
		return fmt.Errorf("reading the latest checkpoint: %w", err)
	}
	size, err := c.tree.TreeSize(ctx)
	if err != nil {
		return fmt.Errorf("reading the Merkle tree: %w", err)
	}
	c.at = c.now()
	if ok {
		c.signed = min(latest.Size, size)
		c.checkLatest(ctx, latest, size)
	}
	c.lead(ctx)
	go c.run()
	return nil
}

// leadTimeout bounds one Lead: a database that does not answer must not
// hold the checkpointer.
const leadTimeout = 10 * time.Second

// lead reports whether this instance signs now, trying to take the lead
// when it does not. Taking it over, it starts from the latest checkpoint
// the previous leader stored.
func (c *checkpointer) lead(ctx context.Context) bool {
	if c.leader == nil {
		return true
	}
	ctx, cancel := context.WithTimeout(ctx, leadTimeout)
	defer cancel()
	ok, err := c.leader.Lead(ctx)
	switch {
	case err != nil:
		if c.leading {
			c.logf("checkpoints: this instance lost the lead (%v); it signs again once it takes it back", err)
		}
		c.leading = false
		return false
	case !ok:
		if c.leading {
			c.logf("checkpoints: another instance signs them now")
		}
		c.leading = false
		return false
	case c.leading:
		return true
	}
	latest, found, err := c.tree.LatestCheckpoint(ctx)
	if err != nil {
		c.logf("error: checkpoints: reading the latest checkpoint: %v", err)
		return false // the lead is kept: the next try reads it again
	}
	if found && latest.Size > c.signed {
		c.signed, c.at = latest.Size, latest.CreatedAt
	}
	c.leading = true
	c.logf("checkpoints: this instance signs them (it holds the lead of the instances that share the database)")
	return true
}

// checkLatest logs a warning when the log no longer holds what the latest
// stored checkpoint signed: it is shorter (tail truncation) or its tree at
// that size has another root (a rewrite). verify-chain and auditor are the
// checks that count; this one tells the operator at start.
func (c *checkpointer) checkLatest(ctx context.Context, latest store.StoredCheckpoint, size int64) {
	if latest.Size > size {
		c.logf("warning: the log holds %d events, but a checkpoint of %d events was signed: events were deleted (verify-chain --checkpoint-log reports it)", size, latest.Size)
		return
	}
	n, err := note.Open(latest.Note, note.VerifierList(signerVerifier{c.cfg.Signer}))
	var text []byte
	switch {
	case err == nil:
		text = []byte(n.Text)
	default:
		var unverified *note.UnverifiedNoteError
		if !errors.As(err, &unverified) { // another key signed it: compare the root anyway
			c.logf("warning: the latest checkpoint (size %d) does not open: %v", latest.Size, err)
			return
		}
		text = []byte(unverified.Note.Text)
	}
	cp, err := checkpoint.Parse(text)
	if err != nil {
		c.logf("warning: the latest checkpoint (size %d): %v", latest.Size, err)
		return
	}
	root, err := tlog.TreeHash(cp.Size, store.HashReader(ctx, c.tree))
	if err != nil {
		c.logf("warning: checking the latest checkpoint: %v", err)
		return
	}
	if root != cp.Root {
		c.logf("warning: the log's first %d events are not the ones the checkpoint of that size signed: the log was rewritten (verify-chain --checkpoint-log reports it)", cp.Size)
	}
}

// signerVerifier lets the signer's own signature pass note.Open's lookup
// without the verifier key: only the name and hash are compared here, and
// checkLatest uses the text whether or not it verifies.
type signerVerifier struct{ s note.Signer }

func (v signerVerifier) Name() string                { return v.s.Name() }
func (v signerVerifier) KeyHash() uint32             { return v.s.KeyHash() }
func (v signerVerifier) Verify(msg, sig []byte) bool { return true }

// committed nudges the checkpointer after a commit; it never blocks.
func (c *checkpointer) committed() {
	select {
	case c.nudge <- struct{}{}:
	default:
	}
}

func (c *checkpointer) run() {
	defer close(c.done)
	tick := time.NewTicker(min(c.cfg.Interval, time.Second))
	defer tick.Stop()
	for {
		select {
		case <-c.stop:
			c.maybeSign(true, true)
			if c.leader != nil {
				c.leader.Resign() // another instance takes over at its next tick
			}
			return
		case <-c.nudge:
			c.maybeSign(false, false)
		case <-tick.C:
			c.maybeSign(false, true)
		}
	}
}

// close signs the last checkpoint (after the writer committed its last
// batch) and stops the goroutine.
func (c *checkpointer) close() {
	c.once.Do(func() { close(c.stop) })
	<-c.done
}

// maybeSign signs when due. An instance that does not lead tries to take
// the lead only at a tick (try), not at every commit.
func (c *checkpointer) maybeSign(final, try bool) {
	if !c.leading && !try {
		return
	}
	if !c.leading && !c.lead(context.Background()) {
		return
	}
	size, _ := c.head.get()
	if size <= c.signed {
		return
	}
	if !final && size-c.signed < c.cfg.Every && c.now().Sub(c.at) < c.cfg.Interval {
		return
	}
	// Still leading? The lead goes with the database session.
	if c.leader != nil && !c.lead(context.Background()) {
		return
	}
	if err := c.sign(context.Background(), size); err != nil {
		c.logf("error: signing a checkpoint of %d events: %v", size, err)
		c.at = c.now() // retried after Interval, not at every commit
	}
}

// sign signs, stores and logs the checkpoint of the first size records.
func (c *checkpointer) sign(ctx context.Context, size int64) error {
	root, err := tlog.TreeHash(size, store.HashReader(ctx, c.tree))
	if err != nil {
		return err
	}
	msg, err := checkpoint.Sign(checkpoint.Checkpoint{Origin: c.cfg.Origin, Size: size, Root: root}, c.cfg.Signer)
	if err != nil {
		return err
	}
	now := c.now()
	if err := c.tree.PutCheckpoint(ctx, store.StoredCheckpoint{Size: size, Note: msg, CreatedAt: now}); err != nil {
		return err
	}
	if c.cfg.Log != nil {
		if _, err := c.cfg.Log.Write(checkpoint.AppendNote(nil, msg)); err != nil {
			return fmt.Errorf("appending to the checkpoint log: %w", err)
		}
		if err := c.cfg.Log.Sync(); err != nil {
			return fmt.Errorf("syncing the checkpoint log: %w", err)
		}
	}
	c.signed, c.at = size, now
	return nil
}

// The API (issue 19): the latest checkpoint and proofs against the tree.

// tree is the store's Merkle tree, or a 404 for a store without one.
func (s *Server) tree() (store.Tree, error) {
	t, ok := s.st.(store.Tree)
	if !ok {
		return nil, refuse(NotFound, "", "this store keeps no Merkle tree")
	}
	return t, nil
}

// LatestCheckpoint returns the latest signed checkpoint's note, or
// NotFound when none was signed.
func (s *Server) LatestCheckpoint(ctx context.Context) (store.StoredCheckpoint, error) {
	t, err := s.tree()
	if err != nil {
		return store.StoredCheckpoint{}, err
	}
	c, ok, err := t.LatestCheckpoint(ctx)
	switch {
	case err != nil:
		return store.StoredCheckpoint{}, fmt.Errorf("reading the latest checkpoint: %w", err)
	case !ok:
		return store.StoredCheckpoint{}, refuse(NotFound, "", "no checkpoint has been signed (auditd signs them with --checkpoint-key)")
	}
	return c, nil
}

func (s *Server) getCheckpoint(r *http.Request) (reply, error) {
	if err := noQuery(r); err != nil {
		return reply{}, err
	}
	c, err := s.LatestCheckpoint(r.Context())
	if err != nil {
		return reply{}, err
	}
	return reply{status: http.StatusOK, body: c.Note, contentType: "text/plain; charset=utf-8"}, nil
}

// InclusionProof proves the event with seq is in the tree of size (0: the
// latest checkpoint's size), with that checkpoint's note when there is one
// of that size.
func (s *Server) InclusionProof(ctx context.Context, seq, size int64) (checkpoint.InclusionProof, error) {
	t, err := s.tree()
	if err != nil {
		return checkpoint.InclusionProof{}, err
	}
	treeSize, err := t.TreeSize(ctx)
	if err != nil {
		return checkpoint.InclusionProof{}, fmt.Errorf("reading the Merkle tree: %w", err)
	}
	var note []byte
	if size == 0 {
		latest, err := s.LatestCheckpoint(ctx)
		if err != nil {
			return checkpoint.InclusionProof{}, err
		}
		size, note = latest.Size, latest.Note
	}
	switch {
	case size > treeSize:
		return checkpoint.InclusionProof{}, refuse(Conflict, "", "size %d is beyond the log's %d events", size, treeSize)
	case seq > size:
		return checkpoint.InclusionProof{}, badField("seq", "%d is beyond the tree size %d", seq, size)
	}
	if note == nil {
		if c, ok, err := t.Checkpoint(ctx, size); err != nil {
			return checkpoint.InclusionProof{}, fmt.Errorf("reading the checkpoint of size %d: %w", size, err)
		} else if ok {
			note = c.Note
		}
	}
	recs, err := s.st.Query(ctx, store.Filter{AfterSeq: seq - 1, Limit: 1})
	if err != nil {
		return checkpoint.InclusionProof{}, fmt.Errorf("reading seq %d: %w", seq, err)
	}
	if len(recs) == 0 || recs[0].Seq != seq {
		return checkpoint.InclusionProof{}, refuse(NotFound, "", "no event with seq %d", seq)
	}
	p, err := checkpoint.ProveInclusion(seq, recs[0].EventHash, size, store.HashReader(ctx, t))
	if err != nil {
		return checkpoint.InclusionProof{}, err
	}
	p.Checkpoint = string(note)
	return p, nil
}

// ConsistencyProof proves the tree of size from is a prefix of the tree of
// size to.
func (s *Server) ConsistencyProof(ctx context.Context, from, to int64) (checkpoint.ConsistencyProof, error) {
	t, err := s.tree()
	if err != nil {
		return checkpoint.ConsistencyProof{}, err
	}
	treeSize, err := t.TreeSize(ctx)
	if err != nil {
		return checkpoint.ConsistencyProof{}, fmt.Errorf("reading the Merkle tree: %w", err)
	}
	switch {
	case from > to:
		return checkpoint.ConsistencyProof{}, badField("from", "%d is larger than to (%d)", from, to)
	case to > treeSize:
		return checkpoint.ConsistencyProof{}, refuse(Conflict, "", "to %d is beyond the log's %d events", to, treeSize)
	}
	return checkpoint.ProveConsistency(from, to, store.HashReader(ctx, t))
}

func (s *Server) getInclusionProof(r *http.Request) (reply, error) {
	q, err := proofQuery(r, []string{"seq"}, "seq", "size")
	if err != nil {
		return reply{}, err
	}
	p, err := s.InclusionProof(r.Context(), q["seq"], q["size"])
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, p)
}

func (s *Server) getConsistencyProof(r *http.Request) (reply, error) {
	q, err := proofQuery(r, []string{"from", "to"}, "from", "to")
	if err != nil {
		return reply{}, err
	}
	p, err := s.ConsistencyProof(r.Context(), q["from"], q["to"])
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, p)
}

// proofQuery reads a proof's integer parameters strictly: each of known at
// most once, those in required present; seq and size at least 1, from and
// to at least 0. A bad one is a 400 naming it.
func proofQuery(r *http.Request, required []string, known ...string) (map[string]int64, error) {
	v, err := query(r)
	if err != nil {
		return nil, err
	}
	if err := govapi.CheckParams(v, known...); err != nil {
		return nil, badRequest(err)
	}
	out := map[string]int64{}
	for _, name := range known {
		raw, ok := v[name]
		if !ok {
			if slices.Contains(required, name) {
				return nil, badField(name, "is required")
			}
			continue
		}
		least := int64(1)
		if name == "from" || name == "to" {
			least = 0
		}
		n, err := strconv.ParseInt(raw[0], 10, 64)
		if err != nil || n < least {
			return nil, badField(name, "must be an integer ≥ %d, not %q", least, termtext.Truncate(raw[0], 30))
		}
		out[name] = n
	}
	return out, nil
}
