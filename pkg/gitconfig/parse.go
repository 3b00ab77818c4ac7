// Package gitconfig finds the settings in a repository's git configuration that make read-only git commands run programs.
package gitconfig

import (
	"bytes"
	"fmt"
	"strings"
)

// Entry is one "key = value" line of a config file. Include directives
// (include.path, includeIf.<cond>.path) are entries like any other.
type Entry struct {
	// Key is canonical: section and name lower-case, subsection as written,
	// e.g. "core.fsmonitor" or "diff.Foo.textconv".
	Key   string
	Value string
	// Line is the line the key starts on (a value may continue onto
	// further lines).
	Line int
	// NoValue is set for a key written without "=", which git reads as
	// boolean true.
	NoValue bool
}

var utf8BOM = []byte("\xef\xbb\xbf")

// Parse parses one config file's text (used by Inspect and by fuzzing); name
// is used in Source and errors.
// It returns the key/value entries in order, with include directives as entries too.
//
// The grammar follows git's own parser (config.c) rather than the manual
// where they differ, so that what git accepts and what it rejects match.
// Deliberate differences, all rejecting what git accepts: keys before any
// section, headers with an empty section name ("[ \"x\"]"), and NUL bytes.
// git keeps keys and values as C strings, so a NUL cuts them short:
// [core "fsmonitor<NUL>x"] k = v sets core.fsmonitor for git.
func Parse(name string, data []byte) ([]Entry, error) {
	data = bytes.TrimPrefix(data, utf8BOM)
	if i := bytes.IndexByte(data, 0); i >= 0 {
		line := 1 + bytes.Count(data[:i], []byte("\n"))
		return nil, fmt.Errorf("gitconfig: %s:%d: NUL byte", name, line)
	}
	s := &scanner{name: name, data: data, line: 1}
	var entries []Entry
	section := ""
	comment := false
	for {
		c := s.next()
		switch {
		case c == '\n':
			if s.eof {
				return entries, nil
			}
			comment = false
		case comment || isSpace(c):
		case c == '#' || c == ';':
			comment = true
		case c == '[':
			// A key may follow the header on the same line, as in git.
			sec, err := s.header()
			if err != nil {
				return nil, err
			}
			section = sec
		case isAlpha(c):
			if section == "" {
				return nil, s.errorf("key outside a section")
			}
			e, err := s.entry(c)
			if err != nil {
				return nil, err
			}
			e.Key = section + "." + e.Key
			entries = append(entries, e)
		default:
			return nil, s.errorf("invalid key name")
		}
	}
}

// scanner reads a config file one byte at a time the way git does: "\r\n"
// reads as '\n', and the end of the data reads as '\n' with eof set.
type scanner struct {
	name string
	data []byte
	pos  int
	line int // line of the next byte
	cur  int // line of the byte last returned, for errors
	eof  bool
}

func (s *scanner) next() byte {
	s.cur = s.line
	if s.pos >= len(s.data) {
		s.eof = true
		return '\n'
	}
	c := s.data[s.pos]
	s.pos++
	if c == '\r' && s.pos < len(s.data) && s.data[s.pos] == '\n' {
		s.pos++
		c = '\n'
	}
	if c == '\n' {
		s.line++
	}
	return c
}

func (s *scanner) errorf(format string, args ...any) error {
	return fmt.Errorf("gitconfig: %s:%d: %s", s.name, s.cur, fmt.Sprintf(format, args...))
}

// header reads a section header after its '[': "[section]", the legacy
// "[section.subsection]" (all lower-cased), or "[section "subsection"]"
// (subsection kept as written, with \" and \\ escapes). It returns the
// canonical prefix of the keys that follow, without the trailing dot.
func (s *scanner) header() (string, error) {
	var b strings.Builder
	for {
		c := s.next()
		switch {
		case c == ']':
			return s.checkSection(b.String())
		case c == ' ' || c == '\t' || c == '\r':
			if _, err := s.checkSection(b.String()); err != nil {
				return "", err
			}
			sub, err := s.subsection()
			if err != nil {
				return "", err
			}
			return b.String() + "." + sub, nil
		case isKeyChar(c) || c == '.':
			b.WriteByte(lower(c))
		default: // including '\n' and the end of the file
			return "", s.errorf("bad section header")
		}
	}
}

// checkSection rejects an empty section name, which git allows but which
// would give keys with no section part.
func (s *scanner) checkSection(name string) (string, error) {
	if name == "" || name[0] == '.' {
		return "", s.errorf("bad section header: empty section name")
	}
	return name, nil
}

// subsection reads ` "subsection"]` after the section name.
func (s *scanner) subsection() (string, error) {
	c := s.next()
	for c == ' ' || c == '\t' || c == '\r' {
		c = s.next()
	}
	if c != '"' {
		return "", s.errorf("bad section header: subsection must be quoted")
	}
	var b strings.Builder
	for {
		c := s.next()
		if c == '\\' {
			// git takes any escaped character literally here.
			c = s.next()
		} else if c == '"' {
			break
		}
		if c == '\n' {
			return "", s.errorf("bad section header: unterminated subsection")
		}
		b.WriteByte(c)
	}
	if s.next() != ']' {
		return "", s.errorf("bad section header: missing ']' after subsection")
	}
	return b.String(), nil
}

// entry reads a key, whose first character c has been read, and its value.
func (s *scanner) entry(c byte) (Entry, error) {
	e := Entry{Line: s.cur}
	name := []byte{lower(c)}
	for {
		c = s.next()
		if !isKeyChar(c) {
			break
		}
		name = append(name, lower(c))
	}
	e.Key = string(name)
	if c != ' ' && c != '\t' && c != '=' && c != '\n' {
		return e, s.errorf("invalid key name %q", e.Key+string(c))
	}
	for c == ' ' || c == '\t' {
		c = s.next()
	}
	switch c {
	case '\n':
		e.NoValue = true
		return e, nil
	case '=':
		v, err := s.value()
		e.Value = v
		return e, err
	default:
		return e, s.errorf("expected '=' after key %q", e.Key)
	}
}

// value reads a value up to the end of its (last) line. Outside quotes,
// whitespace is trimmed at both ends and each inner whitespace character
// becomes a space, and '#' or ';' starts a comment; a backslash escapes
// \n \t \b \" \\ or joins the next line.
func (s *scanner) value() (string, error) {
	var b []byte
	quote, comment := false, false
	spaces := 0 // whitespace seen since the last kept character
	for {
		c := s.next()
		if c == '\n' {
			if quote {
				return "", s.errorf("unterminated quote")
			}
			return string(b), nil
		}
		if comment {
			continue
		}
		if isSpace(c) && !quote {
			if len(b) > 0 {
				spaces++
			}
			continue
		}
		if !quote && (c == '#' || c == ';') {
			comment = true
			continue
		}
		for ; spaces > 0; spaces-- {
			b = append(b, ' ')
		}
		switch c {
		case '"':
			quote = !quote
		case '\\':
			switch c = s.next(); c {
			case '\n': // line continuation
			case 'n':
				b = append(b, '\n')
			case 't':
				b = append(b, '\t')
			case 'b':
				b = append(b, '\b')
			case '"', '\\':
				b = append(b, c)
			default:
				return "", s.errorf("bad escape %q", "\\"+string(c))
			}
		default:
			b = append(b, c)
		}
	}
}

// Character classes as git defines them (ASCII only; no \v or \f).
func isSpace(c byte) bool   { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }
func isAlpha(c byte) bool   { return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' }
func isKeyChar(c byte) bool { return isAlpha(c) || '0' <= c && c <= '9' || c == '-' }

func lower(c byte) byte {
	if 'A' <= c && c <= 'Z' {
		return c + 'a' - 'A'
	}
	return c
}
