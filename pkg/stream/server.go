package stream

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"github.com/govkit/govkit/pkg/govapi"
	"io"
	"io/fs"
	"net"
	"os"
	"sync"
	"syscall"
	"time"
)

// MaxSocketPath is the longest socket path Listen accepts: sun_path holds 108
// bytes on Linux including the terminating NUL, and fewer on other systems.
const MaxSocketPath = 103

// maxRequestLine bounds the subscriber's one request line.
const maxRequestLine = 4 << 10

// ReplayFunc calls fn, in seq order, for every committed event with
// seq > afterSeq, until fn returns an error (returned as is) or the events
// end. auditd reads them from the store.
type ReplayFunc func(ctx context.Context, afterSeq int64, fn func(Item) error) error

// ParseRequest strictly decodes a subscriber's request line
// (govapi.SubscribeRequest) and returns the seq to replay after.
func ParseRequest(line []byte) (int64, error) {
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	var r govapi.SubscribeRequest
	if err := dec.Decode(&r); err != nil {
		return 0, fmt.Errorf("bad subscribe request: %v", err)
	}
	if dec.More() {
		return 0, errors.New("bad subscribe request: more than one JSON value")
	}
	if r.Subscribe == nil || r.Subscribe.SinceSeq == nil {
		return 0, errors.New(`bad subscribe request: want {"subscribe":{"since_seq":N}}`)
	}
	if *r.Subscribe.SinceSeq < 0 {
		return 0, errors.New("bad subscribe request: since_seq must not be negative")
	}
	return *r.Subscribe.SinceSeq, nil
}

// Config configures a Server.
type Config struct {
	// Hub delivers live events. Required.
	Hub *Hub
	// Replay reads committed events for catch-up. Required.
	Replay ReplayFunc
	// RequestWait is how long a new connection may take to send its
	// subscribe line before it is taken to be live-only (default 250ms).
	RequestWait time.Duration
	// WriteTimeout bounds each write to a subscriber (default 10s): a
	// subscriber that accepts nothing for that long is disconnected.
	WriteTimeout time.Duration
	// MaxSubscribers bounds concurrent connections (default 256).
	MaxSubscribers int
	// Logf reports per-connection problems; nil discards them.
	Logf func(format string, args ...any)
}

// Server serves the event stream on a Unix socket listener.
type Server struct {
	cfg    Config
	ctx    context.Context
	cancel context.CancelFunc

	mu    sync.Mutex
	ln    net.Listener
	conns map[net.Conn]struct{}
	wg    sync.WaitGroup
}

// NewServer returns a server; call Serve to accept subscribers.
func NewServer(cfg Config) *Server {
	if cfg.RequestWait <= 0 {
		cfg.RequestWait = 250 * time.Millisecond
	}
	if cfg.WriteTimeout <= 0 {
		cfg.WriteTimeout = 10 * time.Second
	}
	if cfg.MaxSubscribers <= 0 {
		cfg.MaxSubscribers = 256
	}
	if cfg.Logf == nil {
		cfg.Logf = func(string, ...any) {}
	}
	ctx, cancel := context.WithCancel(context.Background())
	return &Server{cfg: cfg, ctx: ctx, cancel: cancel, conns: map[net.Conn]struct{}{}}
}

// Listen creates the stream socket at path with mode 0600. A stale file at
// path is removed only if it is a socket nobody listens on: a regular file
// (a typo in --socket pointing at the database, say) is never deleted.
func Listen(path string) (*net.UnixListener, error) {
	if path == "" {
		return nil, errors.New("socket path is empty")
	}
	if len(path) > MaxSocketPath {
		return nil, fmt.Errorf("socket path %s is %d bytes long; the limit is %d", path, len(path), MaxSocketPath)
	}
	fi, err := os.Lstat(path)
	switch {
	case err == nil:
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("%s exists and is not a socket; refusing to remove it", path)
		}
		if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
			c.Close()
			return nil, fmt.Errorf("%s is in use: another process is listening on it", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("removing stale socket %s: %v", path, unwrapPathError(err))
		}
	case !errors.Is(err, fs.ErrNotExist):
		return nil, fmt.Errorf("socket %s: %v", path, unwrapPathError(err))
	}
	l, err := listenPrivate(path)
	if err != nil {
		return nil, err
	}
	l.SetUnlinkOnClose(true)
	return l, nil
}

var umaskMu sync.Mutex

// listenPrivate binds path with mode 0600 from the start: the umask covers
// the moment between bind and chmod, in which anyone could connect.
func listenPrivate(path string) (*net.UnixListener, error) {
	umaskMu.Lock()
	old := syscall.Umask(0o177)
	l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
	syscall.Umask(old)
	umaskMu.Unlock()
	if err != nil {
		var oe *net.OpError
		if errors.As(err, &oe) && oe.Err != nil {
			err = oe.Err
		}
		return nil, fmt.Errorf("listening on %s: %v", path, unwrapPathError(err))
	}
	if err := os.Chmod(path, 0o600); err != nil {
		l.Close()
		return nil, fmt.Errorf("socket %s: %v", path, unwrapPathError(err))
	}
	return l, nil
}

// Serve accepts subscribers on ln until Shutdown; it returns nil then.
func (s *Server) Serve(ln net.Listener) error {
	s.mu.Lock()
	if s.ctx.Err() != nil {
		s.mu.Unlock()
		return nil
	}
	s.ln = ln
	s.mu.Unlock()
	for {
		conn, err := ln.Accept()
		if err != nil {
			if s.ctx.Err() != nil {
				return nil
			}
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() {
				time.Sleep(10 * time.Millisecond)
				continue
			}
			return err
		}
		s.mu.Lock()
		if s.ctx.Err() != nil {
			s.mu.Unlock()
			conn.Close()
			return nil
		}
		if len(s.conns) >= s.cfg.MaxSubscribers {
			s.mu.Unlock()
			s.refuse(conn, fmt.Sprintf("too many subscribers (limit %d)", s.cfg.MaxSubscribers))
			continue
		}
		s.conns[conn] = struct{}{}
		s.wg.Add(1)
		s.mu.Unlock()
		go func() {
			defer s.wg.Done()
			s.handle(conn)
			s.mu.Lock()
			delete(s.conns, conn)
			s.mu.Unlock()
			conn.Close()
		}()
	}
}

// Shutdown stops accepting (removing the socket file), ends every
// subscription with an error line, and waits for the connections to finish
// until ctx is done; then it closes them.
func (s *Server) Shutdown(ctx context.Context) error {
	s.mu.Lock()
	s.cancel()
	var err error
	if s.ln != nil {
		err = s.ln.Close()
	}
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
		return err
	case <-ctx.Done():
	}
	s.mu.Lock()
	for c := range s.conns {
		c.Close()
	}
	s.mu.Unlock()
	<-done
	return err
}

func (s *Server) refuse(conn net.Conn, msg string) {
	conn.SetWriteDeadline(time.Now().Add(time.Second))
	conn.Write(errorLine(msg))
	conn.Close()
}

// errorLine is the stream's last line, govapi.StreamEnd, with a newline.
func errorLine(msg string) []byte {
	b, _ := json.Marshal(govapi.StreamEnd{Error: msg})
	return append(b, '\n')
}

// subscriber writes one connection's events.
type subscriber struct {
	s    *Server
	conn net.Conn
	w    *bufio.Writer
	last int64 // seq of the last event written
}

// handle runs one subscriber: read its optional request, replay from the
// store, then deliver live events with no gap and no duplicate.
//
// The order matters. Replaying first and subscribing afterwards would lose
// events committed in between; subscribing first and replaying everything
// would buffer an unbounded backlog. So: replay up to what the store has,
// subscribe, replay again (a few events at most), then take live events,
// skipping those the second replay already sent (dedupe by seq).
func (s *Server) handle(conn net.Conn) {
	// The point in the log this subscriber joins when it sends no request:
	// everything published after it connected.
	since := s.cfg.Hub.LastSeq()
	sub := &subscriber{s: s, conn: conn, w: bufio.NewWriterSize(conn, 32<<10)}

	line, err := readRequest(conn, s.cfg.RequestWait)
	switch {
	case err != nil:
		sub.fail(err.Error())
		return
	case line != nil:
		if since, err = ParseRequest(line); err != nil {
			sub.fail(err.Error())
			return
		}
	}
	sub.last = since

	ctx := s.ctx
	if err := s.cfg.Replay(ctx, sub.last, sub.send); err != nil {
		sub.end(err)
		return
	}
	live := s.cfg.Hub.Subscribe()
	if live == nil {
		sub.end(ctx.Err())
		return
	}
	defer s.cfg.Hub.Unsubscribe(live)
	if err := s.cfg.Replay(ctx, sub.last, sub.send); err != nil {
		sub.end(err)
		return
	}
	if err := sub.flush(); err != nil {
		return
	}
	for {
		select {
		case it, ok := <-live.C:
			if !ok {
				if live.Dropped() {
					sub.fail(fmt.Sprintf("subscriber too slow: more than %d events behind; reconnect with {\"subscribe\":{\"since_seq\":%d}} to resume", cap(live.C), sub.last))
				} else {
					sub.fail("auditd is shutting down")
				}
				return
			}
			if err := sub.send(it); err != nil {
				return
			}
			if len(live.C) == 0 {
				if err := sub.flush(); err != nil {
					return
				}
			}
		case <-ctx.Done():
			// Deliver what was committed before the shutdown began.
			for len(live.C) > 0 {
				if err := sub.send(<-live.C); err != nil {
					return
				}
			}
			sub.fail("auditd is shutting down")
			return
		}
	}
}

// readRequest waits up to wait for the subscriber's first line. It returns
// nil, nil when none came (the subscriber only listens).
func readRequest(conn net.Conn, wait time.Duration) ([]byte, error) {
	conn.SetReadDeadline(time.Now().Add(wait))
	defer conn.SetReadDeadline(time.Time{})
	buf := make([]byte, 0, 256)
	one := make([]byte, 1)
	// Byte by byte: nothing after the newline may be consumed, and the line
	// is tiny.
	for {
		n, err := conn.Read(one)
		if n == 1 {
			if one[0] == '\n' {
				return buf, nil
			}
			if len(buf) >= maxRequestLine {
				return nil, fmt.Errorf("subscribe request longer than %d bytes", maxRequestLine)
			}
			buf = append(buf, one[0])
			continue
		}
		var ne net.Error
		switch {
		case errors.As(err, &ne) && ne.Timeout(), errors.Is(err, io.EOF):
			if len(bytes.TrimSpace(buf)) > 0 {
				// A request without its newline: take it as complete.
				return buf, nil
			}
			return nil, nil
		case err != nil:
			return nil, err
		}
	}
}

func (sub *subscriber) send(it Item) error {
	if it.Seq <= sub.last {
		return nil
	}
	if sub.w.Available() < len(it.Line)+1 {
		if err := sub.flush(); err != nil {
			return err
		}
	}
	sub.w.Write(it.Line)
	sub.w.WriteByte('\n')
	sub.last = it.Seq
	return nil
}

func (sub *subscriber) flush() error {
	if sub.w.Buffered() == 0 {
		return nil
	}
	sub.conn.SetWriteDeadline(time.Now().Add(sub.s.cfg.WriteTimeout))
	return sub.w.Flush()
}

// end reports why a replay stopped, unless the subscriber went away.
func (sub *subscriber) end(err error) {
	if err == nil || sub.s.ctx.Err() != nil {
		sub.fail("auditd is shutting down")
		return
	}
	var ne net.Error
	if errors.As(err, &ne) || errors.Is(err, syscall.EPIPE) || errors.Is(err, net.ErrClosed) {
		return // the subscriber's connection failed: nobody to tell
	}
	sub.s.cfg.Logf("stream: replay for a subscriber failed: %v", err)
	sub.fail("replay failed: " + err.Error())
}

// fail writes what was buffered and an error line, with a short deadline:
// the subscriber may be the one that stopped reading.
func (sub *subscriber) fail(msg string) {
	sub.w.Write(errorLine(msg))
	sub.conn.SetWriteDeadline(time.Now().Add(time.Second))
	sub.w.Flush()
}

func unwrapPathError(err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		return pe.Err
	}
	return err
}
