// Package auditd is the audit daemon: the HTTP API of DESIGN §6 over a
// store.Store, one group-commit writer that numbers and chains events, and
// the Unix-socket stream of committed events (pkg/stream).
package auditd

import (
	"crypto/rand"
	"fmt"
	"io"
	"net"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/redact"
)

// DefaultAddr is where auditd listens by default: loopback only.
const DefaultAddr = "127.0.0.1:1199"

// Config is the daemon's typed configuration (DESIGN §3: packages never read
// flags or the environment themselves).
type Config struct {
	// MaxBatch is the most events one commit holds (default 256).
	MaxBatch int
	// MaxDelay is how long the writer may hold a batch open for more events
	// when it expects them (default 2ms; see writer.collect).
	MaxDelay time.Duration
	// QueueSize bounds events waiting for the writer (default 4096);
	// beyond it, POST /api/events waits.
	QueueSize int
	// SubscriberBuffer is how many events a stream subscriber may fall
	// behind before it is dropped (default stream.DefaultBuffer).
	SubscriberBuffer int
	// Logf receives the daemon's messages (one line each, no prefix).
	// Nil discards them.
	Logf func(format string, args ...any)
	// Now is the clock (default time.Now).
	Now func() time.Time
	// Rand is the source of generated event ids (default crypto/rand).
	Rand io.Reader
	// VerifyOnStart verifies the whole chain in the background at start
	// and logs a break (DESIGN §6 "Tampered database").
	VerifyOnStart bool
	// Tokens authenticates bearer tokens (DESIGN §7 "Auth"). Nil is local
	// mode: no credentials, the user named by the X-Govkit-User header,
	// and loopback only (CheckLoopback, servertls.IsLoopbackAddr).
	Tokens Authenticator
	// ApprovalTTL is how long an approval request stays pending when the
	// request names no ttl (GOVKIT_APPROVAL_TIMEOUT; default 5m).
	ApprovalTTL time.Duration
	// ApprovalValidFor is how long an approved request may be consumed
	// after its approval (DESIGN §11; GOVKIT_APPROVAL_VALID_FOR; default
	// 15m): past it, consume answers 410 approval_stale.
	ApprovalValidFor time.Duration
	// SweepInterval is how often pending requests past their expiry are
	// expired (default 1s); reads expire them too.
	SweepInterval time.Duration
	// OnApprovalChange is called after each approval change is recorded
	// (created, voted, decided, expired), from the request's goroutine: it
	// must not block (auditd hands it to pkg/notify's dispatcher).
	OnApprovalChange func(approval.Request)
	// ReadOnly serves a database auditd may not write (opened read-only):
	// queries, verification and stream replay work; every write endpoint
	// answers 503 read_only, and /health says degraded (issue 13).
	// Pending approval requests are not expired.
	ReadOnly bool
	// Redactor removes secrets from every event before it is sealed
	// (DESIGN §11). Nil is the built-in formats (redact.New()); there is no
	// way to turn redaction off.
	Redactor *redact.Redactor
	// Checkpoints, when not nil, makes auditd sign checkpoints of its
	// Merkle tree (issue 19; checkpoints.go). Ignored when ReadOnly.
	Checkpoints *CheckpointConfig
}

// DefaultConfig returns the configuration auditd runs with.
func DefaultConfig() Config {
	return Config{MaxBatch: 256, MaxDelay: 2 * time.Millisecond, QueueSize: 4096, VerifyOnStart: true,
		ApprovalTTL: approval.DefaultTTL, ApprovalValidFor: approval.DefaultValidFor, SweepInterval: time.Second}
}

// Validate reports the first invalid field, naming it and its value.
func (c Config) Validate() error {
	switch {
	case c.MaxBatch < 0 || c.MaxBatch > 10000:
		return fmt.Errorf("auditd config: MaxBatch %d is not between 1 and 10000", c.MaxBatch)
	case c.MaxDelay < 0 || c.MaxDelay > time.Second:
		return fmt.Errorf("auditd config: MaxDelay %s is not between 0 and 1s", c.MaxDelay)
	case c.QueueSize < 0:
		return fmt.Errorf("auditd config: QueueSize %d is negative", c.QueueSize)
	case c.SubscriberBuffer < 0:
		return fmt.Errorf("auditd config: SubscriberBuffer %d is negative", c.SubscriberBuffer)
	case c.ApprovalTTL != 0 && (c.ApprovalTTL < approval.MinTTL || c.ApprovalTTL > approval.MaxTTL):
		return fmt.Errorf("auditd config: ApprovalTTL %s is not between %s and %s", c.ApprovalTTL, approval.MinTTL, approval.MaxTTL)
	case c.ApprovalValidFor != 0 && (c.ApprovalValidFor < time.Second || c.ApprovalValidFor > approval.MaxValidFor):
		return fmt.Errorf("auditd config: ApprovalValidFor %s is not between 1s and %s", c.ApprovalValidFor, approval.MaxValidFor)
	case c.SweepInterval < 0:
		return fmt.Errorf("auditd config: SweepInterval %s is negative", c.SweepInterval)
	}
	if c.Checkpoints != nil {
		return c.Checkpoints.validate()
	}
	return nil
}

func (c *Config) setDefaults() {
	d := DefaultConfig()
	if c.MaxBatch == 0 {
		c.MaxBatch = d.MaxBatch
	}
	if c.QueueSize == 0 {
		c.QueueSize = d.QueueSize
	}
	if c.ApprovalTTL == 0 {
		c.ApprovalTTL = d.ApprovalTTL
	}
	if c.ApprovalValidFor == 0 {
		c.ApprovalValidFor = d.ApprovalValidFor
	}
	if c.SweepInterval == 0 {
		c.SweepInterval = d.SweepInterval
	}
	if c.Logf == nil {
		c.Logf = func(string, ...any) {}
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Rand == nil {
		c.Rand = rand.Reader
	}
}

// CheckAddr refuses a listen address that is not HOST:PORT, or whose
// numeric port is not from 0 to 65535, so that a mistyped --addr is told as such, not as a
// question of loopback or tokens.
func CheckAddr(addr string) error {
	_, port, err := net.SplitHostPort(addr)
	if err != nil {
		return fmt.Errorf("address %q is not HOST:PORT", addr)
	}
	// A name (localhost:http) is the resolver's to judge, at bind time.
	if strings.Trim(port, "0123456789") == "" { // digits, or none
		if _, err := strconv.ParseUint(port, 10, 16); err != nil {
			return fmt.Errorf("address %q: port %q is not a number from 0 to 65535", addr, port)
		}
	}
	return nil
}

// CheckLoopback refuses an address that is not on the loopback interface:
// in local mode (no tokens file) anyone who can reach auditd can write to
// the audit log and decide approvals, so it must not be reachable from the
// network (DESIGN §7). It checks the name before binding, so that a wrong
// --addr fails at once; "localhost" passes here because only the system's
// resolver knows what it means, and the address bound must then pass
// servertls.IsLoopbackAddr (DESIGN §11 "Transport").
func CheckLoopback(addr string) error {
	if err := CheckAddr(addr); err != nil {
		return err
	}
	host, _, _ := net.SplitHostPort(addr)
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	ip := net.ParseIP(host)
	if ip == nil || !ip.IsLoopback() {
		if host == "" {
			host = "every interface"
		}
		return fmt.Errorf("address %q is not a loopback address (it listens on %s); without a tokens file auditd authenticates no one, so it listens only on loopback", addr, host)
	}
	return nil
}
