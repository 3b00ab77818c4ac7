package intent

import (
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
)

// call is one program invocation being classified.
type call struct {
	w    *walker
	a    *assessment
	ctx  stmtCtx
	name string
	args []*arg // args[0] is the program name
}

// rule classifies one program's invocation.
type rule func(c *call)

func (c *call) rest() []*arg { return c.args[1:] }

// parse parses the arguments after the program name. For programs whose
// options decide what they do, a word that may expand into an option makes
// the call unknowable (a file named "--in-place=.txt" matches *.txt).
func (c *call) parse(s *getopt.Spec) *getopt.Parsed {
	return c.parseWords(c.rest(), s)
}

// parseWords parses some of the call's words (a subcommand's, those
// before a verb) into memory the call hands back when it is done.
func (c *call) parseWords(args []*arg, s *getopt.Spec) *getopt.Parsed {
	p := c.w.mem.takeParsed()
	getopt.ParseInto(p, words(args), s)
	return p
}

// strict fails closed when parsing found options we cannot vouch for; it
// reports whether the call may still be read-only.
func (c *call) strict(p *getopt.Parsed) bool {
	if len(p.Dynamic) > 0 {
		c.a.writes(CodeDynamicCommand, RiskMediumWrite, c.name+": argument "+p.Dynamic[0]+" may expand into an option")
		return false
	}
	if len(p.Unknown) > 0 {
		c.a.writes(CodeWriteOption, RiskMediumWrite, c.name+": option "+p.Unknown[0]+" is not known to be read-only")
		return false
	}
	return true
}

// operand returns the i-th operand's value, or "".
func (c *call) operand(p *getopt.Parsed, i int) (*arg, bool) {
	if i < len(p.Operands) {
		return c.rest()[p.Operands[i]], true
	}
	return nil, false
}

// fromOperand returns the words from the i-th operand on, nil when there
// are fewer: the command a wrapper runs (nice CMD, taskset MASK CMD).
func (c *call) fromOperand(p *getopt.Parsed, i int) []*arg {
	if i < len(p.Operands) {
		return c.rest()[p.Operands[i]:]
	}
	return nil
}

// programTexts returns the program a sed- or awk-like tool runs: the values
// of the named options, or else its first operand.
func (c *call) programTexts(p *getopt.Parsed, names ...string) []string {
	var texts []string
	for _, o := range p.Opts {
		for _, n := range names {
			if o.Name == n {
				texts = append(texts, o.Value)
			}
		}
	}
	if len(texts) == 0 {
		if s, ok := c.operand(p, 0); ok {
			texts = append(texts, s.val)
		}
	}
	return texts
}

// inner classifies args as a nested program invocation (wrappers).
func (c *call) inner(args []*arg, ctx stmtCtx) {
	if len(args) == 0 {
		return
	}
	c.w.program(args, ctx, c.a)
}

// innerAssessed classifies a nested invocation into its own assessment so the
// wrapper can adjust it (timeout bounds it) before merging.
func (c *call) innerAssessed(args []*arg, ctx stmtCtx) *assessment {
	sub := &assessment{}
	if len(args) > 0 {
		c.w.program(args, ctx, sub)
	}
	return sub
}

// joined is the text a shell-joining wrapper (watch, ssh) will run.
func joined(args []*arg) string {
	parts := make([]string, len(args))
	for i, a := range args {
		parts[i] = a.val
	}
	return strings.Join(parts, " ")
}

// rewrite records a replacement for this call's words in the suggested
// rewrite (seed 000 auto-recovery). It is kept only for calls written in the
// top-level command, with no redirect between their words.
func (c *call) rewrite(tokens ...string) {
	if !c.w.topLevel {
		return
	}
	start, end := c.args[0].start, c.args[len(c.args)-1].end
	for _, r := range c.ctx.redirs {
		if p := int(r.Pos().Offset()); p > start && p < end {
			return
		}
	}
	c.w.splices = append(c.w.splices, splice{start: start, end: end, text: strings.Join(tokens, " ")})
}

// srcExcept returns the source words of the call, dropping the options for
// which drop returns true (removing just those letters from clusters), with
// extra tokens inserted after the first keep words.
func (c *call) srcExcept(p *getopt.Parsed, keep int, drop func(o getopt.Opt) bool, extra ...string) []string {
	dropWhole := map[int]bool{}
	dropLetters := map[int]string{}
	for _, o := range p.Opts {
		if !drop(o) {
			continue
		}
		if o.Cluster {
			dropLetters[o.Index+1] += o.Name[1:]
			continue
		}
		dropWhole[o.Index+1] = true
		if o.SepValue {
			dropWhole[o.Index+2] = true
		}
	}
	var out []string
	for i, a := range c.args {
		if i == keep {
			out = append(out, extra...)
		}
		if dropWhole[i] {
			continue
		}
		if letters, ok := dropLetters[i]; ok {
			v := strings.Map(func(r rune) rune {
				if strings.ContainsRune(letters, r) {
					return -1
				}
				return r
			}, a.val)
			if v != "-" {
				out = append(out, shellQuote(v))
			}
			continue
		}
		out = append(out, a.src)
	}
	if keep >= len(c.args) {
		out = append(out, extra...)
	}
	return out
}
