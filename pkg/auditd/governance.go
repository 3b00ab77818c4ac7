package auditd

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/store"
)

// Policy is what auditd governs with (DESIGN §8): a parsed policy file and
// infra file, handed over by the command that read them (pkg/auditd reads
// no files, flags or environment; DESIGN §3). A nil Config means no policy
// is loaded: decisions and explain answer 503 then.
type Policy struct {
	Config *policy.Config
	// File and SHA256 name the policy file and the hash of the exact bytes
	// that were parsed: which version decided, for GET /api/v1/governance
	// and every recorded decision.
	File   string
	SHA256 string
	// DefaultEffect overrides the file's default_effect when set
	// (--default-effect); DryRun is the global dry-run of DESIGN §5
	// (--policy-dry-run, GOVKIT_POLICY_DRY_RUN).
	DefaultEffect policy.Effect
	DryRun        bool
	// Infra gives resources their tags (--infra, GOVKIT_INFRA_CONFIG);
	// nil when there is no infra file.
	Infra     *policy.Infra
	InfraFile string
}

// governance is one installed Policy with its compiled engine. It is
// immutable: SetPolicy swaps the pointer, so a request evaluates, notes and
// records against one consistent snapshot even while a reload happens.
type governance struct {
	Policy
	engine        *policy.Engine // nil without a policy
	defaultEffect policy.Effect  // in force: the override, else the file's, else deny
	loadedAt      time.Time
	summaries     []govapi.PolicySummary
}

// govState is the server's governance: the policy in force and the last
// failed reload.
type govState struct {
	cur       atomic.Pointer[governance]
	startedAt time.Time

	mu            sync.Mutex
	loads         int // SetPolicy calls that succeeded: after the first, each is a reload
	reloadErr     string
	reloadErrAt   time.Time
	decisionLocks keyLocks // one decision per event_id at a time (idempotency)
	sessionLocks  keyLocks // one decision per session at a time under guardrails
}

// SetPolicy installs p atomically: requests already evaluating finish with
// the policy they started with, the next ones use p. It fails, changing
// nothing, when p's engine cannot be built (an invalid DefaultEffect, or a
// Config built in code that does not validate). A success clears the last
// reload error; after the first call it counts as a reload in /metrics.
func (s *Server) SetPolicy(p Policy) error {
	e := policy.NewEngine(policy.EngineConfig{PolicyConfig: p.Config, DefaultEffect: p.DefaultEffect, DryRun: p.DryRun, Clock: s.cfg.Now})
	if err := e.Err(); err != nil {
		return err
	}
	g := &governance{Policy: p, loadedAt: s.cfg.Now().UTC()}
	if p.Config != nil {
		g.engine = e
		g.defaultEffect = policy.EffectDeny
		if p.Config.DefaultEffect != "" {
			g.defaultEffect = p.Config.DefaultEffect
		}
		if p.DefaultEffect != "" {
			g.defaultEffect = p.DefaultEffect
		}
		g.summaries = summarize(p.Config)
	}
	s.gov.mu.Lock()
	defer s.gov.mu.Unlock()
	s.gov.cur.Store(g)
	s.gov.reloadErr, s.gov.reloadErrAt = "", time.Time{}
	if s.gov.loads > 0 {
		s.m.policyReloads.WithLabelValues("success").Inc()
	}
	s.gov.loads++
	return nil
}

// registerGovernanceMetrics adds the gauges that read the policy in force:
// govbot warns when no policy is loaded (DESIGN §8), and so can an alert.
func (s *Server) registerGovernanceMetrics() {
	const ns = "govkit_auditd"
	s.m.reg.MustRegister(
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "policy_loaded",
			Help: "1 when a policy is loaded (--policy), 0 when decisions and explain answer 503.",
		}, func() float64 {
			if g := s.gov.cur.Load(); g != nil && g.engine != nil {
				return 1
			}
			return 0
		}),
		prometheus.NewGaugeFunc(prometheus.GaugeOpts{
			Namespace: ns, Name: "policy_reload_failing",
			Help: "1 when the last policy reload failed and an older policy is still in force.",
		}, func() float64 {
			s.gov.mu.Lock()
			defer s.gov.mu.Unlock()
			if s.gov.reloadErr != "" {
				return 1
			}
			return 0
		}),
	)
}

// PolicyReloadFailed records a reload that failed (a policy or infra file
// that does not load on SIGHUP): the policy in force stays, and GET
// /api/v1/governance reports the error (policy.reload_error) until a reload
// succeeds. Without it an operator who fixed a typo and sent SIGHUP would
// believe the new file governs (seed 003 "Governance Misconfiguration").
func (s *Server) PolicyReloadFailed(err error) {
	s.gov.mu.Lock()
	defer s.gov.mu.Unlock()
	s.gov.reloadErr, s.gov.reloadErrAt = err.Error(), s.cfg.Now().UTC()
	s.m.policyReloads.WithLabelValues("failure").Inc()
}

// PolicyStatus is the policy part of GET /api/v1/governance.
func (s *Server) PolicyStatus() govapi.PolicyStatus {
	g := s.gov.cur.Load()
	ps := govapi.PolicyStatus{Policies: []govapi.PolicySummary{}}
	if g != nil && g.engine != nil {
		at := g.loadedAt
		ps = govapi.PolicyStatus{
			Loaded: true, File: g.File, SHA256: g.SHA256, LoadedAt: &at,
			DefaultEffect: string(g.defaultEffect), DryRun: g.DryRun, Policies: g.summaries,
		}
	}
	s.gov.mu.Lock()
	defer s.gov.mu.Unlock()
	if s.gov.reloadErr != "" {
		at := s.gov.reloadErrAt
		ps.ReloadError, ps.ReloadErrorAt = s.gov.reloadErr, &at
	}
	return ps
}

// summarize lists cfg's policies for the status overview.
func summarize(cfg *policy.Config) []govapi.PolicySummary {
	out := make([]govapi.PolicySummary, len(cfg.Policies))
	for i, p := range cfg.Policies {
		sum := govapi.PolicySummary{
			Name: p.Name, Description: p.Description, Enabled: p.Enabled == nil || *p.Enabled,
			Enforcement: p.Enforcement, Resources: make([]string, len(p.Resources)), Rules: len(p.Rules),
		}
		if sum.Enforcement == "" {
			sum.Enforcement = "enforce"
		}
		for j, r := range p.Resources {
			res := r.Type
			if r.Name != "" {
				res += ":" + r.Name
			}
			if r.Match != nil && len(r.Match.Tags) > 0 {
				res += "[" + strings.Join(r.Match.Tags, ",") + "]"
			}
			sum.Resources[j] = res
		}
		out[i] = sum
	}
	return out
}

// errNoPolicy is the answer of decisions and explain without --policy.
const errNoPolicy = "no policy loaded: start auditd with --policy FILE"

// policyInForce returns the governance to evaluate with; without a policy,
// Unavailable no_policy.
func (s *Server) policyInForce() (*governance, error) {
	g := s.gov.cur.Load()
	if g == nil || g.engine == nil {
		return nil, refuse(Unavailable, govapi.CodeNoPolicy, "%s", errNoPolicy)
	}
	return g, nil
}

// tagsFor returns the tags to evaluate a resource with: the request's own
// when it names them (an empty list means "no tags"), else the infra
// file's. note says why a resource has no tags when the infra file could
// not give any (seed 003 "Audit Enrichment": note; "No policy matched" —
// usually the resource is missing from the infra config).
func (g *governance) tagsFor(typ, name string, given []string) (tags []string, note string) {
	if given != nil {
		return given, ""
	}
	if g.Infra == nil {
		return []string{}, fmt.Sprintf("no infra file is loaded (start auditd with --infra FILE), so resource %s:%s has no tags", typ, name)
	}
	tags, found := g.Infra.Lookup(typ, name)
	if !found {
		return []string{}, fmt.Sprintf("resource %s:%s is not in the infra file %s, so it has no tags", typ, name, g.InfraFile)
	}
	if tags == nil {
		tags = []string{}
	}
	return tags, ""
}

// evaluate decides req with g's engine at auditd's clock (never the
// caller's: a caller choosing the time could step outside a change-freeze
// schedule). post selects the blast-radius check after execution.
func (s *Server) evaluate(g *governance, req policy.Request, post bool) policy.DecisionTrace {
	req.Context.Time = s.cfg.Now()
	if post {
		return g.engine.CheckPostExecution(req)
	}
	return g.engine.Explain(req)
}

func (s *Server) governanceStatus(r *http.Request) (reply, error) {
	if err := noQuery(r); err != nil {
		return reply{}, err
	}
	st, err := s.Governance(r.Context())
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, st)
}

// Governance is what governs right now: the policy and infra files in
// force, the chain head and the pending approvals.
func (s *Server) Governance(ctx context.Context) (govapi.Status, error) {
	st := govapi.Status{
		SchemaVersion: audit.SchemaVersion, Version: build.String(), StartedAt: s.gov.startedAt,
		Auth: s.authMode(), Policy: s.PolicyStatus(),
	}
	if g := s.gov.cur.Load(); g != nil && g.Infra != nil {
		at := g.loadedAt
		st.Infra = govapi.InfraStatus{Loaded: true, File: g.InfraFile, Resources: len(g.Infra.Resources), LoadedAt: &at}
	}
	st.Chain.HeadSeq, st.Chain.HeadHash = s.head.get()
	st.Chain.State = s.chain()
	n, err := s.pendingCount(ctx)
	if err != nil {
		return govapi.Status{}, err
	}
	st.Approvals.Pending = n
	return st, nil
}

// pendingCount counts pending approval requests, expiring due ones first
// so that a request past its expiry is not counted as pending.
func (s *Server) pendingCount(ctx context.Context) (int, error) {
	f := store.ApprovalFilter{Status: approval.Pending, Limit: govapi.MaxLimit}
	n := 0
	for {
		rows, err := s.ap.list(ctx, f, 0)
		if err != nil {
			return 0, err
		}
		n += len(rows)
		if len(rows) < f.Limit {
			return n, nil
		}
		f.AfterSeq = rows[len(rows)-1].Seq
	}
}

// keyLocks serializes work per key: two retries of one decision (same
// event_id) arriving together must not both evaluate and both request an
// approval.
type keyLocks struct {
	mu sync.Mutex
	m  map[string]*keyLock
}

type keyLock struct {
	mu sync.Mutex
	n  int // holders and waiters
}

// lock locks key and returns its unlock.
func (k *keyLocks) lock(key string) func() {
	k.mu.Lock()
	if k.m == nil {
		k.m = map[string]*keyLock{}
	}
	l := k.m[key]
	if l == nil {
		l = &keyLock{}
		k.m[key] = l
	}
	l.n++
	k.mu.Unlock()
	l.mu.Lock()
	return func() {
		l.mu.Unlock()
		k.mu.Lock()
		if l.n--; l.n == 0 {
			delete(k.m, key)
		}
		k.mu.Unlock()
	}
}

// storedRef reads the place in the chain of a stored event's JSON.
func storedRef(line []byte) (govapi.EventRef, error) {
	var ref govapi.EventRef
	if err := json.Unmarshal(line, &ref); err != nil || ref.Seq <= 0 {
		return ref, errors.New("the stored event has no seq")
	}
	return ref, nil
}
