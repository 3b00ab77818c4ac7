package audit

import (
	"bytes"
	"encoding/binary"
	"math"
	"math/bits"
)

// bodyFields are a body's values of the indexed columns. Strings without
// escapes share the body's memory, so reading them allocates nothing.
type bodyFields struct {
	seq    int64
	hasSeq bool
	eventID, timestamp, eventType, traceID, sessionID,
	agent, actionClass, toolName, prevHash []byte
	// approvalID is read only when withApprovalID is set before the scan
	// (the record has the column, audit.Row.HasApprovalID): otherwise the
	// member is passed over as before, so that a database older than the
	// column verifies as it did.
	approvalID     []byte
	withApprovalID bool
	seen           uint16 // fields met so far, to refuse a duplicate
}

const (
	seenSeq uint16 = 1 << iota
	seenEventID
	seenTimestamp
	seenEventType
	seenTraceID
	seenSessionID
	seenAgent
	seenActionClass
	seenPrevHash
	seenTool
	seenToolName
	seenApprovalID
)

// scanBody reads the indexed fields of a body into f. It is a small
// hand-written JSON scanner rather than encoding/json because verification
// runs it on every record (DESIGN §10: ≥ 500k events/s): it reads the
// top-level members, decoding only the strings of interest (approval_id
// when f.withApprovalID asks for it), seq and tool.name, and passes over
// other values by matching their brackets and strings (bytes.IndexByte
// finds a string's end) without checking the grammar inside them, which
// the hash vouches for. It reports false for
// anything but one JSON object whose fields of interest have the right
// types and appear once. Names match exactly.
func scanBody(b []byte, f *bodyFields) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		var key []byte
		var ok bool
		if key, i, ok = readString(b, i); !ok {
			return false
		}
		i = skipSpace(b, i)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		var dst *[]byte
		var bit uint16
		switch string(key) {
		case "seq":
			if f.seen&seenSeq != 0 {
				return false
			}
			f.seen |= seenSeq
			if f.seq, i, ok = readInt(b, i); !ok {
				return false
			}
			f.hasSeq = true
		case "event_id":
			dst, bit = &f.eventID, seenEventID
		case "timestamp":
			dst, bit = &f.timestamp, seenTimestamp
		case "event_type":
			dst, bit = &f.eventType, seenEventType
		case "trace_id":
			dst, bit = &f.traceID, seenTraceID
		case "session_id":
			dst, bit = &f.sessionID, seenSessionID
		case "agent":
			dst, bit = &f.agent, seenAgent
		case "action_class":
			dst, bit = &f.actionClass, seenActionClass
		case "prev_hash":
			dst, bit = &f.prevHash, seenPrevHash
		case "approval_id":
			if !f.withApprovalID {
				if i = skipValue(b, i); i < 0 {
					return false
				}
				break
			}
			dst, bit = &f.approvalID, seenApprovalID
		case "tool":
			if f.seen&seenTool != 0 {
				return false
			}
			f.seen |= seenTool
			if i, ok = readTool(b, i, f); !ok {
				return false
			}
		default:
			if i = skipValue(b, i); i < 0 {
				return false
			}
		}
		if dst != nil {
			if f.seen&bit != 0 {
				return false
			}
			f.seen |= bit
			if *dst, i, ok = readString(b, i); !ok {
				return false
			}
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace(b []byte, i int) int {
	for i < len(b) && (b[i] == ' ' || b[i] == '\n' || b[i] == '\r' || b[i] == '\t') {
		i++
	}
	return i
}

// readTool reads the tool object's name; null is no tool.
func readTool(b []byte, i int, f *bodyFields) (int, bool) {
	if hasLiteral(b, i, "null") {
		return i + 4, true
	}
	if i >= len(b) || b[i] != '{' {
		return i, false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return i + 1, true
	}
	for {
		key, j, ok := readString(b, i)
		if !ok {
			return j, false
		}
		i = skipSpace(b, j)
		if i >= len(b) || b[i] != ':' {
			return i, false
		}
		i = skipSpace(b, i+1)
		if string(key) == "name" {
			if f.seen&seenToolName != 0 {
				return i, false
			}
			f.seen |= seenToolName
			if f.toolName, i, ok = readString(b, i); !ok {
				return i, false
			}
		} else if i = skipValue(b, i); i < 0 {
			return i, false
		}
		i = skipSpace(b, i)
		if i >= len(b) {
			return i, false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return i + 1, true
		default:
			return i, false
		}
	}
}

// readString reads the string at b[i]: a slice of b when it holds no
// escape, else a decoded copy. The strings it reads are short (names, ids,
// hashes): a byte loop beats bytes.IndexByte's call there.
func readString(b []byte, i int) ([]byte, int, bool) {
	if i >= len(b) || b[i] != '"' {
		return nil, i, false
	}
	j := plainRun(b, i+1)
	if j >= len(b) {
		return nil, i, false
	}
	switch b[j] {
	case '"':
		return b[i+1 : j], j + 1, true
	case '\\':
		// Escapes are rare in these fields (a quote or a control character
		// in an agent name): decode like the parser does.
		p := parser{data: b, pos: i}
		s, err := p.string()
		if err != nil {
			return nil, i, false
		}
		return []byte(s), p.pos, true
	}
	return nil, i, false // a raw control character
}

// plainRun returns the index of the first byte from i on that ends a run
// of plain string contents: '"', '\\' or a control character (len(b) if
// none). It tests eight bytes at a time with the classic bit tricks
// ("determine if a word has a byte less than n"): a borrow can only set a
// flag above a byte that really matches, so the lowest flag is the first
// match.
func plainRun(b []byte, i int) int {
	const (
		ones  = 0x0101010101010101
		highs = 0x8080808080808080
	)
	for ; i+8 <= len(b); i += 8 {
		w := binary.LittleEndian.Uint64(b[i:])
		q := w ^ ('"' * ones)
		bs := w ^ ('\\' * ones)
		special := ((w-0x20*ones) & ^w | (q-ones) & ^q | (bs-ones) & ^bs) & highs
		if special != 0 {
			return i + bits.TrailingZeros64(special)/8
		}
	}
	for ; i < len(b); i++ {
		if c := b[i]; c == '"' || c == '\\' || c < 0x20 {
			return i
		}
	}
	return i
}

// closingQuote returns the index of the '"' that ends the string whose
// contents start at b[i], or -1. bytes.IndexByte makes long strings
// (commands, tool output) cheap to pass over.
func closingQuote(b []byte, i int) int {
	start := i
	for {
		j := bytes.IndexByte(b[i:], '"')
		if j < 0 {
			return -1
		}
		q := i + j
		// The quote is escaped if an odd number of backslashes precede it.
		bs := 0
		for k := q - 1; k >= start && b[k] == '\\'; k-- {
			bs++
		}
		if bs%2 == 0 {
			return q
		}
		i = q + 1
	}
}

// readInt reads an integer in JSON's plain form (what JCS writes for
// integers).
func readInt(b []byte, i int) (int64, int, bool) {
	neg := i < len(b) && b[i] == '-'
	if neg {
		i++
	}
	start := i
	var n int64
	for i < len(b) && b[i] >= '0' && b[i] <= '9' {
		if n > (math.MaxInt64-9)/10 {
			return 0, i, false
		}
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if digits := i - start; digits == 0 || digits > 1 && b[start] == '0' {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E') {
		return 0, i, false
	}
	if neg {
		n = -n
	}
	return n, i, true
}

func hasLiteral(b []byte, i int, word string) bool {
	return len(b)-i >= len(word) && string(b[i:i+len(word)]) == word
}

// skipValue returns the index just past the value at b[i], or -1. Objects
// and arrays end at their matching bracket; inside them only strings and
// brackets are looked at.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return -1
	}
	switch c := b[i]; {
	case c == '"':
		if end := closingQuote(b, i+1); end >= 0 {
			return end + 1
		}
		return -1
	case c == '{' || c == '[':
		return skipNested(b, i)
	case c == '-' || c >= '0' && c <= '9':
		j := i
		for j < len(b) && (b[j] >= '0' && b[j] <= '9' || b[j] == '-' || b[j] == '+' || b[j] == '.' || b[j] == 'e' || b[j] == 'E') {
			j++
		}
		return j
	case c == 't' && hasLiteral(b, i, "true"):
		return i + 4
	case c == 'f' && hasLiteral(b, i, "false"):
		return i + 5
	case c == 'n' && hasLiteral(b, i, "null"):
		return i + 4
	}
	return -1
}

// skipNested passes over the object or array at b[i], matching brackets by
// kind (for the first 64 levels; deeper ones only by count) and passing over
// strings whole.
func skipNested(b []byte, i int) int {
	var objects uint64 // bit d: the container at depth d is an object
	depth := 0
	for i < len(b) {
		switch c := b[i]; c {
		case '"':
			end := closingQuote(b, i+1)
			if end < 0 {
				return -1
			}
			i = end
		case '{', '[':
			if depth == maxDepth {
				return -1
			}
			if depth < 64 {
				objects &^= 1 << depth
				if c == '{' {
					objects |= 1 << depth
				}
			}
			depth++
		case '}', ']':
			if depth == 0 {
				return -1
			}
			depth--
			if depth < 64 && (objects>>depth&1 == 1) != (c == '}') {
				return -1
			}
			if depth == 0 {
				return i + 1
			}
		}
		i++
	}
	return -1
}
