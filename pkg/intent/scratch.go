package intent

import (
	"strings"

	"github.com/govkit/govkit/pkg/getopt"
	"mvdan.cc/sh/v3/syntax"
)

// scratch is the memory one classification works in, reused from command to
// command so that a batch does not allocate the walk's words and calls anew
// for each one (issue 14: cut allocations in the walk).
//
// Words and calls are taken stack-wise: a call takes its words and its call
// record when it is classified and hands them back when it is done, after
// every command nested in it. Growing an arena leaves the frames below on
// the old array, which stays valid for as long as they hold it. Nothing
// taken here may outlive the call that took it: results copy what they keep
// (strings are shared, never slices of the arena).
type scratch struct {
	// The bash parser and the reader it parses from: one pool for both
	// (a classification and the scripts nested in it parse one after the
	// other, never at once: each Parse returns a tree that owns its nodes).
	parser *syntax.Parser
	reader strings.Reader

	assessment assessment
	// reasons is the block that results' reasons are cut from, four
	// slots each; a slot is never handed out twice, so a result keeps its
	// reasons after the scratch moves on (and keeps the block alive).
	reasons []Reason
	walker  walker
	words   []arg
	ptrs    []*arg
	calls   []call
	parsed  []*getopt.Parsed // each reused, with its slices
}

// start readies s for a new command and returns its empty assessment. The
// previous result owns the old reasons, so they are dropped, not truncated.
func (s *scratch) start() *assessment {
	s.assessment = assessment{mem: s}
	return &s.assessment
}

// parse parses text as bash with the scratch's parser.
func (s *scratch) parse(text string) (*syntax.File, error) {
	if s.parser == nil {
		s.parser = syntax.NewParser(syntax.Variant(syntax.LangBash))
	}
	s.reader.Reset(text)
	return s.parser.Parse(&s.reader, "")
}

// reasonBlock is how many reasons one allocation holds: 16 commands' worth
// of four.
const reasonBlock = 64

// takeReasons returns an empty slice with room for four reasons, cut from
// the block so that most commands' reasons cost no allocation of their own
// (issue 14); a fifth reason reallocates, as append does past any capacity.
func (s *scratch) takeReasons() []Reason {
	if cap(s.reasons)-len(s.reasons) < 4 {
		s.reasons = make([]Reason, 0, reasonBlock)
	}
	n := len(s.reasons)
	s.reasons = s.reasons[:n+4]
	return s.reasons[n : n : n+4]
}

// takeWords returns n words and pointers to them; release with
// releaseWords(mark). The words are not zeroed: the caller writes each one
// whole (arg.fill), so that a batch does not clear them and then write them
// again, each write a GC write barrier while the collector marks (issue 14).
func (s *scratch) takeWords(n int) (args []*arg, mark int) {
	mark = len(s.words)
	if cap(s.words)-mark < n || cap(s.ptrs)-mark < n { // (their capacities grow apart)
		s.words = append(s.words, make([]arg, n)...)
		s.ptrs = append(s.ptrs, make([]*arg, n)...)
	} else {
		s.words = s.words[:mark+n]
		s.ptrs = s.ptrs[:mark+n]
	}
	words := s.words[mark:]
	args = s.ptrs[mark : mark+n : mark+n]
	for i := range words {
		if args[i] != &words[i] { // already so, unless the arena moved
			args[i] = &words[i]
		}
	}
	return args, mark
}

// releaseWords hands back the words taken at mark and everything after them.
func (s *scratch) releaseWords(mark int) {
	s.words = s.words[:mark]
	s.ptrs = s.ptrs[:mark]
}

// frame marks the arenas' heights when a call was taken.
type frame struct{ calls, parsed int }

// takeCall stores c as the next call record and returns it; release with
// releaseCall, which also hands back the parsed arguments taken for it.
// The record is written once, and not cleared on release: the next call
// overwrites it (a finished command's tree stays reachable from the pooled
// scratch until then, or until the pool is emptied by the collector).
func (s *scratch) takeCall(c call) (*call, frame) {
	f := frame{len(s.calls), len(s.parsed)}
	s.calls = append(s.calls, c)
	return &s.calls[f.calls], f
}

func (s *scratch) releaseCall(f frame) {
	s.calls = s.calls[:f.calls]
	s.parsed = s.parsed[:f.parsed]
}

// takeParsed returns a Parsed whose slices may be reused; it lives until
// the call that took it is released.
func (s *scratch) takeParsed() *getopt.Parsed {
	n := len(s.parsed)
	if n < cap(s.parsed) {
		s.parsed = s.parsed[:n+1]
		if s.parsed[n] != nil {
			return s.parsed[n]
		}
	} else {
		s.parsed = append(s.parsed, nil)
	}
	s.parsed[n] = new(getopt.Parsed)
	return s.parsed[n]
}
