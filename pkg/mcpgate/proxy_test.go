package mcpgate_test

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/govkit/govkit/pkg/mcpgate"
	"github.com/govkit/govkit/pkg/policy"
	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/receipt"
	"github.com/govkit/govkit/pkg/toolgov"
)

var testKey = []byte("0123456789abcdef0123456789abcdef")

const testConfig = `
mcp:
  tools:
    - name: list
      kind: resolve
      resources: {line: '^(?P<name>\S+)$', join: dir, self: true}
    - name: put
      kind: write
      target_args: [path]
      paths: true
`

// testServer is an in-process SDK server with the tools the edge cases
// need, behind os-like pipes: what gate mcp sees of a child process.
type testServer struct {
	in       *io.PipeReader // the server reads what the proxy writes
	inW      *io.PipeWriter
	out      *io.PipeReader // the proxy reads what the server writes
	outW     *io.PipeWriter
	srv      *mcp.Server
	roots    chan string   // the roots the server listed after roots/list_changed
	canceled chan struct{} // the slow tool saw its context end
}

func newTestServer(t testing.TB) *testServer {
	s := &testServer{roots: make(chan string, 1), canceled: make(chan struct{}, 1)}
	s.in, s.inW = io.Pipe()
	s.out, s.outW = io.Pipe()
	s.srv = mcp.NewServer(&mcp.Implementation{Name: "test", Version: "1"}, &mcp.ServerOptions{
		// Client → server: a notification; then server → client: a
		// request of the server's own (roots/list) that the client answers.
		RootsListChangedHandler: func(ctx context.Context, req *mcp.RootsListChangedRequest) {
			go func() {
				r, err := req.Session.ListRoots(context.Background(), nil)
				got := fmt.Sprint(err)
				if err == nil && len(r.Roots) == 1 {
					got = r.Roots[0].URI
				}
				s.roots <- got
			}()
		},
	})
	text := func(s string) *mcp.CallToolResult {
		return &mcp.CallToolResult{Content: []mcp.Content{&mcp.TextContent{Text: s}}}
	}
	obj := map[string]any{"type": "object"}
	ro := &mcp.ToolAnnotations{ReadOnlyHint: true}
	s.srv.AddTool(&mcp.Tool{Name: "list", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("a.txt\nb.txt"), nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "put", InputSchema: obj},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("written"), nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "cat", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text("line 1\nline 2\n"), nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "big", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			return text(strings.Repeat("x", 200<<10)), nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "slow", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			<-ctx.Done()
			s.canceled <- struct{}{}
			return nil, ctx.Err()
		})
	s.srv.AddTool(&mcp.Tool{Name: "progress", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			if err := req.Session.NotifyProgress(ctx, &mcp.ProgressNotificationParams{
				ProgressToken: req.Params.GetProgressToken(), Progress: 1, Total: 2, Message: "half"}); err != nil {
				return nil, err
			}
			return text("done"), nil
		})
	s.srv.AddTool(&mcp.Tool{Name: "crash", InputSchema: obj, Annotations: ro},
		func(ctx context.Context, req *mcp.CallToolRequest) (*mcp.CallToolResult, error) {
			s.crash()
			<-ctx.Done()
			return nil, ctx.Err()
		})
	s.srv.AddResource(&mcp.Resource{URI: "file:///r.txt", Name: "r"},
		func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
			return &mcp.ReadResourceResult{Contents: []*mcp.ResourceContents{{URI: "file:///r.txt", Text: "resource"}}}, nil
		})
	go func() { _ = s.srv.Run(context.Background(), &mcp.IOTransport{Reader: s.in, Writer: s.outW}) }()
	t.Cleanup(s.crash)
	return s
}

// crash is the server dying: its output ends, its input is gone.
func (s *testServer) crash() {
	s.outW.CloseWithError(io.EOF)
	s.in.CloseWithError(io.ErrClosedPipe)
}

// proxied is a proxy between a client's pipes and s; run's error arrives
// on done.
type proxied struct {
	clientIn  *io.PipeWriter // what the client writes
	clientOut *io.PipeReader // what the client reads
	done      chan error
	log       *syncBuffer
}

func startProxy(t testing.TB, s *testServer, cfg string, mutate func(*mcpgate.Options)) *proxied {
	t.Helper()
	c, err := mcpgate.ParseConfig(strings.NewReader(cfg))
	if err != nil {
		t.Fatal(err)
	}
	p := &proxied{done: make(chan error, 1), log: &syncBuffer{}}
	opts := mcpgate.Options{Config: c, Session: session.Options{ReceiptKey: testKey}, Log: p.log,
		Workspace: "/w", ServerName: "test"}
	if mutate != nil {
		mutate(&opts)
	}
	px, err := mcpgate.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	cr, cw := io.Pipe()
	outR, outW := io.Pipe()
	p.clientIn, p.clientOut = cw, outR
	go func() {
		err := px.Run(context.Background(), cr, outW, s.out, s.inW)
		outW.Close()
		p.done <- err
	}()
	t.Cleanup(func() { cw.Close() })
	return p
}

// connect is an SDK client over the proxy.
func connect(t testing.TB, p *proxied, opts *mcp.ClientOptions) *mcp.ClientSession {
	t.Helper()
	return connectClient(t, p, mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, opts))
}

func connectClient(t testing.TB, p *proxied, c *mcp.Client) *mcp.ClientSession {
	t.Helper()
	cs, err := c.Connect(context.Background(), &mcp.IOTransport{Reader: p.clientOut, Writer: p.clientIn}, nil)
	if err != nil {
		t.Fatal(err)
	}
	return cs
}

func call(t testing.TB, cs *mcp.ClientSession, name string, args map[string]any) *mcp.CallToolResult {
	t.Helper()
	res, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: name, Arguments: args})
	if err != nil {
		t.Fatalf("CallTool %s: %v", name, err)
	}
	return res
}

// envelope is a block's ToolResponse, from its text.
func envelope(t testing.TB, res *mcp.CallToolResult) (code, hint string) {
	t.Helper()
	if !res.IsError || len(res.Content) != 1 {
		t.Fatalf("want one isError content, got %+v", res)
	}
	var env struct {
		OK    bool `json:"ok"`
		Error struct {
			Code    string         `json:"code"`
			Details map[string]any `json:"details"`
		} `json:"error"`
	}
	if err := json.Unmarshal([]byte(res.Content[0].(*mcp.TextContent).Text), &env); err != nil {
		t.Fatal(err)
	}
	hint, _ = env.Error.Details["recovery_hint"].(string)
	return env.Error.Code, hint
}

func receiptOf(t testing.TB, res *mcp.CallToolResult) receipt.Receipt {
	t.Helper()
	b, err := json.Marshal(res.Meta[mcpgate.MetaReceipt])
	if err != nil {
		t.Fatal(err)
	}
	var r receipt.Receipt
	if err := json.Unmarshal(b, &r); err != nil || r.ReceiptID == "" {
		t.Fatalf("no receipt in _meta: %s", b)
	}
	return r
}

func TestProxyGovernsToolCalls(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, nil)
	cs := connect(t, p, nil)

	list, err := cs.ListTools(context.Background(), nil)
	if err != nil {
		t.Fatal(err)
	}
	kinds := map[string]any{}
	for _, tool := range list.Tools {
		kinds[tool.Name] = tool.Meta[mcpgate.MetaKind]
	}
	for name, want := range map[string]string{"list": "resolve", "put": "write", "cat": "read"} {
		if kinds[name] != want {
			t.Errorf("tools/list: %s has _meta %s %v, want %s", name, mcpgate.MetaKind, kinds[name], want)
		}
	}

	// RESOLVING refuses a write: FSM_BLOCKED, as a tool result.
	if code, hint := envelope(t, call(t, cs, "put", map[string]any{"path": "/d/a.txt"})); code != "FSM_BLOCKED" || hint == "" {
		t.Errorf("put in RESOLVING: %s (hint %q), want FSM_BLOCKED with a hint", code, hint)
	}
	res := call(t, cs, "cat", map[string]any{"path": "/d/a.txt"})
	if res.IsError {
		t.Fatalf("cat: %+v", res)
	}
	r := receiptOf(t, res)
	if err := receipt.Verify(r, testKey); err != nil {
		t.Errorf("receipt %s does not verify: %v", r.ReceiptID, err)
	}
	if code, _ := envelope(t, call(t, cs, "put", map[string]any{"path": "/d/a.txt"})); code != "STRICT_RESOLUTION" {
		t.Errorf("put of an undiscovered path: %s, want STRICT_RESOLUTION", code)
	}
	call(t, cs, "list", map[string]any{"dir": "/d"})
	if res := call(t, cs, "put", map[string]any{"path": "/d/a.txt"}); res.IsError {
		t.Errorf("put after list: %+v", res)
	}
	if code, _ := envelope(t, call(t, cs, "put", map[string]any{"path": "/d/b.txt"})); code != "FSM_BLOCKED" {
		t.Errorf("a second write before a read: %s, want FSM_BLOCKED", code)
	}
	call(t, cs, "cat", map[string]any{"path": "/d/a.txt"})
	// A new file in a listed directory: its directory is its target.
	res = call(t, cs, "put", map[string]any{"path": "/d/new.txt"})
	if res.IsError {
		t.Fatalf("put of a new file in a listed directory: %+v", res)
	}
	if r := receiptOf(t, res); !strings.Contains(string(r.Inputs), `"govkit/target":"/d"`) {
		t.Errorf("receipt inputs %s do not name the directory the write was resolved against", r.Inputs)
	}

	// Everything else passes through: resources, ping.
	rl, err := cs.ListResources(context.Background(), nil)
	if err != nil || len(rl.Resources) != 1 {
		t.Fatalf("resources/list: %v %+v", err, rl)
	}
	rr, err := cs.ReadResource(context.Background(), &mcp.ReadResourceParams{URI: "file:///r.txt"})
	if err != nil || rr.Contents[0].Text != "resource" {
		t.Fatalf("resources/read: %v %+v", err, rr)
	}
	if err := cs.Ping(context.Background(), nil); err != nil {
		t.Fatal(err)
	}
	cs.Close()
	if err := <-p.done; err != nil {
		t.Errorf("Run after the client closed: %v", err)
	}
}

func TestProxyRelaysNotificationsBothWays(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, nil)
	progress := make(chan string, 1)
	c := mcp.NewClient(&mcp.Implementation{Name: "client", Version: "1"}, &mcp.ClientOptions{
		ProgressNotificationHandler: func(_ context.Context, req *mcp.ProgressNotificationClientRequest) {
			progress <- req.Params.Message
		},
	})
	cs := connectClient(t, p, c)
	// Client → server: roots/list_changed (a notification). (The server's
	// roots/list that follows is refused by the SDK at protocol 2026-07-28;
	// TestProxyRawMessages relays one at 2025-06-18.)
	c.AddRoots(&mcp.Root{URI: "file:///work"})
	select {
	case <-s.roots:
	case <-time.After(10 * time.Second):
		t.Fatal("the server never got notifications/roots/list_changed")
	}
	// Server → client: a progress notification during a call.
	params := &mcp.CallToolParams{Name: "progress", Arguments: map[string]any{}}
	params.SetProgressToken("tok")
	res, err := cs.CallTool(context.Background(), params)
	if err != nil || res.IsError {
		t.Fatalf("progress: %v %+v", err, res)
	}
	select {
	case m := <-progress:
		if m != "half" {
			t.Errorf("progress message %q", m)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the client never got notifications/progress")
	}
}

func TestProxyServerCrashMidCall(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, nil)
	cs := connect(t, p, nil)
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "crash", Arguments: map[string]any{}})
	if err == nil || !strings.Contains(err.Error(), "exited") {
		t.Errorf("a call the crashed server never answered: %v, want the server's exit", err)
	}
	var gone *mcpgate.ServerGoneError
	if err := <-p.done; !errors.As(err, &gone) || gone.Pending != 1 {
		t.Errorf("Run: %v, want a ServerGoneError with 1 pending request", err)
	}
}

func TestProxyOversizedMessages(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, func(o *mcpgate.Options) { o.MaxMessage = 64 << 10 })
	cs := connect(t, p, nil)
	// From the server: the result is dropped, the call answered isError.
	res := call(t, cs, "big", map[string]any{})
	if code, hint := envelope(t, res); code != "EXECUTION_FAILED" || hint == "" {
		t.Errorf("an oversized result: %s (%q), want EXECUTION_FAILED with a hint", code, hint)
	}
	if !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "exceeds") {
		t.Errorf("the answer does not say the bound was exceeded: %s", res.Content[0].(*mcp.TextContent).Text)
	}
	receiptOf(t, res) // the reducer heard the call failed: a receipt says so
	// From the client: a JSON-RPC error for its id; the session goes on.
	_, err := cs.CallTool(context.Background(), &mcp.CallToolParams{Name: "cat",
		Arguments: map[string]any{"path": strings.Repeat("y", 100<<10)}})
	if err == nil || !strings.Contains(err.Error(), "exceeds the bound") {
		t.Errorf("an oversized request: %v, want a JSON-RPC error naming the bound", err)
	}
	if res := call(t, cs, "cat", map[string]any{"path": "/x"}); res.IsError {
		t.Errorf("the session did not go on after an oversized message: %+v", res)
	}
}

func TestProxyCallTimeout(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, func(o *mcpgate.Options) { o.CallTimeout = 200 * time.Millisecond })
	cs := connect(t, p, nil)
	res := call(t, cs, "slow", map[string]any{})
	if code, _ := envelope(t, res); code != "EXECUTION_FAILED" || !strings.Contains(res.Content[0].(*mcp.TextContent).Text, "timed out") {
		t.Errorf("a call past --call-timeout: %+v", res)
	}
	select {
	case <-s.canceled:
	case <-time.After(10 * time.Second):
		t.Fatal("the server was never told to cancel the call")
	}
}

// TestProxyRawMessages drives the proxy with raw lines: what an SDK client
// never sends.
func TestProxyRawMessages(t *testing.T) {
	s := newTestServer(t)
	p := startProxy(t, s, testConfig, nil)
	out := bufio.NewScanner(p.clientOut)
	out.Buffer(nil, 1<<20)
	send := func(line string) map[string]any {
		t.Helper()
		if _, err := io.WriteString(p.clientIn, line+"\n"); err != nil {
			t.Fatal(err)
		}
		if !out.Scan() {
			t.Fatalf("no answer to %s", line)
		}
		var m map[string]any
		if err := json.Unmarshal(out.Bytes(), &m); err != nil {
			t.Fatal(err)
		}
		return m
	}
	send(`{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":"2025-06-18","capabilities":{"roots":{"listChanged":true}},"clientInfo":{"name":"raw","version":"1"}}}`)
	_, _ = io.WriteString(p.clientIn, `{"jsonrpc":"2.0","method":"notifications/initialized"}`+"\n")
	// A notification the client sends makes the server send a request of
	// its own (roots/list): relayed to the client, and its answer back.
	m := send(`{"jsonrpc":"2.0","method":"notifications/roots/list_changed"}`)
	if m["method"] != "roots/list" {
		t.Fatalf("want the server's roots/list, got %v", m)
	}
	id, _ := json.Marshal(m["id"])
	_, _ = io.WriteString(p.clientIn, `{"jsonrpc":"2.0","id":`+string(id)+`,"result":{"roots":[{"uri":"file:///raw"}]}}`+"\n")
	select {
	case got := <-s.roots:
		if got != "file:///raw" {
			t.Errorf("the server's roots/list answered through the proxy: %q", got)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the server never got its roots")
	}
	// Not JSON: a parse error with a null id; the proxy goes on.
	if m := send(`this is not json`); m["id"] != nil || m["error"].(map[string]any)["code"] != float64(-32700) {
		t.Errorf("garbage: %v", m)
	}
	// A method gate does not know passes through: the server answers it.
	if m := send(`{"jsonrpc":"2.0","id":"u","method":"vendor/unknown","params":{}}`); m["id"] != "u" || m["error"].(map[string]any)["code"] != float64(-32601) {
		t.Errorf("unknown method: %v", m)
	}
	// A tools/call without a name is refused by gate itself.
	if m := send(`{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{}}`); m["error"].(map[string]any)["code"] != float64(-32602) {
		t.Errorf("tools/call without a name: %v", m)
	}
}

func TestNewRefusesBadSessionConfig(t *testing.T) {
	c, err := mcpgate.ParseConfig(strings.NewReader("mcp:\n  read:\n    max_reads: -1\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := mcpgate.New(mcpgate.Options{Config: c, Session: session.Options{ReceiptKey: testKey}}); err == nil || !strings.Contains(err.Error(), "max_reads") {
		t.Errorf("New with a negative budget: %v", err)
	}
	if _, err := mcpgate.New(mcpgate.Options{Config: &mcpgate.Config{}}); err == nil {
		t.Error("New without a receipt key succeeded")
	}
}

type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// fakeGov is governance that asks approval for put once and denies other
// writes; reads are never asked (only recorded). It records everything.
type fakeGov struct {
	mu      sync.Mutex
	calls   []toolgov.Call
	records []toolgov.Record
}

func (f *fakeGov) Decide(_ context.Context, c toolgov.Call) (toolgov.Verdict, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.calls = append(f.calls, c)
	switch {
	case c.Tool == "put" && c.ApprovalID == "":
		return toolgov.Verdict{Effect: policy.EffectRequireApproval, ApprovalID: "ap-1", Reason: "a person must approve"}, nil
	case c.Tool == "put" && c.ApprovalID == "ap-1":
		return toolgov.Verdict{Effect: policy.EffectAllow, ApprovalID: "ap-1", Consumed: true}, nil
	}
	return toolgov.Verdict{Effect: policy.EffectDeny, Reason: "policy says no"}, nil
}

func (f *fakeGov) Record(_ context.Context, r toolgov.Record) error {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.records = append(f.records, r)
	return nil
}

func TestProxyGovernance(t *testing.T) {
	s := newTestServer(t)
	gov := &fakeGov{}
	p := startProxy(t, s, testConfig, func(o *mcpgate.Options) { o.Governance = gov })
	cs := connect(t, p, nil)
	call(t, cs, "cat", map[string]any{"path": "/d/a"})
	call(t, cs, "list", map[string]any{"dir": "/d"})
	if code, hint := envelope(t, call(t, cs, "put", map[string]any{"path": "/d/a.txt"})); code != "APPROVAL_REQUIRED" || !strings.Contains(hint, "approvals approve ap-1") {
		t.Errorf("put: %s %q, want APPROVAL_REQUIRED naming ap-1", code, hint)
	}
	// The retry of exactly that call carries the approval id.
	if res := call(t, cs, "put", map[string]any{"path": "/d/a.txt"}); res.IsError {
		t.Errorf("put after approval: %+v", res)
	}
	gov.mu.Lock()
	defer gov.mu.Unlock()
	if len(gov.calls) != 2 {
		t.Fatalf("governance was asked %d times, want 2 (the put, twice; reads are not asked): %+v", len(gov.calls), gov.calls)
	}
	last := gov.calls[1]
	if last.ApprovalID != "ap-1" || last.Action != "destructive" || last.Resource.Type != "file" || last.Resource.Name != "/d/a.txt" || last.Agent != "mcp:test" ||
		last.RawCommand != `put {"path":"/d/a.txt"}` {
		t.Errorf("the retried call as governance saw it: %+v", last)
	}
	var outcomes, allowed int
	for _, r := range gov.records {
		switch {
		case r.Type == toolgov.TypeToolExecution && r.Status == "success":
			outcomes++
			if r.ReceiptID == "" {
				t.Errorf("outcome without a receipt id: %+v", r)
			}
			if r.Call.Tool == "put" && r.ApprovalID != "ap-1" {
				t.Errorf("the put's outcome does not name the approval it consumed: %+v", r)
			}
		case r.Type == toolgov.TypeHookDecision && r.Status == "allow":
			allowed++
		}
	}
	if outcomes != 3 || allowed != 3 {
		t.Errorf("%d successful outcomes and %d allow decisions recorded, want 3 and 3: %+v", outcomes, allowed, gov.records)
	}
}

// brokenGov is an auditd that fails to decide, or to record too.
type brokenGov struct{ recordErr error }

func (brokenGov) Decide(context.Context, toolgov.Call) (toolgov.Verdict, error) {
	return toolgov.Verdict{}, errors.New("connection refused")
}
func (g brokenGov) Record(context.Context, toolgov.Record) error { return g.recordErr }

// Nothing runs that auditd has not seen (fail closed): a read it cannot
// record, a write it cannot decide.
func TestProxyGovernanceDown(t *testing.T) {
	for _, tc := range []struct {
		name      string
		recordErr error
		calls     []string
		want      string
	}{
		{"down", errors.New("connection refused"), []string{"cat"}, "auditd did not record the decision"},
		{"no decisions", nil, []string{"list", "put"}, "governance is unavailable"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := newTestServer(t)
			p := startProxy(t, s, testConfig, func(o *mcpgate.Options) { o.Governance = brokenGov{tc.recordErr} })
			cs := connect(t, p, nil)
			var res *mcp.CallToolResult
			for _, tool := range tc.calls {
				args := map[string]any{"path": "/d/a"}
				if tool == "list" {
					args = map[string]any{"dir": "/d"}
				}
				res = call(t, cs, tool, args)
			}
			code, _ := envelope(t, res)
			if text := res.Content[0].(*mcp.TextContent).Text; code != "POLICY_BLOCKED" || !strings.Contains(text, tc.want) {
				t.Errorf("%s: %s, want POLICY_BLOCKED saying %q", code, text, tc.want)
			}
		})
	}
}
