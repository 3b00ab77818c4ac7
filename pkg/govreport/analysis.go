package govreport

import (
	"cmp"
	"encoding/json"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/cli"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// The analysis is pure: it reads what auditd answered and never does I/O
// or reads a clock (the report's time arrives as now), so tests feed it
// events, statuses and requests directly.

// Bounds: govbot's memory does not grow with the audit log.
const (
	// DefaultMaxEvents is --max-events: the most events phase 3 reads.
	DefaultMaxEvents = 1_000_000
	// maxListed bounds every list in the report (incidents, unapproved
	// actions, broken links); totals count past it.
	maxListed = 100
	// maxKeys bounds the distinct names counted per breakdown (agents,
	// event types, resources, policies): names come from clients, and a
	// client inventing a new agent name per event must not grow the
	// report. Later names are counted under otherKey.
	maxKeys = 1000
	// maxDeferred bounds the destructive actions whose approval the window
	// did not show, to be looked up once the scan ends.
	maxDeferred = 1000
	// maxNoMatchFindings is how many resources get their own no_match
	// warning; the rest share one.
	maxNoMatchFindings = 10
	otherKey           = "(other)"
)

// tamperingTypes are the incident types that are alerts (DESIGN §8:
// "tampering incidents in the window"): each says the chain was altered.
// checkpoint_inconsistent (issue 19) says so of a signed checkpoint: the
// log was forked or rewritten.
var tamperingTypes = map[string]bool{
	detect.ChainTampering:         true,
	detect.HashMismatch:           true,
	detect.HeadRegressed:          true,
	detect.ApprovalMismatch:       true,
	detect.CheckpointInconsistent: true,
}

// isTampering reports whether an incident of type typ is a tampering alert.
func isTampering(typ string) bool { return tamperingTypes[typ] }

// Analyzer accumulates phases 3 and 4 over the window's events, in seq
// order, one event at a time: Add each event, answer DeferredIDs and
// CoverageQuestions with look-ups, then Finish.
type Analyzer struct {
	now      time.Time
	act      ActivityPhase
	dec      DecisionPhase
	res      map[string]*ResourceDecisions
	book     *detect.ApprovalBook
	deferred []audit.Event
	// rules counts the decisions of each rule, for the dead-rule check;
	// labels names the rules as decision traces show them (actions and
	// effect), read from the first trace of each policy only.
	rules  map[ruleKey]int64
	labels map[ruleKey]string
	traced map[ruleKey]bool // by policy (rule -1): its trace was read
	cov    coverage
}

// ruleKey names one rule of one version of the policy file: a rule index
// means nothing across versions.
type ruleKey struct {
	sha    string // the policy file's sha256; "" in records before it was recorded
	policy string
	rule   int
}

func NewAnalyzer(now time.Time, maxEvents int) *Analyzer {
	return &Analyzer{
		now: now,
		act: ActivityPhase{
			MaxEvents:     maxEvents,
			ByEventType:   map[string]int64{},
			ByAgent:       map[string]int64{},
			ByActionClass: map[string]int64{},
			IncidentTypes: map[string]int64{},
			Incidents:     []IncidentSummary{},
			Unapproved:    []UnapprovedAction{},
		},
		dec:    DecisionPhase{Resources: []ResourceDecisions{}, ByPolicy: map[string]int64{}},
		res:    map[string]*ResourceDecisions{},
		book:   detect.NewApprovalBook(100_000),
		rules:  map[ruleKey]int64{},
		labels: map[ruleKey]string{},
		traced: map[ruleKey]bool{},
		cov:    newCoverage(),
	}
}

// MaxEvents is the bound the Analyzer was made with (--max-events).
func (a *Analyzer) MaxEvents() int { return a.act.MaxEvents }

// Full reports whether the Analyzer holds MaxEvents events: the caller
// stops feeding it, and marks the report capped.
func (a *Analyzer) Full() bool { return a.act.Events >= int64(a.act.MaxEvents) }

// SetCapped marks the window as holding more events than were analysed.
func (a *Analyzer) SetCapped() { a.act.Capped = true }

// add analyses one event.
func (a *Analyzer) Add(ev audit.Event) {
	a.act.Events++
	if a.act.FirstSeq == 0 {
		a.act.FirstSeq = ev.Seq
	}
	a.act.LastSeq = ev.Seq
	count(a.act.ByEventType, cmp.Or(ev.EventType, "(none)"))
	if ev.Agent != "" {
		count(a.act.ByAgent, ev.Agent)
	}
	if ev.ActionClass != "" && !bookkeeping(ev.EventType) {
		count(a.act.ByActionClass, ev.ActionClass)
	}
	switch {
	case ev.EventType == audit.TypeIncident:
		a.incident(ev)
	case ev.EventType == audit.TypePolicyDecision:
		a.decision(ev)
	case approval.IsEventType(ev.EventType):
		a.book.Observe(ev)
		if ev.EventType == audit.TypeApprovalRequested && len(ev.PolicyDecision) > 0 {
			a.cov.decided(LinkApproval, ev.ApprovalID)
		}
	case ev.EventType == audit.TypeToolExecution:
		a.cov.execution(ev)
	}
	if detect.IsDestructiveAction(ev) {
		a.destructive(ev)
	}
}

// bookkeeping reports whether events of type t are the governance
// system's own records (a decision, an approval change, an incident),
// which mention an action class without being an action.
func bookkeeping(t string) bool {
	return t == audit.TypePolicyDecision || t == audit.TypeIncident || approval.IsEventType(t)
}

// count adds one to m[key], or to m[otherKey] once m holds maxKeys names.
func count(m map[string]int64, key string) {
	if _, ok := m[key]; !ok && len(m) >= maxKeys {
		key = otherKey
	}
	m[key]++
}

// incidentData is the data of an incident event: the IncidentInput of
// POST /api/v1/incidents. "pattern" is accepted for type, as early
// secbot drafts wrote it.
type incidentData struct {
	Type     string `json:"type"`
	Pattern  string `json:"pattern"`
	Severity string `json:"severity"`
	Source   string `json:"source"`
	Agent    string `json:"agent"`
	Message  string `json:"message"`
}

func (a *Analyzer) incident(ev audit.Event) {
	var d incidentData
	if json.Unmarshal(ev.Data, &d) != nil {
		d = incidentData{}
	}
	typ := cmp.Or(d.Type, d.Pattern, "(unknown)")
	a.act.IncidentsTotal++
	count(a.act.IncidentTypes, typ)
	a.act.Incidents = appendLatest(a.act.Incidents, IncidentSummary{
		Seq: ev.Seq, EventID: ev.EventID, Timestamp: ev.Timestamp,
		Type: typ, Severity: d.Severity, Source: d.Source, Agent: cmp.Or(d.Agent, ev.Agent),
		Message: d.Message, Tampering: isTampering(typ),
	})
}

// appendLatest appends v and keeps the latest maxListed elements.
func appendLatest[T any](s []T, v T) []T {
	s = append(s, v)
	if len(s) > maxListed {
		s = slices.Delete(s, 0, len(s)-maxListed)
	}
	return s
}

// decisionRecord is the part of govapi.DecisionRecord phase 4 reads
// (without the trace, which is most of the bytes).
type decisionRecord struct {
	ResourceType   string   `json:"resource_type"`
	ResourceName   string   `json:"resource_name"`
	Tags           []string `json:"tags"`
	Effect         string   `json:"effect"`
	EnforcedEffect string   `json:"enforced_effect"`
	PolicyName     *string  `json:"policy_name"`
	RuleIndex      *int     `json:"rule_index"`
	DefaultApplied bool     `json:"default_applied"`
	// Note is set by auditd exactly when the resource's tags came from
	// neither the request nor the infra file (auditd's tagsFor): the
	// resource is unknown to auditd, which is what tells the two no_match
	// warnings apart (issue 20) without reading the note's words.
	Note         string `json:"note"`
	PolicySHA256 string `json:"policy_sha256"`
}

// Decision outcomes of phase 4.
const (
	outcomeAllow    = "allow"
	outcomeDeny     = "deny"
	outcomeApproval = "require_approval"
	outcomeNoMatch  = "no_match"
)

// decisionOutcome is how phase 4 counts a decision: no_match when no
// policy had an outcome (default_applied: seed 003 "Phase 4 — no_match
// decisions"), otherwise the effect enforcement acted on. ok is false for
// a record that is not a decision.
func decisionOutcome(r decisionRecord) (outcome string, ok bool) {
	if r.DefaultApplied {
		return outcomeNoMatch, true
	}
	switch e := cmp.Or(r.EnforcedEffect, r.Effect); e {
	case outcomeAllow, outcomeDeny, outcomeApproval:
		return e, true
	}
	return "", false
}

func (a *Analyzer) decision(ev audit.Event) {
	a.cov.decided(LinkDecision, ev.EventID)
	a.cov.decided(LinkTrace, ev.TraceID)
	var r decisionRecord
	if err := json.Unmarshal(ev.PolicyDecision, &r); err != nil {
		a.dec.Unreadable++
		return
	}
	outcome, ok := decisionOutcome(r)
	if !ok {
		a.dec.Unreadable++
		return
	}
	if r.ResourceType == "" && ev.Resource != nil {
		r.ResourceType, r.ResourceName = ev.Resource.Type, ev.Resource.Name
	}
	key := "(unknown)"
	if r.ResourceType != "" || r.ResourceName != "" {
		key = r.ResourceType + ":" + r.ResourceName
	}
	rd, found := a.res[key]
	if !found {
		if len(a.res) >= maxKeys {
			key = otherKey
			rd = a.res[key]
		}
		if rd == nil {
			rd = &ResourceDecisions{Resource: key}
			a.res[key] = rd
		}
	}
	a.dec.Total++
	rd.Total++
	switch outcome {
	case outcomeAllow:
		a.dec.Allow++
		rd.Allow++
	case outcomeDeny:
		a.dec.Deny++
		rd.Deny++
	case outcomeApproval:
		a.dec.RequireApproval++
		rd.RequireApproval++
	case outcomeNoMatch:
		a.dec.NoMatch++
		rd.NoMatch++
		if r.Note != "" {
			a.dec.NoMatchUnknown++
			rd.NoMatchUnknown++
			rd.Note = r.Note
		} else {
			rd.Tags = append([]string{}, firstN(r.Tags, maxListedTags)...)
		}
	}
	if r.PolicyName != nil && !r.DefaultApplied {
		count(a.dec.ByPolicy, *r.PolicyName)
		if r.RuleIndex != nil {
			k := ruleKey{sha: r.PolicySHA256, policy: *r.PolicyName, rule: *r.RuleIndex}
			if _, ok := a.rules[k]; ok || len(a.rules) < maxKeys {
				a.rules[k]++
			}
			a.label(ev, k)
		}
	}
}

// ruleTraces is the part of a decision record's trace that names the
// rules of the policies that matched.
type ruleTraces struct {
	Trace struct {
		PoliciesEvaluated []struct {
			PolicyName string `json:"policy_name"`
			Rules      []struct {
				Index   int      `json:"index"`
				Actions []string `json:"actions"`
				Effect  string   `json:"effect"`
			} `json:"rules"`
		} `json:"policies_evaluated"`
	} `json:"trace"`
}

// label reads the rule labels of k's policy from ev's trace, once per
// policy and file version: the dead-rule notice then says what a dead rule
// is ("write, destructive: require_approval") and not only its index.
func (a *Analyzer) label(ev audit.Event, k ruleKey) {
	pk := ruleKey{sha: k.sha, policy: k.policy, rule: -1}
	if a.traced[pk] || len(a.traced) >= maxKeys {
		return
	}
	a.traced[pk] = true
	var t ruleTraces
	if json.Unmarshal(ev.PolicyDecision, &t) != nil {
		return
	}
	for _, p := range t.Trace.PoliciesEvaluated {
		if p.PolicyName != k.policy {
			continue
		}
		for _, r := range p.Rules {
			if r.Index >= 0 && r.Index < maxRules && r.Effect != "" {
				a.labels[ruleKey{sha: k.sha, policy: k.policy, rule: r.Index}] = strings.Join(r.Actions, ", ") + ": " + r.Effect
			}
		}
	}
}

// RuleLabels returns the labels of the rules read from decision traces
// made with the policy file with sha256 sha, by policy and rule index (""
// where no trace showed the rule).
func (a *Analyzer) RuleLabels(sha string) map[string][]string {
	out := map[string][]string{}
	for k, l := range a.labels {
		if k.sha != "" && sha != "" && k.sha != sha {
			continue
		}
		s := out[k.policy]
		for len(s) <= k.rule {
			s = append(s, "")
		}
		s[k.rule] = l
		out[k.policy] = s
	}
	return out
}

// maxListedTags bounds the tags a report shows for one resource.
const maxListedTags = 20

// destructive judges a destructive action against the approvals seen so
// far (detect.CheckDestructive); one naming an approval the window did not
// show is judged at the end, after a look-up.
func (a *Analyzer) destructive(ev audit.Event) {
	g, known := a.book.Grant(ev)
	if !known && len(a.deferred) < maxDeferred {
		a.deferred = append(a.deferred, ev)
		return
	}
	a.judge(ev, g)
}

func (a *Analyzer) judge(ev audit.Event, g detect.Grant) {
	alert, bad := a.book.Judge(ev, g, a.now)
	if !bad {
		return
	}
	u := UnapprovedAction{Seq: ev.Seq, EventID: ev.EventID, Timestamp: ev.Timestamp, Agent: ev.Agent, Message: alert.Message}
	if ev.Resource != nil && (ev.Resource.Type != "" || ev.Resource.Name != "") {
		u.Resource = ev.Resource.Type + ":" + ev.Resource.Name
	}
	if ev.Tool != nil {
		u.Command = cmp.Or(ev.Tool.RawCommand, ev.Tool.Name)
	}
	a.act.UnapprovedTotal++
	a.act.Unapproved = appendLatest(a.act.Unapproved, u)
}

// deferredIDs returns the approval ids the window did not show a state for.
func (a *Analyzer) DeferredIDs() []string {
	var ids []string
	for _, ev := range a.deferred {
		if !slices.Contains(ids, ev.ApprovalID) {
			ids = append(ids, ev.ApprovalID)
		}
	}
	return ids
}

// firstDeferred returns the seq of the first deferred action that cites
// approval id: the events before it that cite id too are outside the
// window (ApprovalBook.Learn).
func (a *Analyzer) FirstDeferred(id string) int64 {
	for _, ev := range a.deferred { // in seq order
		if ev.ApprovalID == id {
			return ev.Seq
		}
	}
	return 0
}

// Lookups are the answers to what the window could not tell, asked of
// auditd after the scan.
type Lookups struct {
	// Approvals are the approvals of DeferredIDs (an id missing is
	// unknown), and Cited the events before the window that cited them
	// (by approval id: one may have used the consumption, DESIGN §11 "one
	// use per approval", issue 13).
	Approvals map[string]approval.Request
	Cited     map[string][]audit.Event
	// Decided answers CoverageQuestions: true when a policy decision
	// outside the window stands behind the link. A question missing is
	// answered no.
	Decided map[Link]bool
}

// Finish judges the deferred actions and the executions whose decision
// the window did not show, with the look-ups, and returns phases 3 and 4.
func (a *Analyzer) Finish(l Lookups) (ActivityPhase, DecisionPhase) {
	looked, cited := l.Approvals, l.Cited
	for id, r := range looked {
		a.book.Learn(r, cited[id])
	}
	for _, ev := range a.deferred {
		g, _ := a.book.Grant(ev)
		a.judge(ev, g)
	}
	a.deferred = nil
	// Judged out of order: list them by seq again.
	slices.SortFunc(a.act.Unapproved, func(x, y UnapprovedAction) int { return cmp.Compare(x.Seq, y.Seq) })
	res := make([]ResourceDecisions, 0, len(a.res))
	for _, r := range a.res {
		res = append(res, *r)
	}
	slices.SortFunc(res, func(x, y ResourceDecisions) int { return strings.Compare(x.Resource, y.Resource) })
	a.dec.Resources = res
	a.dec.Coverage = a.cov.finish(l.Decided)
	return a.act, a.dec
}

// RuleDecisions counts the window's decisions per rule of the policy file
// with sha256 sha (records without one count for every version): the
// input of the dead-rule check.
func (a *Analyzer) RuleDecisions(sha string) map[string][]int64 {
	out := map[string][]int64{}
	for k, n := range a.rules {
		if k.sha != "" && sha != "" && k.sha != sha || k.rule < 0 || k.rule >= maxRules {
			continue
		}
		s := out[k.policy]
		for len(s) <= k.rule {
			s = append(s, 0)
		}
		s[k.rule] += n
		out[k.policy] = s
	}
	return out
}

// maxRules bounds a rule index the dead-rule check believes.
const maxRules = 10_000

// governancePhase is phase 1 from GET /api/v1/governance.
func governancePhase(st govapi.Status) GovernancePhase {
	return GovernancePhase{
		AuditdVersion: st.Version, StartedAt: st.StartedAt, Auth: st.Auth,
		PolicyLoaded: st.Policy.Loaded,
		InfraLoaded:  st.Infra.Loaded, InfraFile: st.Infra.File, InfraResources: st.Infra.Resources, InfraLoadedAt: st.Infra.LoadedAt,
		ChainHeadSeq: st.Chain.HeadSeq, ChainHeadHash: st.Chain.HeadHash, ChainState: st.Chain.State,
		PendingApprovals: st.Approvals.Pending,
	}
}

// policyPhase is phase 2, the policy overview, with each policy's share of
// the window's decisions (phase 4's by_policy) and, when the window holds
// decisions, the policies and rules that made none (byRule, from
// Analyzer.RuleDecisions). Disabled policies decide nothing by design and
// are never dead.
func policyPhase(p govapi.PolicyStatus, byPolicy map[string]int64, byRule map[string][]int64, labels map[string][]string, decisions int64) PolicyPhase {
	out := PolicyPhase{
		Loaded: p.Loaded, File: p.File, SHA256: p.SHA256, LoadedAt: p.LoadedAt,
		DefaultEffect: p.DefaultEffect, DryRun: p.DryRun,
		ReloadError: p.ReloadError, ReloadErrorAt: p.ReloadErrorAt,
		Policies: make([]PolicyOverview, 0, len(p.Policies)),
	}
	for _, s := range p.Policies {
		if s.Enabled {
			out.Enabled++
		} else {
			out.Disabled++
		}
		if s.Enforcement == "audit" {
			out.AuditOnly++
		}
		out.Rules += s.Rules
		resources := s.Resources
		if resources == nil {
			resources = []string{}
		}
		po := PolicyOverview{
			Name: s.Name, Description: s.Description, Enabled: s.Enabled, Enforcement: s.Enforcement,
			Resources: resources, Rules: s.Rules, Decisions: byPolicy[s.Name],
			RuleDecisions: make([]int64, max(s.Rules, 0)), DeadRules: []int{},
		}
		var decided int64
		for i, n := range byRule[s.Name] {
			if i < len(po.RuleDecisions) {
				po.RuleDecisions[i] = n
				decided += n
			}
		}
		if s.Enabled && decisions > 0 {
			switch {
			case po.Decisions == 0:
				po.Dead = true
				out.DeadPolicies++
			case decided > 0: // decisions by an earlier file say nothing of these rules
				for i, n := range po.RuleDecisions {
					if n == 0 {
						po.DeadRules = append(po.DeadRules, i)
					}
				}
				if l := labels[s.Name]; len(l) > 0 {
					po.RuleLabels = make([]string, s.Rules)
					copy(po.RuleLabels, l)
				}
				out.DeadRules += len(po.DeadRules)
			}
		}
		out.Policies = append(out.Policies, po)
	}
	return out
}

// approvalPhase is phase 5: the pending requests, oldest first, each
// stale when it has waited longer than staleAfter (seed 003 "Phase 5 —
// Stale approvals": 30 minutes).
func approvalPhase(reqs []approval.Request, now time.Time, staleAfter time.Duration) ApprovalPhase {
	out := ApprovalPhase{StaleAfter: FormatDuration(staleAfter), Requests: []PendingApproval{}}
	for _, r := range reqs {
		if r.Status != "" && r.Status != approval.Pending {
			continue
		}
		waited := max(now.Sub(r.CreatedAt), 0)
		p := PendingApproval{
			ID: r.ID, Resource: r.Resource.Type + ":" + r.Resource.Name, Action: r.Action,
			RequestedBy: r.RequestedBy, CreatedAt: r.CreatedAt, ExpiresAt: r.ExpiresAt,
			PendingForMS: waited.Milliseconds(), Approvals: r.Approvals(), Quorum: r.Quorum,
			Stale: waited > staleAfter,
		}
		out.Pending++
		if p.Stale {
			out.Stale++
		}
		out.Requests = append(out.Requests, p)
	}
	slices.SortStableFunc(out.Requests, func(x, y PendingApproval) int { return x.CreatedAt.Compare(y.CreatedAt) })
	return out
}

// chainPhase is phase 6 from GET /api/v1/governance/verify. It lists up to
// maxListed of the chain's links and, after them, up to maxListed approval
// mismatches, so a broken chain cannot crowd those out.
func chainPhase(r audit.Report) ChainPhase {
	out := ChainPhase{Report: r, BrokenLinksTotal: len(r.BrokenLinks)}
	var links, mismatches []audit.BrokenLink
	for _, l := range r.BrokenLinks {
		if l.Kind == audit.KindApprovalMismatch {
			mismatches = append(mismatches, l)
		} else {
			links = append(links, l)
		}
	}
	out.ApprovalMismatches = len(mismatches)
	out.BrokenLinks = append(append([]audit.BrokenLink{}, firstN(links, maxListed)...), firstN(mismatches, maxListed)...)
	return out
}

// maxNamedMismatches is how many approvals the APPROVAL_MISMATCH alert
// names; the report lists the rest.
const maxNamedMismatches = 5

// summarize is phase 7: the alerts and warnings of phases 1-6 and the
// overall status (seed 003 "Detection Logic", DESIGN §8). Alerts: a broken
// chain and tampering incidents. Warnings leave the exit code at 0
// (SEED-REQUIREMENTS H-49's deviation from the seed).
func summarize(r *Report) Summary {
	s := Summary{Alerts: []Finding{}, Warnings: []Finding{}, Notices: []Finding{}}
	alert := func(code string, phase int, format string, args ...any) {
		s.Alerts = append(s.Alerts, Finding{Code: code, Phase: phase, Message: fmt.Sprintf(format, args...)})
	}
	warn := func(code string, phase int, format string, args ...any) {
		s.Warnings = append(s.Warnings, Finding{Code: code, Phase: phase, Message: fmt.Sprintf(format, args...)})
	}
	notice := func(code string, phase int, format string, args ...any) {
		s.Notices = append(s.Notices, Finding{Code: code, Phase: phase, Message: fmt.Sprintf(format, args...)})
	}

	// Phase 2: what governs.
	p := r.Policy
	switch {
	case !p.Loaded:
		warn(CodeNoPolicy, 2, "no policy is loaded: auditd cannot evaluate decisions; start auditd with --policy FILE")
	case p.DryRun:
		warn(CodePolicyDryRun, 2, "the policy runs in dry-run mode: every decision is enforced as allow")
	}
	if p.ReloadError != "" {
		when := ""
		if p.ReloadErrorAt != nil {
			when = " at " + p.ReloadErrorAt.UTC().Format(time.RFC3339)
		}
		inForce := "the previous policy is still in force"
		if p.SHA256 != "" {
			inForce = fmt.Sprintf("the policy with sha256 %s is still in force", short(p.SHA256, 12))
		}
		warn(CodePolicyReloadError, 2, "the last policy reload failed%s: %s; %s", when, flatten(p.ReloadError, 300), inForce)
	}

	// Phase 3: incidents, unapproved destructive actions, the cap.
	a := r.Activity
	var other []string
	for _, typ := range sortedKeys(a.IncidentTypes) {
		n := a.IncidentTypes[typ]
		if !isTampering(typ) {
			other = append(other, fmt.Sprintf("%s %d", termtext.OneLine(typ), n))
			continue
		}
		msg := fmt.Sprintf("%s in the window: the audit chain was altered", cli.Plural(n, termtext.OneLine(typ)+" incident", termtext.OneLine(typ)+" incidents"))
		if last, ok := latestIncident(a.Incidents, typ); ok {
			msg += fmt.Sprintf(" (latest: seq %d at %s", last.Seq, last.Timestamp.UTC().Format(time.RFC3339))
			if last.Source != "" {
				msg += " from " + termtext.OneLine(last.Source)
			}
			if last.Message != "" {
				msg += ": " + flatten(last.Message, 200)
			}
			msg += ")"
		}
		alert(CodeTamperingIncident, 3, "%s", msg)
	}
	if len(other) > 0 {
		warn(CodeIncidents, 3, "incidents in the window: %s", strings.Join(other, ", "))
	}
	if a.UnapprovedTotal > 0 {
		msg := fmt.Sprintf("%s without a consumed approval", cli.Plural(a.UnapprovedTotal, "destructive action", "destructive actions"))
		if n := len(a.Unapproved); n > 0 {
			u := a.Unapproved[n-1]
			msg += fmt.Sprintf(" (latest: seq %d", u.Seq)
			if u.Agent != "" {
				msg += " by " + termtext.OneLine(u.Agent)
			}
			if u.Resource != "" {
				msg += " on " + termtext.OneLine(u.Resource)
			}
			if u.Command != "" {
				msg += ": " + flatten(u.Command, 100)
			}
			msg += ")"
		}
		warn(CodeUnapprovedDestructive, 3, "%s", msg)
	}
	if a.Capped {
		warn(CodeEventsCapped, 3, "the window holds more than %d events: only seq %d-%d were analysed; shorten --since or raise --max-events",
			a.MaxEvents, a.FirstSeq, a.LastSeq)
	}

	// Phase 2 again, now that phase 4 counted: the policies and rules
	// that decided nothing.
	if p.DeadPolicies+p.DeadRules > 0 {
		notice(CodeDeadRules, 2, "%s", deadRules(p))
	}

	// Phase 4: no_match decisions, one warning per resource, told apart by
	// whether auditd knew the resource (issue 20): an unknown one needs an
	// infra entry, a known one a policy.
	defaultEffect := cmp.Or(p.DefaultEffect, "deny")
	var unknown, uncovered []ResourceDecisions
	for _, rd := range r.Decisions.Resources {
		if rd.NoMatchUnknown > 0 {
			unknown = append(unknown, rd)
		}
		if rd.NoMatch > rd.NoMatchUnknown {
			uncovered = append(uncovered, rd)
		}
	}
	for i, rd := range unknown {
		if i == maxNoMatchFindings {
			var n int64
			for _, rest := range unknown[i:] {
				n += rest.NoMatchUnknown
			}
			warn(CodeNoMatchDecisions, 4, "%s on %d more resources missing from the infra file matched no policy; see phase 4",
				cli.Plural(n, "decision", "decisions"), len(unknown)-i)
			break
		}
		msg := fmt.Sprintf("%s: %s matched no policy, so the default effect (%s) applied", termtext.OneLine(rd.Resource),
			cli.Plural(rd.NoMatchUnknown, "decision", "decisions"), defaultEffect)
		if rd.Note != "" {
			msg += " (" + flatten(rd.Note, 200) + ")"
		}
		msg += "; add the resource to the infra file (auditd --infra) with the tags your policies match"
		warn(CodeNoMatchDecisions, 4, "%s", msg)
	}
	for i, rd := range uncovered {
		if i == maxNoMatchFindings {
			var n int64
			for _, rest := range uncovered[i:] {
				n += rest.NoMatch - rest.NoMatchUnknown
			}
			warn(CodeNoMatchUncovered, 4, "%s on %d more known resources matched no policy; see phase 4",
				cli.Plural(n, "decision", "decisions"), len(uncovered)-i)
			break
		}
		tags := "no tags"
		if len(rd.Tags) > 0 {
			tags = "tags " + flatten(strings.Join(rd.Tags, ", "), 200)
		}
		warn(CodeNoMatchUncovered, 4, "%s: %s matched no policy, so the default effect (%s) applied; auditd knows the resource (%s) but no policy rule decides these actions on it: add or widen a policy (its resources or its rules' actions), or see why each policy skipped it with govexplain --resource %s",
			termtext.OneLine(rd.Resource), cli.Plural(rd.NoMatch-rd.NoMatchUnknown, "decision", "decisions"), defaultEffect, tags, termtext.OneLine(rd.Resource))
	}

	// Phase 4: write and destructive executions no decision stands behind.
	// Without a policy nothing could decide them: NO_POLICY says so, and
	// the coverage stays in phase 4 without a second, louder finding.
	if cv := r.Decisions.Coverage; cv.UncoveredTotal > 0 && p.Loaded {
		alert(CodeUncoveredExecutions, 4, "%s", uncoveredMessage(cv))
	}

	// Phase 5: stale approvals.
	for _, q := range r.Approvals.Requests {
		if !q.Stale {
			continue
		}
		warn(CodeStaleApproval, 5, "approval %s (%s %s, requested by %s) has been pending for %s, over %s: check that approval notifications reach the approvers",
			termtext.OneLine(q.ID), termtext.OneLine(q.Action), termtext.OneLine(q.Resource), termtext.OneLine(q.RequestedBy),
			cli.Approx(time.Duration(q.PendingForMS)*time.Millisecond), r.Approvals.StaleAfter)
	}

	// Phase 6: the chain, and the approvals table against it (issue 13).
	c := r.Chain
	if broken := c.BrokenLinksTotal - c.ApprovalMismatches; !c.Verified && (broken > 0 || c.ApprovalMismatches == 0) {
		msg := fmt.Sprintf("the audit chain does not verify: %s in %d events", cli.Plural(int64(broken), "broken link", "broken links"), c.TotalEvents)
		if len(c.BrokenLinks) > 0 && c.BrokenLinks[0].Kind != audit.KindApprovalMismatch {
			b := c.BrokenLinks[0]
			msg += fmt.Sprintf(", first at seq %d (%s)", b.Seq, termtext.OneLine(b.Kind))
		}
		msg += "; the audit log was altered: run verify-chain --db on the auditd host and investigate"
		alert(CodeChainBroken, 6, "%s", msg)
	}
	if c.ApprovalMismatches > 0 {
		var named []string
		for _, l := range c.BrokenLinks {
			if l.Kind != audit.KindApprovalMismatch {
				continue
			}
			if len(named) == maxNamedMismatches {
				named = append(named, fmt.Sprintf("and %d more", c.ApprovalMismatches-maxNamedMismatches))
				break
			}
			named = append(named, termtext.OneLine(l.ApprovalID)+" ("+flatten(l.Detail, 120)+")")
		}
		alert(CodeApprovalMismatch, 6, "the approvals table disagrees with the audit chain for %s: %s; auditd serves the table to approvers and enforcement points: run verify-chain --db on the auditd host and investigate",
			cli.Plural(int64(c.ApprovalMismatches), "approval", "approvals"), strings.Join(named, "; "))
	}

	switch {
	case len(s.Alerts) > 0:
		s.Status, s.ExitCode = StatusAlerts, ExitAlerts
	case len(s.Warnings) > 0:
		s.Status = StatusWarnings
	default:
		s.Status = StatusHealthy
	}
	return s
}

// maxNamed bounds the names one finding lists; the report lists the rest.
const maxNamed = 10

// deadRules is the DEAD_RULES message: which policies and rules decided
// nothing, at most maxNamed of them named.
func deadRules(p PolicyPhase) string {
	var named []string
	more := 0
	name := func(s string) {
		if len(named) < maxNamed {
			named = append(named, s)
		} else {
			more++
		}
	}
	for _, po := range p.Policies {
		switch {
		case po.Dead:
			name(termtext.OneLine(po.Name) + " (no decision)")
		case len(po.DeadRules) > 0:
			name(termtext.OneLine(po.Name) + " " + po.deadRules())
		}
	}
	if more > 0 {
		named = append(named, fmt.Sprintf("and %d more", more))
	}
	var what []string
	if p.DeadPolicies > 0 {
		what = append(what, cli.Plural(int64(p.DeadPolicies), "enabled policy", "enabled policies"))
	}
	if p.DeadRules > 0 {
		what = append(what, cli.Plural(int64(p.DeadRules), "rule", "rules"))
	}
	return fmt.Sprintf("%s decided nothing in the window: %s; they may be shadowed by other policies or match nothing agents do: review them with govexplain (rules are counted from 0, as rule_index)",
		strings.Join(what, " and "), strings.Join(named, "; "))
}

// deadRules names po's dead rules: "rule 2 (write: allow (line 14))",
// "rules 1, 2".
func (po PolicyOverview) deadRules() string {
	idx := make([]string, len(po.DeadRules))
	for i, n := range po.DeadRules {
		idx[i] = strconv.Itoa(n)
		if n < len(po.RuleLabels) && po.RuleLabels[n] != "" {
			idx[i] += " (" + termtext.OneLine(po.RuleLabels[n]) + ")"
		}
	}
	word := "rules"
	if len(idx) == 1 {
		word = "rule"
	}
	return word + " " + strings.Join(idx, ", ")
}

// uncoveredMessage is the UNCOVERED_EXECUTIONS message: how many, and the
// latest few by seq.
func uncoveredMessage(cv Coverage) string {
	verb := "have"
	if cv.UncoveredTotal == 1 {
		verb = "has"
	}
	msg := fmt.Sprintf("%s of %d in the window %s no policy decision",
		cli.Plural(cv.UncoveredTotal, "write or destructive tool execution", "write or destructive tool executions"), cv.Executions, verb)
	var named []string
	for _, u := range lastN(cv.Uncovered, 5) {
		s := fmt.Sprintf("seq %d", u.Seq)
		if u.Agent != "" {
			s += " by " + termtext.OneLine(u.Agent)
		}
		if u.Resource != "" {
			s += " on " + termtext.OneLine(u.Resource)
		}
		if u.Command != "" {
			s += ": " + flatten(u.Command, 80)
		}
		named = append(named, s)
	}
	if len(named) > 0 {
		msg += " (latest: " + strings.Join(named, "; ") + ")"
	}
	return msg + "; an enforcement point ran them without asking auditd (POST /api/v1/decisions): check that every agent runs behind gate"
}

// latestIncident returns the latest listed incident of type typ.
func latestIncident(list []IncidentSummary, typ string) (IncidentSummary, bool) {
	for i := len(list) - 1; i >= 0; i-- {
		if list[i].Type == typ {
			return list[i], true
		}
	}
	return IncidentSummary{}, false
}

// sortedKeys returns m's keys by count, highest first, then by name.
func sortedKeys(m map[string]int64) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(x, y string) int {
		return cmp.Or(cmp.Compare(m[y], m[x]), strings.Compare(x, y))
	})
	return keys
}
