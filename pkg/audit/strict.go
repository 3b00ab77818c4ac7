package audit

import (
	"fmt"
	"strconv"
	"strings"
	"unicode"
)

// CheckRequestJSON checks one JSON request body as strictly as DecodeEvent
// reads an event, before encoding/json decodes it (issue 13 "Bad input,
// everywhere"). encoding/json takes the last of two duplicate members,
// matches member names without case (so {"agent":…,"Agent":…} is a
// duplicate too), replaces invalid UTF-8 with U+FFFD and rounds integers
// beyond 2^53 silently; what a reviewer reads in the chain would then not
// be what the caller sent. It refuses, naming the member:
//
//   - everything CanonicalizeJSON refuses: invalid UTF-8, lone surrogates,
//     duplicate member names, trailing data, nesting deeper than 1000;
//   - two member names of one object that differ only in case;
//   - a number beyond ±(2^53−1), which no JSON reader is sure to keep;
//   - U+0000 in any string or member name: it cuts C strings (SQLite's
//     shell, logs, terminals) short of what was stored.
func CheckRequestJSON(raw []byte) error {
	n, err := parseJSON(raw)
	if err != nil {
		return err
	}
	return checkStrict(&n, "")
}

func checkStrict(n *node, path string) error {
	switch n.kind {
	case kindNumber:
		if n.num > maxSafeInteger || n.num < -maxSafeInteger {
			return fmt.Errorf("%s: number beyond ±%d (2^53−1), which JSON readers cannot all keep exactly", pathName(path), int64(maxSafeInteger))
		}
	case kindString:
		if strings.IndexByte(n.str, 0) >= 0 {
			return fmt.Errorf("%s: NUL character (\\u0000) in string", pathName(path))
		}
	case kindArray:
		for i := range n.elems {
			if err := checkStrict(&n.elems[i], path+"["+strconv.Itoa(i)+"]"); err != nil {
				return err
			}
		}
	case kindObject:
		var folded map[string]string
		if len(n.keys) > 1 {
			folded = make(map[string]string, len(n.keys))
		}
		for i, k := range n.keys {
			member := joinPath(path, k)
			if strings.IndexByte(k, 0) >= 0 {
				return fmt.Errorf("%s: NUL character (\\u0000) in a member name", pathName(member))
			}
			if folded != nil {
				f := foldName(k)
				if other, ok := folded[f]; ok {
					return fmt.Errorf("%s: duplicate member name (the same as %s but for case, which encoding/json ignores)", pathName(member), quoteName(other))
				}
				folded[f] = k
			}
			if err := checkStrict(&n.elems[i], member); err != nil {
				return err
			}
		}
	}
	return nil
}

// foldName maps names that are equal under simple Unicode case folding
// (bytes.EqualFold, as encoding/json matches members to fields: "Agent",
// "AGENT", and "agent" with U+212A KELVIN SIGN for the k) to one string:
// each character becomes the smallest of its folding orbit.
func foldName(s string) string {
	b := make([]rune, 0, len(s))
	for _, r := range s {
		m := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			m = min(m, f)
		}
		b = append(b, m)
	}
	return string(b)
}

// checkNumbers refuses a number beyond ±(2^53−1) anywhere in n, naming
// the field (DecodeEvent's JSON-valued fields).
func checkNumbers(n *node, field string) error {
	switch n.kind {
	case kindNumber:
		if n.num > maxSafeInteger || n.num < -maxSafeInteger {
			return fmt.Errorf("%s: number beyond ±%d (2^53−1), which JSON readers cannot all keep exactly", field, int64(maxSafeInteger))
		}
	case kindArray, kindObject:
		for i := range n.elems {
			if err := checkNumbers(&n.elems[i], field); err != nil {
				return err
			}
		}
	}
	return nil
}

// pathName names a member for messages: its path, or "the body".
func pathName(path string) string {
	if path == "" {
		return "the body"
	}
	return path
}

func joinPath(path, name string) string {
	q := name
	if !isPlainName(name) {
		q = quoteName(name)
	}
	if path == "" {
		return q
	}
	return path + "." + q
}

func isPlainName(s string) bool {
	if s == "" || len(s) > 64 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !(isAlnum(s[i]) || s[i] == '_') {
			return false
		}
	}
	return true
}

// checkIdentifier refuses U+0000 in an identifier (issue 13): agents,
// session and trace ids, user ids, roles, resource names and tags become
// indexed columns, query filters and C strings (SQLite's shell, logs),
// where a NUL cuts them short of what the hash covers. Other control
// characters stay: the log records what an agent sent, and its readers
// (secbot, govbot, the CLIs) make names printable where they show them.
func checkIdentifier(name, s string) error {
	if i := strings.IndexByte(s, 0); i >= 0 {
		return fmt.Errorf("%s has a NUL character (U+0000) at byte %d", name, i)
	}
	return nil
}
