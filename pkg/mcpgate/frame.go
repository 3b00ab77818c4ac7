package mcpgate

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"io"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// frameReader reads the stdio transport's frames: one JSON-RPC message per
// line (MCP spec, stdio transport), at most max bytes each. The SDK's own
// stdio connection ends at the first frame over its limit; gate must answer
// that one message and go on, so it frames the stream itself.
type frameReader struct {
	r   *bufio.Reader
	max int
	buf []byte
}

func newFrameReader(r io.Reader, max int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, 64<<10), max: max}
}

// oversize is a frame longer than the bound, read and dropped: what its
// top-level members said is all that is left of it.
type oversize struct {
	Size   int
	ID     jsonrpc.ID // zero when it had none (a notification) or gate could not tell
	Method string     // a request or notification; "" for a response
}

// next returns the next non-empty frame (without its newline), or an
// oversize description of a frame over the bound. The returned slice is
// valid until the next call. io.EOF ends the stream; a frame cut short by
// EOF is returned first.
func (f *frameReader) next() ([]byte, *oversize, error) {
	for {
		f.buf = f.buf[:0]
		var scan *memberScanner
		size := 0
		for {
			chunk, err := f.r.ReadSlice('\n')
			size += len(chunk)
			if scan == nil && len(f.buf)+len(chunk) > f.max+2 { // +2: "\r\n"
				scan = &memberScanner{}
				scan.feed(f.buf)
				f.buf = f.buf[:0]
			}
			if scan != nil {
				scan.feed(chunk)
			} else {
				f.buf = append(f.buf, chunk...)
			}
			if errors.Is(err, bufio.ErrBufferFull) {
				continue
			}
			if err != nil && (err != io.EOF || size == 0) {
				return nil, nil, err
			}
			break
		}
		if scan != nil {
			return nil, scan.result(size), nil
		}
		line := bytes.TrimRight(f.buf, "\r\n")
		if len(bytes.TrimSpace(line)) == 0 {
			continue
		}
		if len(line) > f.max {
			s := &memberScanner{}
			s.feed(line)
			return nil, s.result(len(line)), nil
		}
		return line, nil, nil
	}
}

// memberScanner finds a JSON object's top-level "id" and "method" in a
// stream of bytes without keeping it: a response's id may come last, after
// a result of any size (the TypeScript SDK writes {"result",…,"id"}).
type memberScanner struct {
	depth    int
	inString bool
	escape   bool
	atKey    bool   // the current top-level string is a member's name
	nested   bool   // the current top-level value is an object or array
	over     bool   // the current top-level value is longer than maxMember
	buf      []byte // the current top-level key or scalar value
	key      string
	id       []byte
	method   []byte
}

// maxMember bounds what the scanner keeps of one id or method.
const maxMember = 256

func (s *memberScanner) feed(b []byte) {
	for _, c := range b {
		s.byte(c)
	}
}

func (s *memberScanner) byte(c byte) {
	if s.inString {
		switch {
		case s.escape:
			s.escape = false
		case c == '\\':
			s.escape = true
		case c == '"':
			s.inString = false
			if s.depth == 1 && s.atKey {
				s.key = string(s.buf)
				return
			}
		}
		if s.depth == 1 {
			s.add(c)
		}
		return
	}
	switch c {
	case ' ', '\t', '\r', '\n':
	case '"':
		s.inString = true
		if s.depth == 1 {
			if s.atKey {
				s.buf = s.buf[:0]
				return
			}
			s.add(c)
		}
	case '{', '[':
		s.depth++
		switch s.depth {
		case 1:
			s.atKey = true
			s.buf = s.buf[:0]
		case 2:
			s.nested = true
		}
	case '}', ']':
		s.depth--
		if s.depth == 0 {
			s.end()
		}
	case ':':
		if s.depth == 1 && s.atKey {
			s.atKey = false
			s.buf = s.buf[:0]
		}
	case ',':
		if s.depth == 1 {
			s.end()
			s.atKey = true
			s.buf = s.buf[:0]
		}
	default:
		if s.depth == 1 {
			s.add(c)
		}
	}
}

func (s *memberScanner) add(c byte) {
	if len(s.buf) >= maxMember {
		s.over = true
		return
	}
	s.buf = append(s.buf, c)
}

// end closes a top-level member, keeping it if it is the id or the method.
func (s *memberScanner) end() {
	if !s.atKey && !s.nested && !s.over {
		switch s.key {
		case "id":
			s.id = append(s.id[:0], s.buf...)
		case "method":
			s.method = append(s.method[:0], s.buf...)
		}
	}
	s.key, s.nested, s.over = "", false, false
}

func (s *memberScanner) result(size int) *oversize {
	o := &oversize{Size: size}
	var v any
	if len(s.id) > 0 && json.Unmarshal(s.id, &v) == nil {
		if id, err := jsonrpc.MakeID(v); err == nil {
			o.ID = id
		}
	}
	var m string
	if len(s.method) > 0 && json.Unmarshal(s.method, &m) == nil {
		o.Method = m
	}
	return o
}
