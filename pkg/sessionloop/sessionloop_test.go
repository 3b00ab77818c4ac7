package sessionloop

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"testing/iotest"
	"time"

	"github.com/govkit/govkit/pkg/analytics"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/receipt"
)

// These tests depend on the reducer only for what DESIGN §13 fixes: an
// invalid line gets an error effect {type:error, seq, code, detail} and
// effects carry seq. Everything else is the driver's.

var fixedNow = time.Date(2025, 3, 4, 5, 6, 7, 8000, time.FixedZone("x", 3600))

// zeros is a deterministic Rand.
type zeros struct{}

func (zeros) Read(p []byte) (int, error) { clear(p); return len(p), nil }

func testConfig(t *testing.T) Config {
	return Config{Now: func() time.Time { return fixedNow }, Rand: zeros{}, Dir: t.TempDir()}
}

// effects parses out's lines.
func effects(t *testing.T, out []byte) []map[string]any {
	t.Helper()
	var efs []map[string]any
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 4<<20)
	for sc.Scan() {
		var m map[string]any
		if err := json.Unmarshal(sc.Bytes(), &m); err != nil {
			t.Fatalf("output line %q: %v", sc.Text(), err)
		}
		efs = append(efs, m)
	}
	return efs
}

func run(t *testing.T, cfg Config, in string) []map[string]any {
	t.Helper()
	var out bytes.Buffer
	if err := Run(context.Background(), cfg, strings.NewReader(in), &out); err != nil {
		t.Fatalf("Run: %v", err)
	}
	return effects(t, out.Bytes())
}

// TestDriverErrors: lines the driver itself refuses get an error effect
// with the code, in sequence, and the loop goes on.
func TestDriverErrors(t *testing.T) {
	long := `{"type":"final","text":"` + strings.Repeat("x", session.MaxLine) + `"}`
	tests := []struct {
		name, in string
		code     string
		detail   string
	}{
		{"too long", long + "\n", session.ErrLineTooLong, "line 1 is longer than 1048576 bytes"},
		{"at", `{"type":"final","text":"x","at":"2025-01-01T00:00:00Z"}` + "\n", session.ErrReservedField, "field at is stamped by gate session"},
		{"seed", `{"type":"session_start","session_id":"s","seed":"00"}` + "\n", session.ErrReservedField, "field seed is stamped"},
		{"connection", `{"type":"session_start","session_id":"s","server_connection_id":"c"}` + "\n", session.ErrReservedField, "field server_connection_id is stamped"},
		{"realpath", `{"type":"session_start","session_id":"s","workspace_realpath":"/"}` + "\n", session.ErrReservedField, "field workspace_realpath is stamped"},
		{"not json", "{nope\n", session.ErrInvalidJSON, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			efs := run(t, testConfig(t), tt.in+"\n  \r\n\n")
			if len(efs) != 1 {
				t.Fatalf("%d effects, want 1: %v", len(efs), efs)
			}
			ef := efs[0]
			if ef["type"] != "error" || ef["seq"] != 1.0 || ef["code"] != tt.code || !strings.Contains(ef["detail"].(string), tt.detail) {
				t.Fatalf("effect %v, want error %s %q", ef, tt.code, tt.detail)
			}
		})
	}
}

// TestLineReader: lines split across reads, \r\n, a last line without a
// newline, and lines over the bound, which are skipped without being held.
func TestLineReader(t *testing.T) {
	tests := []struct {
		in   string
		want []string // "!" = too long
	}{
		{"a\nbb\r\n\nccc", []string{"a", "bb", "", "ccc"}},
		{"12345678\n123456789\nok\n", []string{"12345678", "!", "ok"}},
		{"1234567890123\nok", []string{"!", "ok"}},
		{"123456789", []string{"!"}},
		{"1234567\r\n", []string{"1234567"}},
		{"", nil},
	}
	for _, tt := range tests {
		for _, oneByte := range []bool{false, true} {
			var in io.Reader = strings.NewReader(tt.in)
			if oneByte {
				in = iotest.OneByteReader(in)
			}
			lr := newSyncLineReader(in, 8, 5)
			if !oneByte {
				lr = newLineReaderSize(in, 8, 5)
			}
			var got []string
			for {
				line, tooLong, err := lr.next(context.Background(), func() error { return nil })
				if err == io.EOF {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				if tooLong {
					got = append(got, "!")
				} else {
					got = append(got, string(line))
				}
				if len(lr.carry) > 9 {
					t.Fatalf("%q: holds %d bytes of a line", tt.in, len(lr.carry))
				}
			}
			lr.stop()
			if strings.Join(got, "|") != strings.Join(tt.want, "|") || lr.n != len(tt.want) {
				t.Errorf("%q (one byte %t): lines %q (n=%d), want %q", tt.in, oneByte, got, lr.n, tt.want)
			}
		}
	}
}

// TestLineTooLongIsNotBuffered: a 40 MiB line costs no more memory than
// the bound.
func TestLineTooLongIsNotBuffered(t *testing.T) {
	in := io.MultiReader(io.LimitReader(repeat('x'), 40<<20), strings.NewReader("\nnext\n"))
	lr := newLineReader(in, session.MaxLine)
	defer lr.stop()
	_, tooLong, err := lr.next(context.Background(), func() error { return nil })
	if err != nil || !tooLong {
		t.Fatalf("next = %t, %v; want too long", tooLong, err)
	}
	if cap(lr.carry) > 2*session.MaxLine+chunkSize {
		t.Fatalf("held %d bytes", cap(lr.carry))
	}
	line, _, _ := lr.next(context.Background(), func() error { return nil })
	if string(line) != "next" {
		t.Fatalf("then %q", line)
	}
}

type repeat byte

func (r repeat) Read(p []byte) (int, error) {
	for i := range p {
		p[i] = byte(r)
	}
	return len(p), nil
}

// TestStamp: the driver's fields, from its clock, its randomness and the
// workspace's real path (S-02, S-03; seed 001 REQ-BED-001).
func TestStamp(t *testing.T) {
	cfg := testConfig(t)
	real := filepath.Join(cfg.Dir, "real")
	if err := os.Mkdir(real, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.Symlink(real, filepath.Join(cfg.Dir, "link")); err != nil {
		t.Fatal(err)
	}
	d := newDriver(cfg, io.Discard)
	ev := session.Event{Type: session.EvSessionStart, SessionID: "s", WorkspaceRoot: "link/"}
	if err := d.stamp(&ev); err != nil {
		t.Fatal(err)
	}
	if ev.At != "2025-03-04T04:06:07.000008Z" {
		t.Errorf("at %q", ev.At)
	}
	if ev.Seed != strings.Repeat("0", 64) {
		t.Errorf("seed %q", ev.Seed)
	}
	if ev.ServerConnectionID != "00000000-0000-4000-8000-000000000000" {
		t.Errorf("server_connection_id %q", ev.ServerConnectionID)
	}
	wantReal, _ := filepath.EvalSymlinks(real)
	if ev.WorkspaceRealpath != wantReal {
		t.Errorf("workspace_realpath %q, want %q", ev.WorkspaceRealpath, wantReal)
	}
	// One connection, one connection id; other events get only the time.
	d.cfg.Rand = repeat(0xff)
	ev2 := session.Event{Type: session.EvSessionStart}
	ev3 := session.Event{Type: session.EvFinal}
	if err := errors.Join(d.stamp(&ev2), d.stamp(&ev3)); err != nil {
		t.Fatal(err)
	}
	if ev2.ServerConnectionID != ev.ServerConnectionID || ev2.Seed != strings.Repeat("f", 64) {
		t.Errorf("second session_start: connection %q seed %q", ev2.ServerConnectionID, ev2.Seed)
	}
	wantDir, _ := filepath.EvalSymlinks(cfg.Dir)
	if ev2.WorkspaceRealpath != wantDir {
		t.Errorf("no workspace_root: %q, want the working directory %q", ev2.WorkspaceRealpath, wantDir)
	}
	if ev3.At == "" || ev3.Seed != "" || ev3.ServerConnectionID != "" || ev3.WorkspaceRealpath != "" {
		t.Errorf("final stamped %+v", ev3)
	}
	id, _ := newUUID(repeat(0xff))
	if id != "ffffffff-ffff-4fff-bfff-ffffffffffff" {
		t.Errorf("uuid %s", id)
	}
}

// TestRealpath: two spellings of one directory are one path (S-03).
func TestRealpath(t *testing.T) {
	dir := t.TempDir()
	dir, _ = filepath.EvalSymlinks(dir)
	home := filepath.Join(dir, "home")
	for _, p := range []string{filepath.Join(dir, "ws"), filepath.Join(home, "proj")} {
		if err := os.MkdirAll(p, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(filepath.Join(dir, "ws"), filepath.Join(dir, "alias")); err != nil {
		t.Fatal(err)
	}
	t.Setenv("HOME", home)
	tests := []struct{ root, want string }{
		{"", dir},
		{".", dir},
		{"ws", dir + "/ws"},
		{"./ws/", dir + "/ws"},
		{dir + "//ws/../ws", dir + "/ws"},
		{"alias", dir + "/ws"},
		{dir + "/alias/sub/../missing/x", dir + "/ws/missing/x"},
		{"~", home},
		{"~/proj", home + "/proj"},
		{"~other", dir + "/~other"},
	}
	for _, tt := range tests {
		got, err := Realpath(tt.root, dir)
		if err != nil || got != tt.want {
			t.Errorf("Realpath(%q) = %q, %v; want %q", tt.root, got, err, tt.want)
		}
	}
}

// TestFlush: a runtime that waits for each answer before it sends the next
// event gets it (the pipe would deadlock otherwise); a stream already
// buffered is written in one go.
func TestFlush(t *testing.T) {
	inR, inW := io.Pipe()
	outR, outW := io.Pipe()
	done := make(chan error, 1)
	go func() { done <- Run(context.Background(), testConfig(t), inR, outW); outW.Close() }()
	answers := bufio.NewReader(outR)
	for i := range 3 {
		if _, err := io.WriteString(inW, "{bad\n"); err != nil {
			t.Fatal(err)
		}
		line, err := answers.ReadString('\n')
		if err != nil || !strings.Contains(line, `"seq":`+string(rune('1'+i))) {
			t.Fatalf("answer %d: %q, %v", i, line, err)
		}
	}
	inW.Close()
	if err := <-done; err != nil {
		t.Fatal(err)
	}

	var w countingWriter
	if err := Run(context.Background(), testConfig(t), strings.NewReader(strings.Repeat("{bad\n", 100)), &w); err != nil {
		t.Fatal(err)
	}
	if w.writes != 1 {
		t.Fatalf("%d writes for 100 buffered lines, want 1", w.writes)
	}
}

type countingWriter struct{ writes int }

func (w *countingWriter) Write(p []byte) (int, error) { w.writes++; return len(p), nil }

type brokenPipe struct{}

func (brokenPipe) Write([]byte) (int, error) { return 0, syscall.EPIPE }

func TestWriteError(t *testing.T) {
	err := Run(context.Background(), testConfig(t), strings.NewReader("{bad\n"), brokenPipe{})
	var we *WriteError
	if !errors.As(err, &we) || !errors.Is(err, syscall.EPIPE) {
		t.Fatalf("Run = %v, want a *WriteError wrapping EPIPE", err)
	}
}

// TestRunEndsWithContext: a read that never returns does not keep Run.
func TestRunEndsWithContext(t *testing.T) {
	r, w := io.Pipe()
	defer w.Close()
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := Run(ctx, testConfig(t), r, io.Discard); !errors.Is(err, context.Canceled) {
		t.Fatalf("Run = %v", err)
	}
}

// sinkFunc is a ReceiptSink.
type sinkFunc func(*receipt.Receipt)

func (f sinkFunc) Receipt(r *receipt.Receipt) { f(r) }

// TestEffectRouting: metric effects reach the counters and the analytics
// queue, stabilization effects the queue, receipts the sink.
func TestEffectRouting(t *testing.T) {
	cfg := testConfig(t)
	cfg.Metrics = NewMetrics(nil)
	cfg.Analytics = analytics.NewQueue(10)
	var got []string
	cfg.Receipts = sinkFunc(func(r *receipt.Receipt) { got = append(got, r.ReceiptID) })
	var out bytes.Buffer
	d := newDriver(cfg, &out)
	labels := map[string]string{"state": "VERIFYING"}
	efs := []session.Effect{
		{Type: session.EfMetric, Seq: 1, Name: "govkit_session_fsm_final_block_total", Labels: labels},
		{Type: session.EfReceipt, Seq: 2, CallID: "c1", Receipt: &receipt.Receipt{ReceiptID: "r1"}},
		{Type: session.EfStabilization, Seq: 3, CallID: "c1"},
		{Type: session.EfError, Seq: 4, Code: "X"},
	}
	for i := range efs {
		if err := d.effect(&efs[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := d.flush(); err != nil {
		t.Fatal(err)
	}
	if n := len(effects(t, out.Bytes())); n != 4 {
		t.Fatalf("%d lines out", n)
	}
	if strings.Join(got, ",") != "r1" {
		t.Fatalf("receipts %v", got)
	}
	if v := counterValue(t, cfg.Metrics, "govkit_session_fsm_final_block_total", labels); v != 1 {
		t.Fatalf("counter = %v", v)
	}
	if cfg.Analytics.Len() != 2 {
		t.Fatalf("analytics queue holds %d", cfg.Analytics.Len())
	}
	labels["state"] = "changed" // the reducer's map is not kept
	cfg.Analytics.Close()
	var types []string
	cfg.Analytics.Run(context.Background(), func(b []analytics.Event) error {
		for _, ev := range b {
			types = append(types, ev.Type)
			if ev.Labels != nil && ev.Labels["state"] != "VERIFYING" {
				t.Errorf("analytics labels %v", ev.Labels)
			}
		}
		return nil
	})
	if strings.Join(types, ",") != "metric,stabilization" {
		t.Fatalf("analytics %v", types)
	}
}
