package sessionloop

import (
	"bytes"
	"context"
	"io"
)

// chunkSize is one read from the input; chunks is how many reads may be
// ahead of the loop.
const (
	chunkSize = 64 << 10
	chunks    = 4
)

type chunk struct {
	buf []byte
	n   int
	err error
}

// lineReader splits its input into lines of at most max bytes. A goroutine
// reads ahead into a few fixed buffers, so that the loop can tell "no line
// is ready" (flush now: the runtime waits for its answer) from "more lines
// are coming" (keep batching), and can stop on ctx while a read blocks.
// A longer line is reported as too long and skipped up to its newline;
// at most max bytes of it are ever held.
type lineReader struct {
	max    int
	ready  chan chunk
	free   chan []byte
	quit   chan struct{}
	buf    []byte // the chunk being split, returned to free once split
	rest   []byte // its bytes not split yet
	carry  []byte // the start of a line that spans chunks
	sent   bool   // carry was returned as a line: reset it first
	skip   bool   // inside a line too long: drop up to its newline
	err    error  // the input's end (io.EOF) or failure, once rest is split
	n      int    // lines returned so far
	closed bool
	src    io.Reader // read on the caller's goroutine instead (newSyncLineReader)
}

func newLineReader(in io.Reader, max int) *lineReader {
	return newLineReaderSize(in, max, chunkSize)
}

// newLineReaderSize reads in chunks of size bytes (tests use small ones).
func newLineReaderSize(in io.Reader, max, size int) *lineReader {
	r := &lineReader{max: max, ready: make(chan chunk, chunks), free: make(chan []byte, chunks), quit: make(chan struct{})}
	for range chunks {
		r.free <- make([]byte, size)
	}
	go r.read(in)
	return r
}

// newSyncLineReader reads in on the caller's goroutine: for a file, where
// nothing waits on a runtime (Replay), and for deterministic fuzzing.
func newSyncLineReader(in io.Reader, max, size int) *lineReader {
	r := &lineReader{max: max, src: in, free: make(chan []byte, 1), quit: make(chan struct{})}
	r.free <- make([]byte, size)
	return r
}

// read runs on its own goroutine until the input ends or stop. A read
// blocked in in.Read outlives stop until it returns: stdin's does at the
// process's exit.
func (r *lineReader) read(in io.Reader) {
	for {
		var buf []byte
		select {
		case buf = <-r.free:
		case <-r.quit:
			return
		}
		n, err := in.Read(buf)
		if n == 0 && err == nil {
			r.free <- buf
			continue
		}
		r.ready <- chunk{buf, n, err} // never blocks: there are as many slots as buffers
		if err != nil {
			return
		}
	}
}

func (r *lineReader) stop() {
	if !r.closed {
		r.closed = true
		close(r.quit)
	}
}

// next returns the next line without its newline (and without a trailing
// \r), or tooLong for a line over max, or io.EOF at the end. The line is
// valid until the next call. Before it waits for input it calls idle.
func (r *lineReader) next(ctx context.Context, idle func() error) (line []byte, tooLong bool, err error) {
	if r.sent {
		r.carry, r.sent = r.carry[:0], false
	}
	for {
		if len(r.rest) > 0 {
			if i := bytes.IndexByte(r.rest, '\n'); i >= 0 {
				seg := r.rest[:i]
				r.rest = r.rest[i+1:]
				return r.end(seg)
			}
			r.hold(r.rest)
			r.rest = nil
		}
		if r.buf != nil {
			r.free <- r.buf
			r.buf = nil
		}
		if r.err != nil {
			if r.skip || len(r.carry) > 0 {
				// The last line has no newline: it is a line all the same.
				return r.end(nil)
			}
			return nil, false, r.err
		}
		var c chunk
		if r.src != nil {
			if err := ctx.Err(); err != nil {
				return nil, false, err
			}
			c.buf = <-r.free
			c.n, c.err = r.src.Read(c.buf)
		} else {
			if len(r.ready) == 0 {
				if err := idle(); err != nil {
					return nil, false, err
				}
			}
			select {
			case <-ctx.Done():
				return nil, false, ctx.Err()
			case c = <-r.ready:
			}
		}
		r.buf, r.rest = c.buf, c.buf[:c.n]
		if c.err != nil {
			r.err = c.err
		}
	}
}

// hold keeps the start of a line that goes on in the next chunk, unless
// the line is already too long.
func (r *lineReader) hold(b []byte) {
	if r.skip {
		return
	}
	if len(r.carry)+len(b) > r.max+1 { // +1: a \r before the newline
		r.skip, r.carry = true, r.carry[:0]
		return
	}
	r.carry = append(r.carry, b...)
}

// end ends a line whose last segment is seg.
func (r *lineReader) end(seg []byte) ([]byte, bool, error) {
	r.n++
	if r.skip {
		r.skip = false
		return nil, true, nil
	}
	line := seg
	if len(r.carry) > 0 {
		r.hold(seg)
		if r.skip {
			r.skip = false
			return nil, true, nil
		}
		line, r.sent = r.carry, true
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	if len(line) > r.max {
		return nil, true, nil
	}
	return line, false, nil
}
