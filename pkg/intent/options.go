package intent

import "github.com/govkit/govkit/pkg/getopt"

// words lets pkg/getopt, the one option parser (issue 14), read a call's
// words in place: a "--" ends options only when written so, a process
// substitution is never an option, and a word that may expand into one is
// reported for the rule to fail closed on.
type words []*arg

func (w words) Len() int { return len(w) }

func (w words) At(i int) getopt.Word {
	a := w[i]
	return getopt.Word{Text: a.val, Src: a.src, Literal: a.literal(), Opaque: a.procSub, MayExpand: a.mayBeOption()}
}

// parseArgs parses args (without the program name) against s.
func parseArgs(args []*arg, s *getopt.Spec) *getopt.Parsed {
	return getopt.Parse(words(args), s)
}
