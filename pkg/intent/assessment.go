package intent

// assessment accumulates findings; parts of a command combine worst-of
// (DESIGN §4: the verdict is the worst of its parts).
type assessment struct {
	write       bool
	conditional bool
	unbounded   bool
	interactive Interactive
	risk        Risk
	action      ActionClass
	reasons     []Reason
	// mem, when set, is where the first reason takes its slice from: the
	// top-level assessment of a classification, whose reasons the result
	// keeps. Nested ones, merged and dropped, allocate their own.
	mem *scratch
}

func (a *assessment) reason(code Code, detail string) {
	for _, r := range a.reasons {
		if r.Code == code && r.Detail == detail {
			return
		}
	}
	if a.reasons == nil {
		if a.mem != nil {
			a.reasons = a.mem.takeReasons()
		} else {
			a.reasons = make([]Reason, 0, 4) // most commands have one to four: one allocation
		}
	}
	a.reasons = append(a.reasons, Reason{Code: code, Detail: detail})
}

// writes records a finding that makes the command write_or_unknown.
func (a *assessment) writes(code Code, risk Risk, detail string) {
	a.write = true
	if risk < RiskLowWrite {
		risk = RiskLowWrite
	}
	if risk > a.risk {
		a.risk = risk
	}
	if a.action.rank() < ActionWrite.rank() {
		a.action = ActionWrite
	}
	a.reason(code, detail)
}

// destroys records a destructive action (DESIGN §4 action_class). A write
// reason with the same detail becomes the DESTRUCTIVE one, so that "rm
// deletes files" is said once.
func (a *assessment) destroys(detail string) {
	for i, r := range a.reasons {
		if r.Detail == detail {
			a.reasons = append(a.reasons[:i], a.reasons[i+1:]...)
			break
		}
	}
	a.writes(CodeDestructive, RiskHighWrite, detail)
	a.action = ActionDestructive
}

// failClosed records input that cannot be decided safely.
func (a *assessment) failClosed(code Code, detail string) {
	a.writes(code, RiskHighWrite, detail)
}

// conditionally records that read-only-ness rests on inspection or config.
func (a *assessment) conditionally(code Code, detail string) {
	a.conditional = true
	a.reason(code, detail)
}

// never records that the command may not terminate (seed 000 NonInteractiveOnly).
func (a *assessment) never(kind Interactive, detail string) {
	a.unbounded = true
	if kind.rank() > a.interactive.rank() {
		a.interactive = kind
	}
	a.reason(interactiveCode[kind], detail)
}

var interactiveCode = map[Interactive]Code{
	TTYFlag:         CodeTTYFlag,
	Pager:           CodePager,
	UnboundedStream: CodeUnboundedStream,
	InteractiveREPL: CodeInteractiveREPL,
}

// bound clears termination findings: a timeout wrapper ends anything.
func (a *assessment) bound() {
	a.unbounded = false
	a.interactive = NotInteractive
	kept := a.reasons[:0]
	for _, r := range a.reasons {
		switch r.Code {
		case CodeTTYFlag, CodePager, CodeUnboundedStream, CodeInteractiveREPL:
			continue
		}
		kept = append(kept, r)
	}
	a.reasons = kept
}

func (a *assessment) merge(b *assessment) {
	a.write = a.write || b.write
	a.conditional = a.conditional || b.conditional
	if b.unbounded {
		a.unbounded = true
		if b.interactive.rank() > a.interactive.rank() {
			a.interactive = b.interactive
		}
	}
	if b.risk > a.risk {
		a.risk = b.risk
	}
	if b.action.rank() > a.action.rank() {
		a.action = b.action
	}
	for _, r := range b.reasons {
		a.reason(r.Code, r.Detail)
	}
}

func (a *assessment) result(command string) Result {
	r := Result{
		Command:     command,
		Intent:      ReadOnlyCertain,
		Bounded:     !a.unbounded,
		Interactive: a.interactive,
		Risk:        a.risk,
		ActionClass: a.action,
		Reasons:     a.reasons,
	}
	switch {
	case a.write:
		r.Intent = WriteOrUnknown
	case a.conditional:
		r.Intent = ReadOnlyConditional
	}
	if r.Intent != WriteOrUnknown {
		r.Risk, r.ActionClass = RiskReadOnly, ActionRead
	}
	if r.ActionClass == "" {
		r.ActionClass = ActionRead
	}
	return r
}
