// Package reasons is the reason registry: every session reason code with its
// description, severity and recommended next_calls, where the code's meaning
// (severity class, blocking) is fixed in Go and the registry file only
// describes it (seed 004 Reason Registry Model).
package reasons

import (
	"bytes"
	_ "embed"
	"encoding/json"
	"fmt"
	"sort"
	"strings"
	"sync"

	"github.com/govkit/govkit/pkg/session/response"
)

// ReadRangeExceeded is govkit's range variant of the seed 004 enum (the seed
// allows "strict/session/range variants"): a precision read longer than
// max_range_lines, refused with windowed next_calls.
const ReadRangeExceeded = "READ_RANGE_EXCEEDED"

// Severities. A registry file may give an extension reason info, warning or
// error; block belongs to the codes the Go table makes blocking.
const (
	SeverityInfo    = "info"
	SeverityWarning = "warning"
	SeverityError   = "error"
	SeverityBlock   = "block"
)

// Reason is one registry entry. Code, Severity and Blocking of a core code
// come from Go; Description and NextCalls from the registry file.
type Reason struct {
	Code        string     `json:"code"`
	Description string     `json:"description"`
	Severity    string     `json:"severity"`
	Blocking    bool       `json:"-"`
	NextCalls   []Template `json:"next_calls,omitempty"`
}

// Core reports whether the code's semantics are defined in Go (the seed's
// "code enum is authoritative"), as opposed to an extension from a file.
func (r Reason) Core() bool { _, ok := core[r.Code]; return ok }

// semantics is what Go decides about a code and no file may change.
type semantics struct {
	severity string
	blocking bool
	// reasonOnly codes appear in reason_codes, never as a response's
	// error.code: BUDGET_HARD_LIMIT rides on BUDGET_EXCEEDED, READ_RANGE_EXCEEDED
	// on a ref-gate refusal.
	reasonOnly bool
}

// core is the authoritative code table (seed 004 "Code enum is authoritative
// for typing/tests/policy"): the seed 004 core enum, BUDGET_EXCEEDED and the
// range variant, and seed 000's envelope codes shared through
// pkg/session/response. Policy/validation refusals block; NOT_FOUND and
// EXECUTION_FAILED are runtime failures (error, not a block: seed 000 §3).
var core = map[string]semantics{
	response.SearchFirstRequired:    {SeverityBlock, true, false},
	response.SearchRefRequired:      {SeverityBlock, true, false},
	response.CandidateRefRequired:   {SeverityBlock, true, false},
	response.BudgetSoftLimit:        {SeverityWarning, false, true},
	response.BudgetHardLimit:        {SeverityBlock, true, true},
	response.LowRelevanceOutsideTop: {SeverityWarning, false, true},
	response.PreviewDegraded:        {SeverityWarning, false, true},
	response.BudgetExceeded:         {SeverityBlock, true, false},
	ReadRangeExceeded:               {SeverityBlock, true, true},

	response.StrictResolution: {SeverityBlock, true, false},
	response.FSMBlocked:       {SeverityBlock, true, false},
	response.RoutingMismatch:  {SeverityBlock, true, false},
	response.NotFound:         {SeverityError, false, false},
	response.ActionNotAllowed: {SeverityBlock, true, false},
	response.PolicyBlocked:    {SeverityBlock, true, false},
	response.ApprovalRequired: {SeverityBlock, true, false},
	response.InvalidInput:     {SeverityBlock, true, false},
	response.ExecutionFailed:  {SeverityError, false, false},
	response.PhantomExecution: {SeverityBlock, true, false},
	response.AgentBusy:        {SeverityBlock, true, false},
}

// CoreCodes lists the Go-defined codes, sorted.
func CoreCodes() []string {
	codes := make([]string, 0, len(core))
	for c := range core {
		codes = append(codes, c)
	}
	sort.Strings(codes)
	return codes
}

// Registry is a parsed reason registry: every core code plus any extension
// codes. It is immutable once built.
type Registry struct {
	byCode map[string]Reason
	codes  []string // sorted
}

// Lookup returns the reason for code.
func (r *Registry) Lookup(code string) (Reason, bool) {
	re, ok := r.byCode[code]
	return re, ok
}

// Codes returns every code in the registry, sorted.
func (r *Registry) Codes() []string { return append([]string(nil), r.codes...) }

//go:embed reason_registry.json
var embedded []byte

var (
	defaultOnce sync.Once
	defaultReg  *Registry
)

// Default is the embedded reason_registry.json. It describes every core code;
// a test keeps it complete.
func Default() *Registry {
	defaultOnce.Do(func() {
		reg, err := parse(embedded, nil)
		if err != nil {
			panic("reasons: embedded reason_registry.json: " + err.Error())
		}
		defaultReg = reg
	})
	return defaultReg
}

// MaxFileSize bounds a registry file (DESIGN §3: bounded reads).
const MaxFileSize = 1 << 20

// file is the registry file format: {"reasons":[…]}.
type file struct {
	Reasons []entry `json:"reasons"`
}

type entry struct {
	Code        string     `json:"code"`
	Description string     `json:"description"`
	Severity    string     `json:"severity"`
	NextCalls   []Template `json:"next_calls"`
	// Blocking is decoded only to refuse it with a clear error: whether a
	// code blocks is code-level semantics (seed 004: the registry "must not
	// override code-level semantics").
	Blocking *bool `json:"blocking"`
}

// Parse reads a registry file over the embedded one: an entry for a core
// code replaces its description and next_calls (its severity, if given, must
// be the code's own); an entry for a new code adds an extension reason, which
// is never blocking. Errors name the entry.
func Parse(data []byte) (*Registry, error) { return parse(data, Default()) }

func parse(data []byte, base *Registry) (*Registry, error) {
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("reason registry is larger than %d bytes", MaxFileSize)
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.DisallowUnknownFields()
	var f file
	if err := dec.Decode(&f); err != nil {
		return nil, fmt.Errorf("reason registry: %w", err)
	}
	if dec.More() {
		return nil, fmt.Errorf("reason registry: trailing data after the object")
	}
	reg := &Registry{byCode: make(map[string]Reason, len(core)+len(f.Reasons))}
	if base != nil {
		for c, re := range base.byCode {
			reg.byCode[c] = re
		}
	}
	seen := make(map[string]bool, len(f.Reasons))
	for i, e := range f.Reasons {
		re, err := e.reason()
		if err != nil {
			return nil, fmt.Errorf("reasons[%d]: %w", i, err)
		}
		if seen[re.Code] {
			return nil, fmt.Errorf("reasons[%d]: %s: duplicate code", i, re.Code)
		}
		seen[re.Code] = true
		reg.byCode[re.Code] = re
	}
	for c := range core {
		if _, ok := reg.byCode[c]; !ok {
			return nil, fmt.Errorf("reason registry: core code %s is not described", c)
		}
	}
	reg.codes = make([]string, 0, len(reg.byCode))
	for c := range reg.byCode {
		reg.codes = append(reg.codes, c)
	}
	sort.Strings(reg.codes)
	return reg, nil
}

func (e entry) reason() (Reason, error) {
	if !validCode(e.Code) {
		return Reason{}, fmt.Errorf("code %q is not UPPER_SNAKE", e.Code)
	}
	if e.Blocking != nil {
		return Reason{}, fmt.Errorf("%s: blocking is decided in code, not in the registry", e.Code)
	}
	if strings.TrimSpace(e.Description) == "" {
		return Reason{}, fmt.Errorf("%s: description is empty", e.Code)
	}
	re := Reason{Code: e.Code, Description: e.Description, Severity: e.Severity, NextCalls: e.NextCalls}
	if sem, ok := core[e.Code]; ok {
		if re.Severity == "" {
			re.Severity = sem.severity
		}
		if re.Severity != sem.severity {
			return Reason{}, fmt.Errorf("%s: severity %q conflicts with the code's own %q", e.Code, e.Severity, sem.severity)
		}
		re.Blocking = sem.blocking
	} else {
		switch re.Severity {
		case SeverityInfo, SeverityWarning, SeverityError:
		case SeverityBlock:
			return Reason{}, fmt.Errorf("%s: an extension reason cannot block (severity %q)", e.Code, re.Severity)
		default:
			return Reason{}, fmt.Errorf("%s: severity %q is not info, warning or error", e.Code, e.Severity)
		}
	}
	if len(re.NextCalls) == 0 {
		re.NextCalls = nil // one spelling of "none", so a registry round-trips
	}
	for j, t := range re.NextCalls {
		if err := t.validate(); err != nil {
			return Reason{}, fmt.Errorf("%s: next_calls[%d]: %w", e.Code, j, err)
		}
		if len(t.Args) == 0 {
			re.NextCalls[j].Args = nil
		}
	}
	return re, nil
}

// validCode: UPPER_SNAKE, as every session code is (DESIGN §3).
func validCode(s string) bool {
	if s == "" || len(s) > 64 || s[0] < 'A' || s[0] > 'Z' {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		if !(c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' || c == '_') {
			return false
		}
	}
	return true
}

// MarshalJSON writes the registry in its file format, codes sorted, so that
// Parse(Marshal(r)) gives r back.
func (r *Registry) MarshalJSON() ([]byte, error) {
	f := file{Reasons: make([]entry, 0, len(r.codes))}
	for _, c := range r.codes {
		re := r.byCode[c]
		f.Reasons = append(f.Reasons, entry{Code: re.Code, Description: re.Description, Severity: re.Severity, NextCalls: re.NextCalls})
	}
	return json.Marshal(f)
}
