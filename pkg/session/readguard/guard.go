// Package readguard is seed 004's unified read hook: read budgets, the
// relevance guard and the search → ref → read gate, decided in one place
// before and after every read so that no read bypasses them (S-19).
package readguard

import (
	"crypto/sha256"
	"encoding/hex"
	"math"
	"path"
	"strconv"
	"strings"

	"github.com/govkit/govkit/pkg/session/reasons"
	"github.com/govkit/govkit/pkg/session/response"
)

// Hints are the seed's own texts (seed 004 Failure Modes & Policies).
const (
	RefHint       = "Use search results (candidate/bundle ref) or precision read path+range."
	budgetMessage = "Read budget exceeded. Use search to narrow scope: "
	budgetHint    = "The session's read budget is spent: answer from what was read, or use search to narrow scope (search results stay available)."
	relevanceHint = "This target seems unrelated. Try "
	softHint      = "Read budget nearly spent: use search to narrow scope and read candidate refs or precision ranges."
)

// Refs a session keeps: enough for any realistic run, bounded so that a
// search loop cannot grow the state without limit. The oldest go first.
const (
	maxCandidates = 1024
	maxBundles    = 128
	maxWindows    = 5 // windowed next_calls offered for one over-long range
	maxAlts       = 3 // alternatives named by a relevance warning
)

// Read is one read call as the guard sees it: a path and optional precision
// range (lines inclusive), or a candidate/bundle ref (DESIGN §13).
type Read struct {
	Tool               string
	Path               string
	StartLine, EndLine int
	CandidateID        string
	BundleID           string
}

// Guard holds one session's read state. It is not safe for concurrent use:
// the session reducer owns it.
type Guard struct {
	cfg         Config
	refRequired bool

	m                Metrics
	readsAfterSearch int

	searched             bool
	searchTool, readTool string
	lastQuery            string
	top                  []Candidate // the latest search's top-K, rank order

	candidates map[string]string // candidate id → path
	candOrder  []string
	bundles    map[string][]string // bundle id → its paths
	bundleOrd  []string
}

// New starts a session's guard. refRequired is true when the session
// declares a search tool: only then does the ref gate apply (DESIGN §13). An
// invalid cfg is the caller's to reject with cfg.Validate; New does not
// repair it.
func New(cfg Config, refRequired bool) *Guard {
	return &Guard{
		cfg:         cfg,
		refRequired: refRequired,
		candidates:  make(map[string]string),
		bundles:     make(map[string][]string),
	}
}

// Metrics is a snapshot of the session's metrics.
func (g *Guard) Metrics() Metrics { return g.m }

// BudgetState is ok, soft or hard: soft at SoftRatio of any budget, hard
// once one is reached.
func (g *Guard) BudgetState() string {
	c := g.cfg
	if g.m.ReadsCount >= c.MaxReads || g.m.ReadsLinesTotal >= c.MaxTotalLines {
		return BudgetHard
	}
	if float64(g.m.ReadsCount) >= c.SoftRatio*float64(c.MaxReads) ||
		float64(g.m.ReadsLinesTotal) >= c.SoftRatio*float64(c.MaxTotalLines) {
		return BudgetSoft
	}
	return BudgetOK
}

// PreviewLimits are the lines and chars a read's preview may carry now:
// MaxSingleReadLines and MaxPreviewChars, halved once the budget is soft
// (seed 004: "SOFT_LIMIT: reduce payload").
func (g *Guard) PreviewLimits() (lines, chars int) {
	lines, chars = g.cfg.MaxSingleReadLines, g.cfg.MaxPreviewChars
	if g.BudgetState() != BudgetOK {
		lines, chars = max(lines/2, 1), max(chars/2, 1)
	}
	return lines, chars
}

// base is the meta every hook returns: budget state and metrics, with the
// soft-limit code and hint while the budget is soft.
func (g *Guard) base() Meta {
	m := Meta{BudgetState: g.BudgetState(), MetricsSnapshot: g.m}
	if m.BudgetState == BudgetSoft {
		m.ReasonCodes = append(m.ReasonCodes, response.BudgetSoftLimit)
		m.Warnings = append(m.Warnings, softHint)
		m.SuggestedNextAction = ActionSearch
	}
	return m
}

// CheckRead runs before a read. In order: the hard budget (BUDGET_EXCEEDED
// with BUDGET_HARD_LIMIT, whatever the mode: a spent budget is not part of
// the ref pipeline's enforce/warn switch); the ref gate (SEARCH_FIRST_REQUIRED,
// SEARCH_REF_REQUIRED, CANDIDATE_REF_REQUIRED, READ_RANGE_EXCEEDED) with its
// exceptions, a valid ref and a precision read of at most MaxRangeLines; the
// relevance guard, which only ever warns. A non-nil response refuses the read.
func (g *Guard) CheckRead(r Read) (Meta, *response.ToolResponse) {
	meta := g.base()
	if meta.BudgetState == BudgetHard && g.cfg.Budget == ModeWarn {
		meta.ReasonCodes = append(meta.ReasonCodes, response.BudgetHardLimit)
		meta.Warnings = append(meta.Warnings, budgetMessage+g.budgetUse()+" (a soft limit here: the read runs).")
	} else if meta.BudgetState == BudgetHard {
		meta.ReasonCodes = append(meta.ReasonCodes, response.BudgetHardLimit)
		meta.SuggestedNextAction = ActionSearch
		resp := response.Blocked(response.BudgetExceeded, budgetMessage+g.budgetUse()+".", map[string]any{
			"recovery_hint": budgetHint,
			"next_calls":    []NextCall{},
			"reason_codes":  []string{response.BudgetHardLimit},
		})
		return meta, &resp
	}

	p := cleanPath(r.Path)
	refGiven := r.CandidateID != "" || r.BundleID != ""
	refOK, mismatch := false, ""
	switch {
	case r.CandidateID != "":
		if cp, ok := g.candidates[r.CandidateID]; ok {
			if p != "" && p != cp {
				mismatch = cp
			} else {
				p, refOK = cp, true
			}
			meta.CandidateID = r.CandidateID
		}
	case r.BundleID != "":
		if paths, ok := g.bundles[r.BundleID]; ok {
			if p != "" && !contains(paths, p) {
				mismatch = strings.Join(paths, ", ")
			} else {
				refOK = true
			}
			meta.BundleID = r.BundleID
		}
	}
	meta.Path = p

	if g.refRequired && g.cfg.Mode != ModeOff {
		precision := r.Path != "" && r.StartLine > 0 && r.EndLine >= r.StartLine
		span := r.EndLine - r.StartLine + 1
		code, long := "", false
		switch {
		case refOK:
		case refGiven && !g.searched:
			code = response.SearchFirstRequired
		case refGiven:
			code = response.CandidateRefRequired
		case precision && span <= g.cfg.MaxRangeLines:
		case !g.searched:
			code, long = response.SearchFirstRequired, precision
		default:
			code, long = response.SearchRefRequired, precision
		}
		if code != "" {
			resp := g.refBlock(r, p, code, long, mismatch)
			if g.cfg.Mode == ModeEnforce {
				d := resp.Error.Details
				meta.ReasonCodes = append(meta.ReasonCodes, d["reason_codes"].([]string)...)
				meta.NextCalls = d["next_calls"].([]NextCall)
				meta.SuggestedNextAction = suggestion(meta.NextCalls)
				return meta, &resp
			}
			// warn: the same codes and calls, as warnings.
			d := resp.Error.Details
			meta.ReasonCodes = append(meta.ReasonCodes, d["reason_codes"].([]string)...)
			meta.Warnings = append(meta.Warnings, resp.Error.Message)
			meta.NextCalls = append(meta.NextCalls, d["next_calls"].([]NextCall)...)
			meta.SuggestedNextAction = suggestion(meta.NextCalls)
		}
	}

	g.relevance(r, p, &meta)
	return meta, nil
}

// relevance is the seed's wrong-target guard: a read outside the latest
// search's top-K gets LOW_RELEVANCE_OUTSIDE_TOPK with alternatives, never a
// refusal. Excluded trees are not judged (seed 004 3) Relevance Guard).
func (g *Guard) relevance(r Read, p string, meta *Meta) {
	if !g.searched || len(g.top) == 0 || p == "" || excluded(p) {
		return
	}
	for _, c := range g.top {
		if c.Path == p {
			return
		}
	}
	n := min(len(g.top), maxAlts)
	names := make([]string, n)
	for i := range n {
		names[i] = g.top[i].Path
	}
	meta.ReasonCodes = append(meta.ReasonCodes, response.LowRelevanceOutsideTop)
	meta.Warnings = append(meta.Warnings, relevanceHint+strings.Join(names, ", ")+".")
	meta.NextCalls = append(meta.NextCalls, g.candidateCalls(g.tool(r), n)...)
	if meta.SuggestedNextAction == "" {
		meta.SuggestedNextAction = ActionReadCandidate
	}
}

// refBlock builds the ref gate's refusal with ready-to-run next_calls: the
// candidate ref of the read's path when the latest search ranked it, then
// precision windows of the path (S-18), else the latest search's candidates.
func (g *Guard) refBlock(r Read, p, code string, long bool, mismatch string) response.ToolResponse {
	tool := g.tool(r)
	codes := []string{code}
	var msg string
	switch {
	case mismatch != "":
		msg = "Ref " + r.CandidateID + r.BundleID + " names " + mismatch + ", not " + p + ". "
	case code == response.CandidateRefRequired || (code == response.SearchFirstRequired && (r.CandidateID != "" || r.BundleID != "")):
		msg = "Unknown ref " + r.CandidateID + r.BundleID + ": it was not issued by a search in this session. "
	case long:
		codes = append(codes, reasons.ReadRangeExceeded)
		msg = "Precision read of " + strconv.Itoa(r.EndLine-r.StartLine+1) + " lines exceeds max_range_lines " +
			strconv.Itoa(g.cfg.MaxRangeLines) + " (lines inclusive). "
	case code == response.SearchFirstRequired:
		msg = "Search first: no search has run in this session. "
	default:
		msg = "This read has no ref. "
	}
	msg += RefHint

	var calls []NextCall
	if p != "" && mismatch == "" {
		for _, c := range g.top {
			if c.Path == p {
				calls = append(calls, NextCall{Tool: tool, Args: map[string]any{"candidate_id": c.ID}})
				break
			}
		}
		start, end := 1, g.cfg.MaxRangeLines
		if long {
			start, end = r.StartLine, r.EndLine
		} else if r.StartLine > 0 {
			start, end = r.StartLine, r.StartLine+g.cfg.MaxRangeLines-1
		}
		calls = append(calls, windows(tool, p, start, end, g.cfg.MaxRangeLines)...)
	}
	if len(calls) == 0 {
		calls = g.candidateCalls(tool, len(g.top))
	}
	if calls == nil {
		calls = []NextCall{}
	}
	return response.Blocked(code, msg, map[string]any{
		"recovery_hint": RefHint,
		"next_calls":    calls,
		"reason_codes":  codes,
	})
}

// OnReadResult runs after a successful read of lines lines and chars
// characters: it counts the read (S-09), marks a preview over the current
// limits PREVIEW_DEGRADED, and reports the budget state; once a budget is
// reached the next CheckRead refuses.
func (g *Guard) OnReadResult(r Read, lines, chars int) Meta {
	lines, chars = max(lines, 0), max(chars, 0)
	limLines, limChars := g.PreviewLimits()
	m := &g.m
	m.ReadsCount++
	m.ReadsLinesTotal += lines
	m.ReadsCharsTotal += chars
	if g.searched {
		g.readsAfterSearch++
	}
	m.MaxReadSpan = max(m.MaxReadSpan, lines)
	degraded := lines > limLines || chars > limChars
	if degraded {
		m.PreviewDegradedCount++
	}
	m.ReadAfterSearchRatio = ratio(g.readsAfterSearch, m.ReadsCount)
	m.AvgReadSpan = ratio(m.ReadsLinesTotal, m.ReadsCount)

	meta := g.base()
	p := cleanPath(r.Path)
	if cp, ok := g.candidates[r.CandidateID]; ok && p == "" {
		p = cp
	}
	meta.Path, meta.CandidateID, meta.BundleID = p, r.CandidateID, r.BundleID
	if degraded {
		meta.ReasonCodes = append(meta.ReasonCodes, response.PreviewDegraded)
		meta.Warnings = append(meta.Warnings, "Preview degraded: the read returned "+strconv.Itoa(lines)+" lines, "+
			strconv.Itoa(chars)+" chars; the preview carries at most "+strconv.Itoa(limLines)+" lines, "+
			strconv.Itoa(limChars)+" chars. Read a precision range (path+start_line+end_line) or narrow with search.")
		if p != "" {
			start := max(r.StartLine, 1)
			meta.NextCalls = append(meta.NextCalls, windows(g.tool(r), p, start, start+g.cfg.MaxRangeLines-1, g.cfg.MaxRangeLines)...)
		}
		if meta.SuggestedNextAction == "" {
			meta.SuggestedNextAction = ActionReadRange
		}
	}
	if meta.BudgetState == BudgetHard && g.cfg.Budget == ModeWarn {
		meta.ReasonCodes = append(meta.ReasonCodes, response.BudgetHardLimit)
		meta.Warnings = append(meta.Warnings, budgetMessage+g.budgetUse()+" (a soft limit here: the read runs).")
	} else if meta.BudgetState == BudgetHard {
		meta.ReasonCodes = append(meta.ReasonCodes, response.BudgetHardLimit)
		meta.Warnings = append(meta.Warnings, "Read budget reached ("+g.budgetUse()+"): further reads will be refused. Use search to narrow scope.")
		meta.SuggestedNextAction = ActionSearch
	}
	return meta
}

// OnSearchResult is the unified search hook: it stores the query and top-K
// paths as the relevance baseline (excluded trees and duplicates dropped),
// issues a stable candidate id per path and a bundle id for the set, and
// returns a ready-to-run read call per candidate (S-15).
func (g *Guard) OnSearchResult(searchTool, readTool, query string, paths []string) Meta {
	g.m.SearchCount++
	g.searched = true
	g.searchTool, g.readTool, g.lastQuery = searchTool, readTool, query

	top := make([]Candidate, 0, min(len(paths), g.cfg.TopK))
	skipped := 0
	for _, raw := range paths {
		if len(top) == g.cfg.TopK {
			break
		}
		p := cleanPath(raw)
		if p == "" || excluded(p) {
			skipped++
			continue
		}
		dup := false
		for _, c := range top {
			dup = dup || c.Path == p
		}
		if !dup {
			top = append(top, Candidate{ID: CandidateID(query, p), Path: p})
		}
	}
	g.top = top
	for _, c := range top {
		g.addCandidate(c)
	}

	meta := g.base()
	meta.Candidates = top
	if len(top) == 0 {
		meta.Warnings = append(meta.Warnings, "The search returned no readable paths (vendor/, node_modules/, .git/ and dist/ are excluded). Refine the query.")
		meta.SuggestedNextAction = ActionSearch
		return meta
	}
	bundle := make([]string, len(top))
	for i, c := range top {
		bundle[i] = c.Path
	}
	meta.BundleID = BundleID(query, bundle)
	g.addBundle(meta.BundleID, bundle)
	meta.CandidateID = top[0].ID
	meta.NextCalls = g.candidateCalls(readTool, len(top))
	if meta.SuggestedNextAction == "" {
		meta.SuggestedNextAction = ActionReadCandidate
	}
	if skipped > 0 {
		meta.Warnings = append(meta.Warnings, "Left out "+strconv.Itoa(skipped)+" of the search's paths: under vendor/, node_modules/, .git/ or dist/.")
	}
	return meta
}

// CandidateID is the stable ref of path in the results of query: "cand_" and
// the first 12 hex digits of SHA-256(query NUL path) (S-15).
func CandidateID(query, path string) string {
	h := sha256.New()
	h.Write([]byte(query))
	h.Write([]byte{0})
	h.Write([]byte(path))
	return "cand_" + hex.EncodeToString(h.Sum(nil))[:12]
}

// BundleID is the stable ref of a search's ordered top-K paths: "bndl_" and
// 12 hex digits of SHA-256(query NUL path1 NUL path2 …).
func BundleID(query string, paths []string) string {
	h := sha256.New()
	h.Write([]byte(query))
	for _, p := range paths {
		h.Write([]byte{0})
		h.Write([]byte(p))
	}
	return "bndl_" + hex.EncodeToString(h.Sum(nil))[:12]
}

func (g *Guard) addCandidate(c Candidate) {
	if _, ok := g.candidates[c.ID]; ok {
		return
	}
	if len(g.candOrder) == maxCandidates {
		delete(g.candidates, g.candOrder[0])
		g.candOrder = g.candOrder[1:]
	}
	g.candidates[c.ID] = c.Path
	g.candOrder = append(g.candOrder, c.ID)
}

func (g *Guard) addBundle(id string, paths []string) {
	if _, ok := g.bundles[id]; ok {
		return
	}
	if len(g.bundleOrd) == maxBundles {
		delete(g.bundles, g.bundleOrd[0])
		g.bundleOrd = g.bundleOrd[1:]
	}
	g.bundles[id] = paths
	g.bundleOrd = append(g.bundleOrd, id)
}

// candidateCalls: a read call per candidate of the latest search, first n.
func (g *Guard) candidateCalls(tool string, n int) []NextCall {
	if n == 0 {
		return nil
	}
	calls := make([]NextCall, n)
	for i := range n {
		calls[i] = NextCall{Tool: tool, Args: map[string]any{"candidate_id": g.top[i].ID}}
	}
	return calls
}

// windows are precision reads of path covering start..end, MaxRangeLines
// each, at most maxWindows of them.
func windows(tool, p string, start, end, size int) []NextCall {
	var calls []NextCall
	for s := start; s <= end && len(calls) < maxWindows; s += size {
		calls = append(calls, NextCall{Tool: tool, Args: map[string]any{"path": p, "start_line": s, "end_line": min(s+size-1, end)}})
	}
	return calls
}

func (g *Guard) tool(r Read) string {
	switch {
	case r.Tool != "":
		return r.Tool
	case g.readTool != "":
		return g.readTool
	}
	return "read"
}

func (g *Guard) budgetUse() string {
	return strconv.Itoa(g.m.ReadsCount) + "/" + strconv.Itoa(g.cfg.MaxReads) + " reads, " +
		strconv.Itoa(g.m.ReadsLinesTotal) + "/" + strconv.Itoa(g.cfg.MaxTotalLines) + " lines used"
}

func suggestion(calls []NextCall) string {
	if len(calls) == 0 {
		return ActionSearch
	}
	if _, ok := calls[0].Args["candidate_id"]; ok {
		return ActionReadCandidate
	}
	return ActionReadRange
}

// ratio rounds to 4 decimals so that metrics read the same everywhere.
func ratio(a, b int) float64 {
	if b == 0 {
		return 0
	}
	return math.Round(float64(a)/float64(b)*1e4) / 1e4
}

// cleanPath normalizes a read or result path ("./a//b" → "a/b"); path.Clean
// returns a clean path without allocating.
func cleanPath(p string) string {
	if p == "" {
		return ""
	}
	return path.Clean(p)
}

// excludedDirs are seed 004's exclusion policy: never search targets, never
// judged for relevance.
var excludedDirs = [...]struct{ name, prefix, infix, suffix string }{
	{"vendor", "vendor/", "/vendor/", "/vendor"},
	{"node_modules", "node_modules/", "/node_modules/", "/node_modules"},
	{".git", ".git/", "/.git/", "/.git"},
	{"dist", "dist/", "/dist/", "/dist"},
}

func excluded(p string) bool {
	for _, d := range excludedDirs {
		if p == d.name || strings.HasPrefix(p, d.prefix) || strings.Contains(p, d.infix) || strings.HasSuffix(p, d.suffix) {
			return true
		}
	}
	return false
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}
