package intent

import (
	"cmp"
	"fmt"
	"slices"
	"sync"

	"mvdan.cc/sh/v3/syntax"
)

// GitRisk is one setting in a repository's git configuration that makes a
// read-only git command run a program (core.fsmonitor, diff.*.textconv, …).
type GitRisk struct {
	Key    string // e.g. "core.fsmonitor"
	Source string // where it was set, e.g. ".git/config:12"
}

// RepoConfigFunc reports the risky git settings of the repository that a git
// command run in dir would use. It is injected so that this package stays
// free of I/O; pkg/gitconfig provides the implementation that reads files.
type RepoConfigFunc func(dir string) ([]GitRisk, error)

// Options configure a Classifier. The zero value is ready to use.
type Options struct {
	// Dir is the directory the command will run in; used with RepoConfig.
	Dir string
	// RepoConfig, when set, is consulted for every read-only git command:
	// risky settings make the command write_or_unknown (GIT_CONFIG_RISK).
	RepoConfig RepoConfigFunc
	// MaxBytes bounds the command size (default 1 MiB); MaxDepth bounds
	// nesting of substitutions, compound commands and wrappers (default 64).
	MaxBytes int
	MaxDepth int
}

// Classifier classifies shell commands. It is safe for concurrent use.
type Classifier struct {
	opts Options
	// scratches holds the memory classifications work in, the parser
	// included (issue 14: a batch allocates neither per command).
	scratches sync.Pool // of *scratch
	// parseAlways turns the plain fast path off (plain.go): the tests'
	// reference, which every input the fast path takes must match.
	parseAlways bool
}

// New returns a Classifier with the given options.
func New(opts Options) *Classifier {
	loadRules()
	if opts.MaxBytes <= 0 {
		opts.MaxBytes = 1 << 20
	}
	if opts.MaxDepth <= 0 {
		opts.MaxDepth = 64
	}
	c := &Classifier{opts: opts}
	c.scratches.New = func() any { return new(scratch) }
	return c
}

var defaultClassifier = sync.OnceValue(func() *Classifier { return New(Options{}) })

// Classify classifies a command with default options.
func Classify(command string) Result { return defaultClassifier().Classify(command) }

// Classify classifies one command (which may span several lines).
func (c *Classifier) Classify(command string) Result {
	r := c.classify(command)
	if r.Verdict() != VerdictReadOnly && r.SuggestedRewrite != "" {
		if c.classify(r.SuggestedRewrite).Verdict() != VerdictReadOnly {
			r.SuggestedRewrite = "" // seed 000: a rewrite must itself be read-only and bounded
		}
	} else {
		r.SuggestedRewrite = ""
	}
	r.AutoRecoverable = r.SuggestedRewrite != ""
	return r
}

// classify returns the result with a candidate rewrite, not yet checked.
// A simple command of plain words (two thirds of the public corpus) is
// classified without parsing it (plain.go, issue 14: batch mode at ≤ 2×
// parsing alone); anything else is parsed.
func (c *Classifier) classify(command string) Result {
	if len(command) <= c.opts.MaxBytes && !c.parseAlways {
		if n, ok := plainCommand(command); ok {
			return c.classifyPlain(command, n)
		}
	}
	return c.classifyParsed(command)
}

// classifyParsed is classify through the parser and the walk of its tree,
// for every command.
func (c *Classifier) classifyParsed(command string) Result {
	s := c.scratches.Get().(*scratch)
	defer c.scratches.Put(s)
	a := s.start()
	switch bad, isBad := badRune(command); {
	case len(command) > c.opts.MaxBytes:
		a.failClosed(CodeInputTooLarge, fmt.Sprintf("command is %d bytes; the limit is %d", len(command), c.opts.MaxBytes))
		return a.result(command)
	case isBad:
		a.failClosed(CodeControlCharacter, "command contains "+bad)
		return a.result(command)
	}
	f, err := s.parse(command)
	if err != nil {
		a.failClosed(CodeParseError, err.Error())
		return a.result(command)
	}
	w := &s.walker
	*w = walker{c: c, mem: s, src: command, topLevel: true, dir: c.opts.Dir, dirKnown: true, splices: w.splices[:0]}
	w.stmts(f.Stmts, a)
	r := a.result(command)
	r.SuggestedRewrite = applySplices(command, w.splices)
	return r
}

// parse parses text as bash with a pooled parser, as a classification does.
func (c *Classifier) parse(text string) (*syntax.File, error) {
	s := c.scratches.Get().(*scratch)
	defer c.scratches.Put(s)
	return s.parse(text)
}

func applySplices(src string, sp []splice) string {
	if len(sp) == 0 {
		return ""
	}
	slices.SortFunc(sp, func(x, y splice) int { return cmp.Compare(y.start, x.start) })
	out, last := src, len(src)+1
	for _, s := range sp {
		if s.end > last || s.start < 0 || s.end > len(src) {
			return "" // overlapping edits: offer nothing rather than something wrong
		}
		out = out[:s.start] + s.text + out[s.end:]
		last = s.start
	}
	return out
}

// repoConfig asks RepoConfig about dir. Answers are not cached: a batch can
// outlive a change to the config (an agent writes core.fsmonitor, then asks
// about git status), and a stale answer would be a hole.
func (c *Classifier) repoConfig(dir string) ([]GitRisk, error) {
	return c.opts.RepoConfig(dir)
}
