package classify

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strings"
	"unicode/utf8"
)

// MaxRecordBytes bounds one command read from standard input (DESIGN §3:
// bounded reads, 1 MiB per line).
const MaxRecordBytes = 1 << 20

var errEndOfInput = errors.New("end of input")

// recordReader splits standard input into commands: lines, or NUL-separated
// records with --null. It never holds more than one record of at most
// MaxRecordBytes (plus its read buffer) in memory.
type recordReader struct {
	r     *bufio.Reader
	delim byte
	unit  string // "line" or "record", for error messages
	n     int    // number of the record last returned, counting blank ones
	buf   []byte
}

func newRecordReader(r io.Reader, null bool) *recordReader {
	rr := &recordReader{r: bufio.NewReaderSize(r, 64<<10), delim: '\n', unit: "line"}
	if null {
		rr.delim, rr.unit = 0, "record"
	}
	return rr
}

// ready reports whether a whole record is already buffered, so that next
// will not block on the underlying reader.
func (rr *recordReader) ready() bool {
	n := rr.r.Buffered()
	if n == 0 {
		return false
	}
	b, _ := rr.r.Peek(n)
	return bytes.IndexByte(b, rr.delim) >= 0
}

// next returns the next record without its delimiter; a last record without
// a delimiter counts. It returns errEndOfInput after the last record, and an
// error naming the record's number for an over-long record, invalid UTF-8 or
// a read failure. The returned slice is valid until the next call.
func (rr *recordReader) next() ([]byte, error) {
	rr.n++
	rr.buf = rr.buf[:0]
	for {
		chunk, err := rr.r.ReadSlice(rr.delim)
		size := len(rr.buf) + len(chunk)
		if err == nil {
			size-- // the delimiter
		}
		if size > MaxRecordBytes {
			return nil, fmt.Errorf("%s %d: longer than %d bytes (1 MiB)", rr.unit, rr.n, MaxRecordBytes)
		}
		rr.buf = append(rr.buf, chunk...)
		switch {
		case err == nil:
			return rr.check(rr.buf[:len(rr.buf)-1])
		case errors.Is(err, bufio.ErrBufferFull):
			continue
		case errors.Is(err, io.EOF):
			if len(rr.buf) == 0 {
				return nil, errEndOfInput
			}
			return rr.check(rr.buf)
		default:
			return nil, fmt.Errorf("%s %d: reading standard input: %v", rr.unit, rr.n, err)
		}
	}
}

func (rr *recordReader) check(rec []byte) ([]byte, error) {
	if !utf8.Valid(rec) {
		// Report where, never echo the bytes (DESIGN §3).
		i := 0
		for i < len(rec) {
			r, size := utf8.DecodeRune(rec[i:])
			if r == utf8.RuneError && size <= 1 {
				break
			}
			i += size
		}
		return nil, fmt.Errorf("%s %d: invalid utf-8 at byte %d", rr.unit, rr.n, i+1)
	}
	return rec, nil
}

// stringBlock is the size of the blocks recordStrings cuts strings from.
const stringBlock = 64 << 10

// recordStrings turns records into the strings the classifier takes, cut
// from 64 KiB blocks instead of one allocation per command (issue 14: per
// line, batch mode allocates only what a result keeps). A strings.Builder
// never changes bytes it has returned from String, so each string stays
// valid after the block fills up and a new one starts.
type recordStrings struct{ block strings.Builder }

func (rs *recordStrings) text(rec []byte) string {
	if rs.block.Cap()-rs.block.Len() < len(rec) {
		rs.block.Reset()
		rs.block.Grow(max(stringBlock, len(rec)))
	}
	start := rs.block.Len()
	rs.block.Write(rec)
	return rs.block.String()[start:]
}
