package intent

import (
	"strings"

	"github.com/govkit/govkit/pkg/sqlinspect"
)

// ContentInspector is seed 000's ContentInspector: it proves a dual-use
// program read-only by inspecting what the program is asked to run. A new
// inspector is one entry in the inspectors list (P-46); it is consulted for
// programs that have no rule of their own.
type ContentInspector interface {
	// Applies reports whether the inspector handles the bare program name.
	Applies(program string) bool
	// Inspect judges argv (argv[0] is the program; quotes already removed).
	Inspect(argv []string) Inspection
}

// Inspection is an inspector's verdict.
type Inspection struct {
	ReadOnly    bool   // everything it will run is provably read-only
	Destructive bool   // it drops, truncates or deletes without a filter
	REPL        bool   // nothing to run: an interactive session
	Detail      string // what was found
}

var inspectors = []ContentInspector{sqlClientInspector{}}

// sqlClientInspector covers sqlite3, psql and mysql/mariadb (DESIGN §4).
type sqlClientInspector struct{}

func (sqlClientInspector) Applies(program string) bool {
	_, ok := sqlinspect.Client(program)
	return ok
}

func (sqlClientInspector) Inspect(argv []string) Inspection {
	v := sqlinspect.InspectClient(argv)
	return Inspection{ReadOnly: v.ReadOnly, Destructive: v.Destructive, REPL: v.REPL, Detail: v.Detail}
}

// inspect hands a program's invocation to its inspector:
// read_only_conditional only when the inspector proves it.
func inspect(c *call, in ContentInspector) {
	argv := make([]string, len(c.args))
	for i, a := range c.args {
		if i > 0 && !a.literal() {
			c.a.writes(CodeSQLWrite, RiskMediumWrite, c.name+": argument "+a.src+" is computed at run time and cannot be inspected")
			return
		}
		argv[i] = a.val
	}
	v := in.Inspect(argv)
	// A REPL is never reported together with a write finding (the
	// write wins), but it may come with read-only SQL (psql -W -c …).
	switch {
	case v.REPL && c.ctx.stdin != stdinInherited:
		c.a.writes(CodeSQLWrite, RiskMediumWrite, c.name+" runs SQL from its input, which classify cannot see")
		return
	case v.REPL:
		c.a.never(InteractiveREPL, named(c.name, orDefault(v.Detail, "no query: an interactive session")))
		if v.ReadOnly {
			c.a.conditionally(CodeSQLReadOnly, c.name+": every statement is read-only")
		}
	case v.ReadOnly:
		c.a.conditionally(CodeSQLReadOnly, named(c.name, orDefault(v.Detail, "every statement is read-only")))
	default:
		c.a.writes(CodeSQLWrite, RiskHighWrite, named(c.name, orDefault(v.Detail, "SQL is not provably read-only")))
	}
	if v.Destructive {
		c.a.destroys(named(c.name, orDefault(v.Detail, "SQL drops or deletes data")))
	}
}

// named prefixes an inspector's detail with the program, once.
func named(prog, detail string) string {
	detail = strings.TrimSpace(detail)
	if strings.HasPrefix(detail, prog+" ") {
		return detail
	}
	return prog + ": " + detail
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}
