package mcpgate

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sort"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/govkit/govkit/pkg/session"
	"github.com/govkit/govkit/pkg/session/response"
	"github.com/govkit/govkit/pkg/toolgov"
)

// Defaults of the bounds (DESIGN §3: every read bounded, nothing hangs).
const (
	DefaultCallTimeout = 2 * time.Minute
	DefaultMaxMessage  = 8 << 20
)

// _meta keys gate adds to what it relays.
const (
	MetaKind     = "govkit/kind"     // tools/list: each tool's kind; tools/call: the call's
	MetaReceipt  = "govkit/receipt"  // tools/call: the signed receipt (seed 002)
	MetaResponse = "govkit/response" // a block: the ToolResponse envelope (seed 000 §3)
	MetaMeta     = "govkit/stabilization"
	MetaWarnings = "govkit/warnings"
)

// JSON-RPC error codes gate answers with itself. -32000 is what the
// TypeScript SDK calls ConnectionClosed.
const (
	codeServerGone = -32000
	codeTooLarge   = jsonrpc.CodeInvalidRequest
)

// Options configure a Proxy.
type Options struct {
	Config *Config
	// Session carries the receipt key and the driver's strict-resolution
	// default.
	Session session.Options
	// CallTimeout bounds one tools/call; MaxMessage one message, each way.
	CallTimeout time.Duration
	MaxMessage  int
	// Workspace is the session's workspace real path (sessionloop.Realpath).
	Workspace string
	// ServerName labels the session's agent id ("mcp:<name>").
	ServerName string
	// Governance, when set, asks auditd's policy about every write the
	// reducer allowed and records every decision and outcome (--url).
	Governance toolgov.Governance
	Now        func() time.Time
	Rand       io.Reader
	// Log receives one line per event the client is not told of.
	Log io.Writer
}

// ServerGoneError is Run's error when the server's output ended first.
type ServerGoneError struct {
	// Pending is how many client requests were answered with an error.
	Pending int
	Err     error // the read error, nil at EOF
}

func (e *ServerGoneError) Error() string {
	msg := "the MCP server closed its output"
	if e.Err != nil {
		msg = "reading from the MCP server: " + e.Err.Error()
	}
	if e.Pending > 0 {
		msg += fmt.Sprintf(" with %d request(s) unanswered (answered with errors)", e.Pending)
	}
	return msg
}

// Proxy relays one MCP session between a client and a server.
type Proxy struct {
	opts   Options
	client *lineWriter
	server *lineWriter

	mu      sync.Mutex
	pending map[jsonrpc.ID]*request // client requests the server has not answered
	own     map[jsonrpc.ID]func(*jsonrpc.Response)
	nOwn    int
	ownTag  string
	gov     *governor
	ready   chan struct{} // closed once gov is set
	listing bool
	pages   int
	listed  []Tool
	schemas map[string]bool // tools with an outputSchema
	noTools bool            // the server's initialize result had no tools capability
	gone    bool
	// approvals: governance's pending approval per call (tool and
	// arguments), passed back when the model retries exactly that call.
	approvals map[string]string
	done      chan struct{}
	doneOnce  sync.Once
}

// request is a client request in flight.
type request struct {
	method string
	call   *verdict // tools/call
	timer  *time.Timer
	params json.RawMessage
}

// New returns a proxy; its session starts when the server's tools are known.
func New(opts Options) (*Proxy, error) {
	if opts.CallTimeout <= 0 {
		opts.CallTimeout = DefaultCallTimeout
	}
	if opts.MaxMessage <= 0 {
		opts.MaxMessage = DefaultMaxMessage
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.Rand == nil {
		opts.Rand = rand.Reader
	}
	if opts.Log == nil {
		opts.Log = io.Discard
	}
	if opts.Config == nil {
		opts.Config = &Config{}
	}
	if opts.Session.ReceiptKey == nil {
		return nil, errors.New("mcpgate: no receipt key")
	}
	var tag [4]byte
	if _, err := io.ReadFull(opts.Rand, tag[:]); err != nil {
		return nil, err
	}
	p := &Proxy{opts: opts, pending: map[jsonrpc.ID]*request{}, own: map[jsonrpc.ID]func(*jsonrpc.Response){},
		ownTag: "govkit-" + hex.EncodeToString(tag[:]), ready: make(chan struct{}), schemas: map[string]bool{},
		approvals: map[string]string{},
		done:      make(chan struct{})}
	// Check the config against the reducer now, not at the first call.
	if _, err := startGovernor(p.sessionStart(), p.kindsOf(nil)); err != nil {
		return nil, fmt.Errorf("mcpgate: config: %w", err)
	}
	return p, nil
}

func (p *Proxy) sessionStart() sessionStart {
	return sessionStart{cfg: p.opts.Config, opts: p.opts.Session, now: p.opts.Now, rand: p.opts.Rand,
		dir: p.opts.Workspace, serverName: p.opts.ServerName}
}

// Run relays until the client's input ends (nil), the server's output ends
// (*ServerGoneError, after every pending request was answered with an
// error), ctx ends, or the client cannot be written to.
func (p *Proxy) Run(ctx context.Context, clientIn io.Reader, clientOut io.Writer, serverOut io.Reader, serverIn io.Writer) error {
	p.client = &lineWriter{w: clientOut}
	p.server = &lineWriter{w: serverIn}
	defer p.doneOnce.Do(func() { close(p.done) })
	errc := make(chan error, 2)
	go func() { errc <- p.readClient(clientIn) }()
	go func() { errc <- p.readServer(serverOut) }()
	select {
	case err := <-errc:
		p.stopTimers()
		if err == nil && p.serverIsGone() {
			// The client closed its end after the server died: the
			// server's end is what happened (ServerGoneError).
			err = <-errc
		}
		return err
	case <-ctx.Done():
		p.stopTimers()
		return ctx.Err()
	}
}

func (p *Proxy) logf(format string, args ...any) {
	fmt.Fprintf(p.opts.Log, "gate: mcp: "+format+"\n", args...)
}

// readClient relays the client's messages; nil at EOF.
func (p *Proxy) readClient(in io.Reader) error {
	fr := newFrameReader(in, p.opts.MaxMessage)
	for {
		line, over, err := fr.next()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("reading from the client: %w", err)
		}
		if over != nil {
			err = p.clientOversize(over)
		} else {
			err = p.fromClient(line)
		}
		if err != nil {
			return err
		}
	}
}

// readServer relays the server's messages until its output ends.
func (p *Proxy) readServer(out io.Reader) error {
	fr := newFrameReader(out, p.opts.MaxMessage)
	for {
		line, over, err := fr.next()
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return p.serverGone(err)
		}
		if over != nil {
			err = p.serverOversize(over)
		} else {
			err = p.fromServer(line)
		}
		if err != nil {
			return err
		}
	}
}

// fromClient handles one message from the client. Only a write to the
// client failing is an error: the client is gone.
func (p *Proxy) fromClient(line []byte) error {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		// JSON-RPC 2.0 §5: a message gate cannot parse gets a parse error
		// with a null id; the server never sees it.
		p.logf("refused a client message that is not JSON-RPC 2.0: %v", err)
		return p.client.writeMsg(errorResponse(jsonrpc.ID{}, jsonrpc.CodeParseError, "gate: not a JSON-RPC 2.0 message"))
	}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		if !m.IsCall() {
			if m.Method == "notifications/cancelled" {
				p.cancelled(m.Params)
			}
			p.toServer(line)
			if m.Method == "notifications/initialized" {
				p.startListing()
			}
			return nil
		}
		if m.Method == "tools/call" {
			return p.toolsCall(m, line)
		}
		if !p.track(m.ID, &request{method: m.Method}) {
			return p.client.writeMsg(errorResponse(m.ID, codeServerGone, "gate: the MCP server has exited"))
		}
		p.toServer(line)
		return nil
	case *jsonrpc.Response:
		p.toServer(line) // the client's answer to a server's request
	}
	return nil
}

// track records a client request in flight; false once the server is gone.
func (p *Proxy) track(id jsonrpc.ID, r *request) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gone {
		return false
	}
	p.pending[id] = r
	return true
}

// toServer writes to the server. A failure is not the client's: the
// server's output ends too, and readServer answers what is pending.
func (p *Proxy) toServer(line []byte) {
	if err := p.server.write(line); err != nil {
		p.logf("writing to the MCP server: %v", err)
	}
}

// toolsCall governs one tools/call (DESIGN §14): the reducer, then auditd
// when configured; a refusal is a tool result with isError (never a
// protocol error), so that the model sees the envelope and can recover.
func (p *Proxy) toolsCall(m *jsonrpc.Request, line []byte) error {
	var params struct {
		Name      string         `json:"name"`
		Arguments map[string]any `json:"arguments"`
	}
	if err := json.Unmarshal(m.Params, &params); err != nil || params.Name == "" {
		return p.client.writeMsg(errorResponse(m.ID, jsonrpc.CodeInvalidParams, "gate: tools/call needs params.name and object params.arguments"))
	}
	gov := p.session()
	p.mu.Lock()
	if p.gone {
		p.mu.Unlock()
		return p.client.writeMsg(errorResponse(m.ID, codeServerGone, "gate: the MCP server has exited"))
	}
	v := gov.call(params.Name, params.Arguments)
	schema := p.schemas[params.Name]
	p.mu.Unlock()
	if v.block != nil {
		p.record(&v, "deny", *v.block)
		return p.client.writeMsg(resultResponse(m.ID, blockResult(*v.block, v.kind.Kind, !schema)))
	}
	if g := p.opts.Governance; g != nil {
		if block := p.govern(g, &v); block != nil {
			return p.client.writeMsg(resultResponse(m.ID, blockResult(*block, v.kind.Kind, !schema)))
		}
	}
	r := &request{method: m.Method, call: &v}
	if !p.track(m.ID, r) {
		p.mu.Lock()
		gov.result(&v, false, "", "the MCP server exited before the call was sent")
		p.mu.Unlock()
		return p.client.writeMsg(errorResponse(m.ID, codeServerGone, "gate: the MCP server has exited"))
	}
	id := m.ID
	p.mu.Lock()
	r.timer = time.AfterFunc(p.opts.CallTimeout, func() { p.timeout(id, r) })
	p.mu.Unlock()
	p.toServer(line)
	return nil
}

// session returns the reducer session, starting it when the server's tools
// are known, or once a call has waited CallTimeout for them (then with the
// tools known so far: the rest are writes).
func (p *Proxy) session() *governor {
	p.mu.Lock()
	g := p.gov
	p.mu.Unlock()
	if g != nil {
		return g
	}
	p.startListing()
	t := time.NewTimer(p.opts.CallTimeout)
	defer t.Stop()
	select {
	case <-p.ready:
	case <-t.C:
		p.logf("the server's tools/list did not complete in %s; starting the session with the tools known so far", p.opts.CallTimeout)
	case <-p.done:
	}
	return p.startSession()
}

// startSession starts the reducer session once, with the tools listed.
func (p *Proxy) startSession() *governor {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.gov != nil {
		return p.gov
	}
	g, err := startGovernor(p.sessionStart(), p.kindsOf(p.listed))
	if err != nil {
		// New checked the config; only drawing the seed can fail here.
		// Fail closed: every tool is a write.
		p.logf("starting the session: %v; every tool is a write", err)
		g, _ = startGovernor(p.sessionStart(), map[string]ToolKind{})
	}
	p.gov = g
	close(p.ready)
	return g
}

func (p *Proxy) kindsOf(tools []Tool) map[string]ToolKind {
	out := map[string]ToolKind{}
	for _, k := range p.opts.Config.Kinds(tools) {
		out[k.Name] = k
	}
	return out
}

// startListing lists the server's tools for gate itself (all pages), once:
// a tools/call may come before, or without, the client's own tools/list.
func (p *Proxy) startListing() {
	p.mu.Lock()
	if p.listing || p.gov != nil {
		p.mu.Unlock()
		return
	}
	p.listing = true
	noTools := p.noTools
	p.mu.Unlock()
	if noTools {
		p.startSession()
		return
	}
	p.listPage("")
}

// maxPages bounds gate's own listing.
const maxPages = 100

func (p *Proxy) listPage(cursor string) {
	params := map[string]any{}
	if cursor != "" {
		params["cursor"] = cursor
	}
	p.ownRequest("tools/list", params, func(resp *jsonrpc.Response) {
		if resp.Error != nil {
			p.logf("the server refused gate's tools/list: %v; its tools are writes unless the config says otherwise", resp.Error)
			p.startSession()
			return
		}
		tools, next := toolsFromList(resp.Result)
		p.mu.Lock()
		p.listed = append(p.listed, tools...)
		for _, t := range tools {
			p.schemas[t.Name] = t.OutputSchema
		}
		p.pages++
		more := next != "" && p.pages < maxPages
		p.mu.Unlock()
		if more {
			p.listPage(next)
			return
		}
		p.startSession()
	})
}

// ownRequest sends a request of gate's own to the server; its response is
// handled by fn and never relayed.
func (p *Proxy) ownRequest(method string, params any, fn func(*jsonrpc.Response)) {
	p.mu.Lock()
	p.nOwn++
	id, _ := jsonrpc.MakeID(fmt.Sprintf("%s-%d", p.ownTag, p.nOwn)) // a string is always an id
	p.own[id] = fn
	p.mu.Unlock()
	b, _ := json.Marshal(params)
	data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{ID: id, Method: method, Params: b})
	if err != nil {
		p.logf("encoding %s: %v", method, err)
		return
	}
	p.toServer(data)
}

// cancelled ends a tools/call the client gave up on: the reducer hears it
// failed (a receipt says so), and a late result is dropped.
func (p *Proxy) cancelled(params json.RawMessage) {
	var c struct {
		RequestID any `json:"requestId"`
	}
	if json.Unmarshal(params, &c) != nil {
		return
	}
	id, err := jsonrpc.MakeID(c.RequestID)
	if err != nil {
		return
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	r, ok := p.pending[id]
	if !ok {
		return
	}
	delete(p.pending, id)
	if r.timer != nil {
		r.timer.Stop()
	}
	if r.call != nil {
		p.gov.result(r.call, false, "", "cancelled by the client")
	}
}

// timeout answers a tools/call the server did not answer in time, and
// tells the server to stop (notifications/cancelled).
func (p *Proxy) timeout(id jsonrpc.ID, r *request) {
	p.mu.Lock()
	if p.pending[id] != r {
		p.mu.Unlock()
		return
	}
	delete(p.pending, id)
	what := fmt.Sprintf("timed out after %s (gate mcp --call-timeout); gate cancelled the call", p.opts.CallTimeout)
	out := p.gov.result(r.call, false, "", what)
	p.mu.Unlock()
	p.logf("tools/call %s %s", r.call.kind.Name, what)
	b, _ := json.Marshal(map[string]any{"requestId": id.Raw(), "reason": "timed out"})
	if data, err := jsonrpc.EncodeMessage(&jsonrpc.Request{Method: "notifications/cancelled", Params: b}); err == nil {
		p.toServer(data)
	}
	resp := response.Failed(response.ExecutionFailed, "the tool "+what, true,
		map[string]any{"recovery_hint": "retry, or check whether the call took effect before repeating a write"})
	p.record(r.call, "error", resp)
	res := blockResult(resp, r.call.kind.Kind, !p.schema(r.call.kind.Name))
	addReceipt(res, out)
	_ = p.client.writeMsg(resultResponse(id, res))
}

func (p *Proxy) schema(name string) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.schemas[name]
}

// fromServer handles one message from the server.
func (p *Proxy) fromServer(line []byte) error {
	msg, err := jsonrpc.DecodeMessage(line)
	if err != nil {
		p.logf("dropped a message from the MCP server that is not JSON-RPC 2.0: %v", err)
		return nil
	}
	switch m := msg.(type) {
	case *jsonrpc.Response:
		p.mu.Lock()
		if fn, ok := p.own[m.ID]; ok {
			delete(p.own, m.ID)
			p.mu.Unlock()
			fn(m)
			return nil
		}
		r, ok := p.pending[m.ID]
		delete(p.pending, m.ID)
		if ok && r.timer != nil {
			r.timer.Stop()
		}
		p.mu.Unlock()
		if !ok {
			p.logf("dropped the server's response to id %v: no request of the client awaits it (timed out or cancelled)", m.ID.Raw())
			return nil
		}
		switch r.method {
		case "tools/call":
			return p.callResult(m, r.call)
		case "tools/list":
			return p.listResult(m, line)
		case "initialize":
			p.initialized(m)
		}
		return p.client.write(line)
	case *jsonrpc.Request:
		if m.Method == "notifications/tools/list_changed" {
			p.logf("the server's tools changed; tools it adds now are governed as writes until gate restarts")
		}
		return p.client.write(line)
	}
	return nil
}

// initialized notes whether the server has tools at all.
func (p *Proxy) initialized(m *jsonrpc.Response) {
	var res struct {
		Capabilities struct {
			Tools json.RawMessage `json:"tools"`
		} `json:"capabilities"`
	}
	if m.Error != nil || json.Unmarshal(m.Result, &res) != nil {
		return
	}
	p.mu.Lock()
	p.noTools = len(res.Capabilities.Tools) == 0 || string(res.Capabilities.Tools) == "null"
	p.mu.Unlock()
}

// callResult feeds a tools/call's result to the reducer and relays it with
// the receipt in _meta.
func (p *Proxy) callResult(m *jsonrpc.Response, v *verdict) error {
	if m.Error != nil {
		p.mu.Lock()
		out := p.gov.result(v, false, "", m.Error.Error())
		p.mu.Unlock()
		p.recordOutcome(v, false, "", m.Error.Error(), out)
		return p.client.writeMsg(m)
	}
	var res map[string]json.RawMessage
	if err := json.Unmarshal(m.Result, &res); err != nil || res == nil {
		p.mu.Lock()
		out := p.gov.result(v, false, "", "the server's result is not a JSON object")
		p.mu.Unlock()
		p.recordOutcome(v, false, "", "the server's result is not a JSON object", out)
		return p.client.writeMsg(m)
	}
	var isError bool
	_ = json.Unmarshal(res["isError"], &isError)
	text := resultText(res["content"])
	errText := ""
	if isError {
		errText = text
	}
	p.mu.Lock()
	out := p.gov.result(v, !isError, text, errText)
	p.mu.Unlock()
	for _, e := range out.errors {
		p.logf("session: %s", e)
	}
	p.recordOutcome(v, !isError, text, errText, out)
	meta := map[string]any{}
	if raw, ok := res["_meta"]; ok {
		_ = json.Unmarshal(raw, &meta)
	}
	meta[MetaKind] = v.kind.Kind
	if out.receipt != nil {
		meta[MetaReceipt] = out.receipt
	}
	if out.meta != nil {
		meta[MetaMeta] = out.meta
	}
	if len(v.warnings) > 0 {
		meta[MetaWarnings] = v.warnings
	}
	b, err := json.Marshal(meta)
	if err != nil {
		return p.client.writeMsg(m)
	}
	res["_meta"] = b
	if m.Result, err = json.Marshal(res); err != nil {
		return err
	}
	return p.client.writeMsg(m)
}

// resultText is a result's text content, joined by newlines: what the
// reducer counts, reads resources from, and signs an excerpt of.
func resultText(content json.RawMessage) string {
	var blocks []struct {
		Type string `json:"type"`
		Text string `json:"text"`
	}
	if json.Unmarshal(content, &blocks) != nil {
		return ""
	}
	var b strings.Builder
	for _, c := range blocks {
		if c.Type != "text" {
			continue
		}
		if b.Len() > 0 {
			b.WriteByte('\n')
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

// listResult relays a tools/list page with each tool's kind in its _meta.
func (p *Proxy) listResult(m *jsonrpc.Response, line []byte) error {
	if m.Error != nil {
		return p.client.write(line)
	}
	var res map[string]json.RawMessage
	var tools []map[string]json.RawMessage
	if json.Unmarshal(m.Result, &res) != nil || json.Unmarshal(res["tools"], &tools) != nil {
		return p.client.write(line)
	}
	listed, _ := toolsFromList(m.Result)
	p.mu.Lock()
	for _, t := range listed {
		p.schemas[t.Name] = t.OutputSchema
	}
	byName := map[string]Tool{}
	for _, t := range listed {
		byName[t.Name] = t
	}
	g := p.gov
	cfg := p.opts.Config
	for _, t := range tools {
		var name string
		_ = json.Unmarshal(t["name"], &name)
		var k ToolKind
		if g != nil {
			k = g.kind(name)
		} else {
			k = cfg.Classify(byName[name])
		}
		meta := map[string]any{}
		if raw, ok := t["_meta"]; ok {
			_ = json.Unmarshal(raw, &meta)
		}
		meta[MetaKind] = k.Kind
		t["_meta"], _ = json.Marshal(meta)
	}
	p.mu.Unlock()
	var err error
	if res["tools"], err = json.Marshal(tools); err != nil {
		return p.client.write(line)
	}
	if m.Result, err = json.Marshal(res); err != nil {
		return p.client.write(line)
	}
	return p.client.writeMsg(m)
}

// clientOversize answers a client message over the bound: a request gets a
// JSON-RPC error, a response (to a server's request) becomes an error
// response to the server, a notification is dropped.
func (p *Proxy) clientOversize(o *oversize) error {
	what := fmt.Sprintf("gate: a message of %d bytes exceeds the bound of %d bytes (gate mcp --max-message)", o.Size, p.opts.MaxMessage)
	p.logf("refused a client message of %d bytes (method %q)", o.Size, o.Method)
	switch {
	case !o.ID.IsValid():
		return nil
	case o.Method != "":
		return p.client.writeMsg(errorResponse(o.ID, codeTooLarge, what))
	default:
		if data, err := jsonrpc.EncodeMessage(errorResponse(o.ID, codeTooLarge, what)); err == nil {
			p.toServer(data)
		}
	}
	return nil
}

// serverOversize answers for a server message over the bound: the client
// request it answered gets an error (a tools/call an isError result), a
// server request an error response; a notification is dropped.
func (p *Proxy) serverOversize(o *oversize) error {
	what := fmt.Sprintf("the MCP server's message of %d bytes exceeds gate's bound of %d bytes (gate mcp --max-message)", o.Size, p.opts.MaxMessage)
	p.logf("dropped a server message of %d bytes (method %q)", o.Size, o.Method)
	if !o.ID.IsValid() {
		return nil
	}
	if o.Method != "" {
		if data, err := jsonrpc.EncodeMessage(errorResponse(o.ID, codeTooLarge, "gate: "+what)); err == nil {
			p.toServer(data)
		}
		return nil
	}
	p.mu.Lock()
	r, ok := p.pending[o.ID]
	delete(p.pending, o.ID)
	if ok && r.timer != nil {
		r.timer.Stop()
	}
	var out outcome
	if ok && r.call != nil {
		out = p.gov.result(r.call, false, "", what)
	}
	p.mu.Unlock()
	if !ok {
		return nil
	}
	if r.call == nil {
		return p.client.writeMsg(errorResponse(o.ID, jsonrpc.CodeInternalError, "gate: "+what))
	}
	resp := response.Failed(response.ExecutionFailed, what, false,
		map[string]any{"recovery_hint": "ask for less: a narrower range, a smaller file, fewer entries"})
	p.recordOutcome(r.call, false, "", what, out)
	res := blockResult(resp, r.call.kind.Kind, !p.schema(r.call.kind.Name))
	addReceipt(res, out)
	return p.client.writeMsg(resultResponse(o.ID, res))
}

// serverGone answers every pending request with an error: the server will
// never answer them, and the client must not wait.
func (p *Proxy) serverGone(readErr error) error {
	p.mu.Lock()
	p.gone = true
	ids := make([]jsonrpc.ID, 0, len(p.pending))
	for id, r := range p.pending {
		ids = append(ids, id)
		if r.timer != nil {
			r.timer.Stop()
		}
		if r.call != nil && p.gov != nil {
			p.gov.result(r.call, false, "", "the MCP server exited")
		}
	}
	p.pending = map[jsonrpc.ID]*request{}
	p.mu.Unlock()
	sort.Slice(ids, func(i, j int) bool { return fmt.Sprint(ids[i].Raw()) < fmt.Sprint(ids[j].Raw()) })
	for _, id := range ids {
		_ = p.client.writeMsg(errorResponse(id, codeServerGone, "gate: the MCP server exited before answering"))
	}
	// A tools/call waiting for the tool list must not wait any longer.
	p.startSession()
	return &ServerGoneError{Pending: len(ids), Err: readErr}
}

func (p *Proxy) serverIsGone() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.gone
}

func (p *Proxy) stopTimers() {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, r := range p.pending {
		if r.timer != nil {
			r.timer.Stop()
		}
	}
}

// blockResult is a tools/call result that carries the envelope: as text
// (what every client shows the model), in _meta, and as structuredContent
// unless the tool has an outputSchema (a TypeScript SDK client validates
// structuredContent against it even in an error result, and would turn
// the block into a protocol error).
func blockResult(resp response.ToolResponse, kind string, structured bool) *mcp.CallToolResult {
	text, _ := json.Marshal(resp)
	res := &mcp.CallToolResult{
		Meta:    mcp.Meta{MetaResponse: resp, MetaKind: kind},
		Content: []mcp.Content{&mcp.TextContent{Text: string(text)}},
		IsError: true,
	}
	if structured {
		res.StructuredContent = resp
	}
	return res
}

func addReceipt(res *mcp.CallToolResult, out outcome) {
	if out.receipt != nil {
		res.Meta[MetaReceipt] = out.receipt
	}
}

func resultResponse(id jsonrpc.ID, result any) *jsonrpc.Response {
	b, err := json.Marshal(result)
	if err != nil {
		return errorResponse(id, jsonrpc.CodeInternalError, "gate: encoding a result: "+err.Error())
	}
	return &jsonrpc.Response{ID: id, Result: b}
}

func errorResponse(id jsonrpc.ID, code int64, message string) *jsonrpc.Response {
	return &jsonrpc.Response{ID: id, Error: &jsonrpc.Error{Code: code, Message: message}}
}

// lineWriter writes whole frames, one goroutine at a time.
type lineWriter struct {
	mu  sync.Mutex
	w   io.Writer
	buf []byte
}

func (l *lineWriter) write(line []byte) error {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.buf = append(append(l.buf[:0], line...), '\n')
	_, err := l.w.Write(l.buf)
	return err
}

func (l *lineWriter) writeMsg(m jsonrpc.Message) error {
	data, err := jsonrpc.EncodeMessage(m)
	if err != nil {
		return err
	}
	return l.write(data)
}
