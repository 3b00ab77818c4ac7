package readguard

import "encoding/json"

// Budget states of meta.stabilization.budget_state (seed 004 Read Budget
// Guard).
const (
	BudgetOK   = "ok"
	BudgetSoft = "soft" // at SoftRatio of a budget: previews shrink, search is advised
	BudgetHard = "hard" // a budget is spent: the next read is refused
)

// Suggested next actions (meta.stabilization.suggested_next_action).
const (
	ActionSearch        = "search"         // narrow the scope with the search tool
	ActionReadCandidate = "read_candidate" // read a ref from next_calls
	ActionReadRange     = "read_range"     // read a precision window from next_calls
)

// NextCall is a ready-to-run tool call (seed 004 next_calls).
type NextCall struct {
	Tool string         `json:"tool"`
	Args map[string]any `json:"args"`
}

// Candidate is one search result the guard issued a ref for.
type Candidate struct {
	ID   string `json:"candidate_id"`
	Path string `json:"path"`
}

// Metrics are seed 004's per-session metrics (S-09), in memory, counted
// deterministically.
type Metrics struct {
	ReadsCount      int `json:"reads_count"`
	ReadsLinesTotal int `json:"reads_lines_total"`
	ReadsCharsTotal int `json:"reads_chars_total"`
	SearchCount     int `json:"search_count"`
	// ReadAfterSearchRatio is the share of reads made after the session's
	// first search: how much of the reading search guided.
	ReadAfterSearchRatio float64 `json:"read_after_search_ratio"`
	// AvgReadSpan and MaxReadSpan are lines per read.
	AvgReadSpan          float64 `json:"avg_read_span"`
	MaxReadSpan          int     `json:"max_read_span"`
	PreviewDegradedCount int     `json:"preview_degraded_count"`
}

// Meta is meta.stabilization (seed 004 API / Tool Surface, S-20). Path is the
// path a read resolved to (a candidate ref names one); Candidates lists the
// refs a search issued, in rank order.
type Meta struct {
	BudgetState         string      `json:"budget_state"`
	SuggestedNextAction string      `json:"suggested_next_action,omitempty"`
	Warnings            []string    `json:"warnings"`
	ReasonCodes         []string    `json:"reason_codes"`
	MetricsSnapshot     Metrics     `json:"metrics_snapshot"`
	NextCalls           []NextCall  `json:"next_calls"`
	CandidateID         string      `json:"candidate_id,omitempty"`
	BundleID            string      `json:"bundle_id,omitempty"`
	Path                string      `json:"path,omitempty"`
	Candidates          []Candidate `json:"candidates,omitempty"`
}

// MarshalJSON writes the seed's arrays as [] when empty: the allow path keeps
// nil slices (no allocation) and the wire still shows warnings[],
// reason_codes[], next_calls[].
func (m Meta) MarshalJSON() ([]byte, error) {
	type plain Meta
	p := plain(m)
	if p.Warnings == nil {
		p.Warnings = []string{}
	}
	if p.ReasonCodes == nil {
		p.ReasonCodes = []string{}
	}
	if p.NextCalls == nil {
		p.NextCalls = []NextCall{}
	}
	return json.Marshal(p)
}
