package stream

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"
)

func item(seq int64) Item {
	return Item{Seq: seq, Line: fmt.Appendf(nil, `{"seq":%d}`, seq)}
}

func TestHubDeliversInOrder(t *testing.T) {
	h := NewHub(8, 0)
	s := h.Subscribe()
	h.Publish([]Item{item(1), item(2)})
	h.Publish([]Item{item(3)})
	for want := int64(1); want <= 3; want++ {
		if got := (<-s.C).Seq; got != want {
			t.Fatalf("got seq %d, want %d", got, want)
		}
	}
	if h.LastSeq() != 3 || h.Subscribers() != 1 {
		t.Fatalf("LastSeq %d Subscribers %d, want 3 1", h.LastSeq(), h.Subscribers())
	}
	h.Unsubscribe(s)
	h.Unsubscribe(s) // twice is fine
	if _, ok := <-s.C; ok || s.Dropped() {
		t.Fatal("unsubscribed channel not closed, or marked dropped")
	}
}

// A full subscriber is dropped whole: it never gets part of a batch, and
// Publish never waits for it.
func TestHubDropsSlowSubscriber(t *testing.T) {
	h := NewHub(4, 0)
	slow, fast := h.Subscribe(), h.Subscribe()
	h.Publish([]Item{item(1), item(2), item(3)})
	for range 3 {
		<-fast.C
	}
	done := make(chan struct{})
	go func() {
		h.Publish([]Item{item(4), item(5)}) // slow has room for 1
		close(done)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("Publish blocked on a slow subscriber")
	}
	var got []int64
	for it := range slow.C {
		got = append(got, it.Seq)
	}
	if fmt.Sprint(got) != "[1 2 3]" || !slow.Dropped() {
		t.Fatalf("slow got %v dropped=%v, want [1 2 3] and dropped", got, slow.Dropped())
	}
	if (<-fast.C).Seq != 4 || h.Dropped() != 1 || h.Subscribers() != 1 {
		t.Fatal("fast subscriber lost events, or counts are wrong")
	}
	h.Close()
	if h.Subscribe() != nil {
		t.Fatal("Subscribe after Close returned a subscription")
	}
}

func TestParseRequest(t *testing.T) {
	for _, tc := range []struct {
		line string
		want int64
		err  string
	}{
		{`{"subscribe":{"since_seq":42}}`, 42, ""},
		{` {"subscribe":{"since_seq":0}} `, 0, ""},
		{`{"subscribe":{}}`, 0, "want"},
		{`{"subscribe":{"since_seq":-1}}`, 0, "negative"},
		{`{"subscribe":{"since_seq":1},"x":1}`, 0, "unknown field"},
		{`{"subscribe":{"since_seq":"1"}}`, 0, "bad subscribe"},
		{`{"subscribe":{"since_seq":1}} {}`, 0, "more than one"},
		{`nope`, 0, "bad subscribe"},
	} {
		got, err := ParseRequest([]byte(tc.line))
		if tc.err == "" && (err != nil || got != tc.want) {
			t.Errorf("%s: got %d, %v; want %d", tc.line, got, err, tc.want)
		}
		if tc.err != "" && (err == nil || !strings.Contains(err.Error(), tc.err)) {
			t.Errorf("%s: error %v, want one containing %q", tc.line, err, tc.err)
		}
	}
}

// shortDir returns a directory under /tmp with a short name: t.TempDir's
// paths can exceed the socket path limit.
func shortDir(t *testing.T) string {
	dir, err := os.MkdirTemp("/tmp", "gk")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	return dir
}

func TestListen(t *testing.T) {
	dir := shortDir(t)

	t.Run("mode 0600, removed on close", func(t *testing.T) {
		path := filepath.Join(dir, "a.sock")
		l, err := Listen(path)
		if err != nil {
			t.Fatal(err)
		}
		fi, err := os.Lstat(path)
		if err != nil || fi.Mode().Perm() != 0o600 || fi.Mode().Type() != os.ModeSocket {
			t.Fatalf("socket mode %v, %v; want a socket with 0600", fi.Mode(), err)
		}
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "in use") {
			t.Fatalf("second Listen: %v, want in use", err)
		}
		l.Close()
		if _, err := os.Lstat(path); !os.IsNotExist(err) {
			t.Fatalf("socket still there after Close: %v", err)
		}
	})

	t.Run("stale socket is replaced", func(t *testing.T) {
		path := filepath.Join(dir, "b.sock")
		l, err := net.ListenUnix("unix", &net.UnixAddr{Name: path, Net: "unix"})
		if err != nil {
			t.Fatal(err)
		}
		l.SetUnlinkOnClose(false)
		l.Close() // leaves the file, like a crashed daemon
		l2, err := Listen(path)
		if err != nil {
			t.Fatalf("Listen over a stale socket: %v", err)
		}
		l2.Close()
	})

	t.Run("regular file is never removed", func(t *testing.T) {
		path := filepath.Join(dir, "audit.db")
		os.WriteFile(path, []byte("precious"), 0o600)
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "not a socket") {
			t.Fatalf("Listen on a regular file: %v, want refusal", err)
		}
		if b, _ := os.ReadFile(path); string(b) != "precious" {
			t.Fatal("the regular file was touched")
		}
	})

	t.Run("path too long", func(t *testing.T) {
		path := "/tmp/" + strings.Repeat("x", 120)
		if _, err := Listen(path); err == nil || !strings.Contains(err.Error(), "limit") {
			t.Fatalf("Listen on a long path: %v", err)
		}
	})
}

// memLog is a committed log in memory, for the server's replay.
type memLog struct {
	mu    sync.Mutex
	items []Item
	hub   *Hub
}

func (m *memLog) commit(n int) {
	m.mu.Lock()
	var batch []Item
	for range n {
		it := item(int64(len(m.items) + 1))
		m.items = append(m.items, it)
		batch = append(batch, it)
	}
	m.mu.Unlock()
	m.hub.Publish(batch) // after "commit", as auditd's writer does
}

func (m *memLog) replay(ctx context.Context, after int64, fn func(Item) error) error {
	m.mu.Lock()
	items := append([]Item(nil), m.items...)
	m.mu.Unlock()
	for _, it := range items {
		if it.Seq > after {
			if err := fn(it); err != nil {
				return err
			}
		}
	}
	return nil
}

func startServer(t *testing.T, buffer int) (*memLog, string, *Server) {
	return startServerWith(t, buffer, nil)
}

// startServerWith is startServer with edit applied to the server's Config.
func startServerWith(t *testing.T, buffer int, edit func(*Config)) (*memLog, string, *Server) {
	log := &memLog{hub: NewHub(buffer, 0)}
	path := filepath.Join(shortDir(t), "s.sock")
	l, err := Listen(path)
	if err != nil {
		t.Fatal(err)
	}
	cfg := Config{Hub: log.hub, Replay: log.replay, RequestWait: 50 * time.Millisecond}
	if edit != nil {
		edit(&cfg)
	}
	srv := NewServer(cfg)
	go srv.Serve(l)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		srv.Shutdown(ctx)
		log.hub.Close()
	})
	return log, path, srv
}

// waitSubscribers waits up to 10 seconds for h to have n live
// subscribers.
func waitSubscribers(t *testing.T, h *Hub, n int) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for h.Subscribers() != n {
		if time.Now().After(deadline) {
			t.Fatalf("%d subscribers after 10s, want %d", h.Subscribers(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func readSeqs(t *testing.T, sc *bufio.Scanner, n int) []int64 {
	t.Helper()
	var out []int64
	for len(out) < n && sc.Scan() {
		var v struct {
			Seq   int64  `json:"seq"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil || v.Error != "" {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		out = append(out, v.Seq)
	}
	return out
}

func want(from, to int64) string {
	var s []int64
	for i := from; i <= to; i++ {
		s = append(s, i)
	}
	return fmt.Sprint(s)
}

// Replay then live, with commits racing the subscription: no gap, no
// duplicate.
func TestServerReplayThenLive(t *testing.T) {
	log, path, _ := startServer(t, 0)
	log.commit(30)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintln(conn, `{"subscribe":{"since_seq":10}}`)
	done := make(chan struct{})
	go func() {
		defer close(done)
		for range 50 {
			log.commit(3)
		}
	}()
	sc := bufio.NewScanner(conn)
	got := readSeqs(t, sc, 20+150)
	<-done
	if fmt.Sprint(got) != want(11, 180) {
		t.Fatalf("got %v", got)
	}
}

// A subscriber that sends nothing gets what is committed after it
// connected.
func TestServerLiveOnly(t *testing.T) {
	log, path, _ := startServer(t, 0)
	log.commit(5)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Wait until the server has taken the connection's starting point
	// and subscribed (it takes the point before it reads the request).
	waitSubscribers(t, log.hub, 1)
	log.commit(3)
	got := readSeqs(t, bufio.NewScanner(conn), 3)
	if fmt.Sprint(got) != want(6, 8) {
		t.Fatalf("got %v", got)
	}
}

func TestServerBadRequest(t *testing.T) {
	_, path, _ := startServer(t, 0)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintln(conn, `{"subscribe":{"since_seq":-4}}`)
	line, err := bufio.NewReader(conn).ReadString('\n')
	if err != nil || !strings.Contains(line, `"error":"bad subscribe request: since_seq must not be negative"`) {
		t.Fatalf("got %q, %v", line, err)
	}
}

// A subscriber that stops reading is dropped with an error line, and the
// publisher never waits for it. No clock is asserted: the write timeout is
// an hour, so the drop cannot come from a write that timed out, and the hub
// counting it (Dropped) means the publisher dropped it itself, with a full
// channel, within the loop. A publisher that waited would hang the test
// (go test's -timeout reports it) instead of finishing it.
func TestServerDropsStalledSubscriber(t *testing.T) {
	log, path, _ := startServerWith(t, 16, func(c *Config) { c.WriteTimeout = time.Hour })
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintln(conn, `{"subscribe":{"since_seq":0}}`)
	waitSubscribers(t, log.hub, 1)
	// Lines are ~12 bytes: enough to fill the socket buffers and then the
	// 16-event channel.
	for range 20000 {
		log.commit(10)
		if log.hub.Dropped() == 1 {
			break
		}
	}
	if log.hub.Dropped() != 1 {
		t.Fatal("stalled subscriber was not dropped")
	}
	// Now read: events in order, then the error line, then EOF.
	sc := bufio.NewScanner(conn)
	var last int64
	var errLine string
	for sc.Scan() {
		var v struct {
			Seq   int64  `json:"seq"`
			Error string `json:"error"`
		}
		if err := json.Unmarshal(sc.Bytes(), &v); err != nil {
			t.Fatal(err)
		}
		if v.Error != "" {
			errLine = v.Error
			continue
		}
		if v.Seq != last+1 {
			t.Fatalf("seq %d after %d", v.Seq, last)
		}
		last = v.Seq
	}
	if !strings.Contains(errLine, "too slow") || !strings.Contains(errLine, fmt.Sprintf(`"since_seq":%d`, last)) {
		t.Fatalf("error line %q after seq %d", errLine, last)
	}
}

func TestServerShutdownEndsSubscribers(t *testing.T) {
	log, path, srv := startServer(t, 0)
	conn, err := net.Dial("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	fmt.Fprintln(conn, `{"subscribe":{"since_seq":0}}`)
	log.commit(2)
	sc := bufio.NewScanner(conn)
	if got := readSeqs(t, sc, 2); fmt.Sprint(got) != want(1, 2) {
		t.Fatalf("got %v", got)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	if !sc.Scan() || !strings.Contains(sc.Text(), "shutting down") {
		t.Fatalf("last line %q, want the shutdown error", sc.Text())
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Fatalf("socket file left after Shutdown: %v", err)
	}
}
