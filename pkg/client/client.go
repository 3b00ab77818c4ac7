// Package client is the one Go client of auditd's HTTP API (its contract is
// pkg/govapi) and event stream (DESIGN §6); every govkit CLI and any Go
// agent talks to auditd through it.
package client

import (
	"bytes"
	"context"
	"crypto/x509"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"iter"
	"net"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/build"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/termtext"
)

// DefaultURL is auditd's default address (DESIGN §7: GOVKIT_AUDIT_URL).
const DefaultURL = "http://127.0.0.1:1199"

// maxResponse bounds a response body: a page of govapi.MaxLimit events of
// up to 1 MiB each would be 1 GiB, far beyond any real page.
const maxResponse = 256 << 20

// Client calls one auditd. It is safe for concurrent use.
type Client struct {
	base  *url.URL
	http  *http.Client
	token string
	user  string
	agent string
	roots *x509.CertPool // WithRootCAs; nil: the system's
}

// BaseURL is the auditd URL the client calls, for messages.
func (c *Client) BaseURL() string { return c.base.String() }

// Option configures a Client.
type Option func(*Client)

// WithToken sends token as a bearer token (auditd with a tokens file).
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithUser names the acting user in the govapi.UserHeader header (auditd in
// local mode takes approvers' names from it).
func WithUser(name string) Option { return func(c *Client) { c.user = name } }

// WithHTTPClient replaces the HTTP client (default: one with a 30s timeout).
func WithHTTPClient(hc *http.Client) Option { return func(c *Client) { c.http = hc } }

// WithUserAgent sets the User-Agent, e.g. "approvals/v1.2.0".
func WithUserAgent(ua string) Option { return func(c *Client) { c.agent = ua } }

// New returns a client for the auditd at baseURL (http://host:port or
// https://host:port, with an optional path prefix).
func New(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("auditd URL %q is not http://HOST:PORT", baseURL)
	}
	if u.User != nil {
		return nil, errors.New("auditd URL must not carry credentials; use a token")
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.RawQuery, u.Fragment = "", ""
	c := &Client{
		base:  u,
		http:  &http.Client{Timeout: 30 * time.Second, Transport: defaultTransport},
		agent: "govkit/" + build.String(),
	}
	for _, o := range opts {
		o(c)
	}
	if c.roots != nil {
		if err := c.useRoots(); err != nil {
			return nil, err
		}
	}
	return c, nil
}

// defaultTransport keeps connections to auditd open for reuse: concurrent
// agents in one process would otherwise open a connection per event
// (net/http keeps only 2 idle connections per host by default).
var defaultTransport = func() *http.Transport {
	t := http.DefaultTransport.(*http.Transport).Clone()
	t.MaxIdleConns = 256
	t.MaxIdleConnsPerHost = 256
	return t
}()

// Error is an answer from auditd other than success: the HTTP status and
// the server's message.
type Error struct {
	StatusCode int
	Message    string
	// Code names the rule behind a refusal when auditd gives one (e.g.
	// approval.RefusedSelfApproval); empty otherwise.
	Code string
	// Detail is what auditd sent beside a refusal to say why, as JSON: the
	// decision behind approval_not_required, the trace behind
	// policy_denied (govapi.Explanation); nil otherwise.
	Detail json.RawMessage
}

func (e *Error) Error() string {
	return fmt.Sprintf("auditd answered %d %s: %s", e.StatusCode, strings.ToLower(http.StatusText(e.StatusCode)), e.Message)
}

// IsNotFound reports whether err is auditd's 404.
func IsNotFound(err error) bool {
	var e *Error
	return errors.As(err, &e) && e.StatusCode == http.StatusNotFound
}

// Append records ev and returns it as stored, with seq, timestamp,
// prev_hash and event_hash. ev must leave those four unset. With an
// EventID, Append is idempotent: a retry returns the event stored first
// (Created reports which happened when called through AppendResult).
func (c *Client) Append(ctx context.Context, ev audit.Event) (audit.Event, error) {
	res, err := c.AppendResult(ctx, ev)
	return res.Event, err
}

// AppendResult is what an append returned.
type AppendResult struct {
	Event audit.Event
	// Created is true when this call stored the event (201), false when
	// its event_id was stored already and Event is the original (200).
	Created bool
}

// AppendResult is Append that also tells whether the event was created.
func (c *Client) AppendResult(ctx context.Context, ev audit.Event) (AppendResult, error) {
	body, err := EncodeEvent(ev)
	if err != nil {
		return AppendResult{}, err
	}
	var res AppendResult
	code, err := c.doType(ctx, http.MethodPost, govapi.PathEvents, nil, govapi.ContentTypeJSON, body, ev.EventID != "", &res.Event)
	res.Created = code == http.StatusCreated
	return res, err
}

// AppendBatch records evs, at most govapi.MaxBatchEvents in at most
// govapi.MaxBody bytes, in one request (POST govapi.PathEvents with a JSON
// Lines body) and returns them as stored, in order. Durable ingest commits
// many events per fsync (DESIGN §6 group commit); a batch fills a commit
// from one client, where single appends need many concurrent clients to.
//
// auditd checks every event before it stores any: an invalid one fails the
// whole batch with an *Error (400) naming its line (index + 1), and nothing
// is stored. Events with an EventID are idempotent as with Append: a retry
// of the batch returns the events stored first, with Created false. If
// storing fails (500, 503) part of the batch may be stored; give the
// events EventIDs to retry safely.
func (c *Client) AppendBatch(ctx context.Context, evs []audit.Event) ([]AppendResult, error) {
	if len(evs) == 0 {
		return nil, nil
	}
	if len(evs) > govapi.MaxBatchEvents {
		return nil, fmt.Errorf("a batch holds at most %d events, not %d; split it", govapi.MaxBatchEvents, len(evs))
	}
	var body []byte
	replayable := true
	for i, ev := range evs {
		replayable = replayable && ev.EventID != ""
		line, err := EncodeEvent(ev)
		if err != nil {
			return nil, fmt.Errorf("evs[%d]: %w", i, err)
		}
		body = append(append(body, line...), '\n')
	}
	var answer govapi.BatchAnswer
	if _, err := c.doType(ctx, http.MethodPost, govapi.PathEvents, nil, govapi.ContentTypeJSONLines, body, replayable, &answer); err != nil {
		return nil, err
	}
	if len(answer.Events) != len(evs) {
		return nil, fmt.Errorf("auditd answered %d events to a batch of %d", len(answer.Events), len(evs))
	}
	res := make([]AppendResult, len(evs))
	for i, ev := range answer.Events {
		res[i] = AppendResult{Event: ev, Created: true}
	}
	for _, line := range answer.ExistingLines {
		if line < 1 || line > len(res) {
			return nil, fmt.Errorf("auditd answered existing line %d to a batch of %d", line, len(evs))
		}
		res[line-1].Created = false
	}
	return res, nil
}

// EncodeEvent is the JSON a client sends for ev: without the fields auditd
// assigns (Go's zero values of seq, timestamp and prev_hash would otherwise
// be sent, and refused). It refuses an event that sets them.
func EncodeEvent(ev audit.Event) ([]byte, error) {
	switch {
	case ev.Seq != 0:
		return nil, errors.New("seq is assigned by auditd; leave it zero")
	case !ev.Timestamp.IsZero():
		return nil, errors.New("timestamp is assigned by auditd; leave it zero")
	case ev.PrevHash != "":
		return nil, errors.New("prev_hash is assigned by auditd; leave it empty")
	case ev.EventHash != "":
		return nil, errors.New("event_hash is assigned by auditd; leave it empty")
	case len(ev.Redactions) > 0:
		return nil, errors.New("redactions is assigned by auditd; leave it empty")
	}
	if ev.SchemaVersion == 0 {
		ev.SchemaVersion = audit.SchemaVersion
	}
	return json.Marshal(clientEvent{
		SchemaVersion: ev.SchemaVersion, EventID: ev.EventID, EventType: ev.EventType, TraceID: ev.TraceID,
		SessionID: ev.SessionID, Agent: ev.Agent, Principal: ev.Principal, ActionClass: ev.ActionClass,
		Resource: ev.Resource, Tool: ev.Tool, Outcome: ev.Outcome, PolicyDecision: ev.PolicyDecision,
		ApprovalID: ev.ApprovalID, Data: ev.Data,
	})
}

// clientEvent is audit.Event as a client sends it: without the members
// auditd assigns, and without event_id when auditd is to choose one. A test
// keeps its members equal to audit.Event's.
type clientEvent struct {
	SchemaVersion  int              `json:"schema_version"`
	EventID        string           `json:"event_id,omitempty"`
	EventType      string           `json:"event_type"`
	TraceID        string           `json:"trace_id,omitempty"`
	SessionID      string           `json:"session_id,omitempty"`
	Agent          string           `json:"agent,omitempty"`
	Principal      *audit.Principal `json:"principal,omitempty"`
	ActionClass    string           `json:"action_class,omitempty"`
	Resource       *audit.Resource  `json:"resource,omitempty"`
	Tool           *audit.Tool      `json:"tool,omitempty"`
	Outcome        *audit.Outcome   `json:"outcome,omitempty"`
	PolicyDecision json.RawMessage  `json:"policy_decision,omitempty"`
	ApprovalID     string           `json:"approval_id,omitempty"`
	Data           json.RawMessage  `json:"data,omitempty"`
}

// Get returns the event with id; a missing one is an *Error with status 404
// (IsNotFound).
func (c *Client) Get(ctx context.Context, id string) (audit.Event, error) {
	var ev audit.Event
	_, err := c.do(ctx, http.MethodGet, govapi.WithID(govapi.PathEvent, id), nil, nil, &ev)
	return ev, err
}

// Query returns one page of events matching q, in seq order (GET
// govapi.PathEvents). q.Limit 0 means the server's default
// (govapi.DefaultLimit).
func (c *Client) Query(ctx context.Context, q govapi.EventQuery) (govapi.EventPage, error) {
	var p govapi.EventPage
	_, err := c.do(ctx, http.MethodGet, govapi.PathEvents, q.Values(), nil, &p)
	return p, err
}

// QueryAll iterates over every event matching q, following the cursor page
// by page from q.AfterSeq (q.Limit is the page size). It stops at the first
// error, which it yields.
func (c *Client) QueryAll(ctx context.Context, q govapi.EventQuery) iter.Seq2[audit.Event, error] {
	return func(yield func(audit.Event, error) bool) {
		for {
			p, err := c.Query(ctx, q)
			if err != nil {
				yield(audit.Event{}, err)
				return
			}
			for _, ev := range p.Events {
				if !yield(ev, nil) {
					return
				}
			}
			if !p.HasMore || p.NextAfterSeq <= q.AfterSeq {
				return
			}
			q.AfterSeq = p.NextAfterSeq
		}
	}
}

// Verify asks auditd to verify the whole chain (GET govapi.PathVerify) and
// returns verify-chain's report.
func (c *Client) Verify(ctx context.Context) (audit.Report, error) {
	return c.verify(ctx, govapi.PathVerify)
}

// verify reads the govapi.VerifyReport at path.
func (c *Client) verify(ctx context.Context, path string) (audit.Report, error) {
	var r govapi.VerifyReport
	_, err := c.do(ctx, http.MethodGet, path, nil, nil, &r)
	return r.Report, err
}

// Health checks that auditd answers and returns its chain head (GET
// govapi.PathHealth). A degraded auditd (503) still answers: its Health,
// with no error.
func (c *Client) Health(ctx context.Context) (govapi.Health, error) {
	var h govapi.Health
	_, err := c.do(ctx, http.MethodGet, govapi.PathHealth, nil, nil, &h)
	return h, err
}

// NetReason is the innermost cause of a network error ("connection
// refused"), without the method and URL that net/http puts before it: for
// messages that name the URL themselves.
func NetReason(err error) string {
	for {
		var next error
		switch e := err.(type) {
		case *url.Error:
			next = e.Err
		case *net.OpError:
			next = e.Err
		case *os.SyscallError:
			next = e.Err
		}
		if next == nil {
			return err.Error()
		}
		err = next
	}
}

// do sends one request, with a JSON body when body is not nil, and decodes
// a 2xx JSON answer into out; any other answer becomes an *Error. It
// returns the status code.
func (c *Client) do(ctx context.Context, method, path string, q url.Values, body []byte, out any) (int, error) {
	return c.doType(ctx, method, path, q, govapi.ContentTypeJSON, body, false, out)
}

// doType is do with a body of the given Content-Type. replayable says that
// sending the request twice stores nothing twice (events with ids): net/http
// then resends it when a kept-alive connection turns out to be closed, as
// every one is after auditd restarts, instead of failing the call with EOF.
func (c *Client) doType(ctx context.Context, method, path string, q url.Values, contentType string, body []byte, replayable bool, out any) (int, error) {
	target := c.base.String() + path // path is escaped by the caller
	if len(q) > 0 {
		target += "?" + q.Encode()
	}
	var rd io.Reader
	if body != nil {
		rd = bytes.NewReader(body)
	}
	req, err := http.NewRequestWithContext(ctx, method, target, rd)
	if err != nil {
		return 0, err
	}
	req.Header.Set("Accept", govapi.ContentTypeJSON)
	if replayable {
		// A nil value marks the request replayable to net/http without
		// sending the header (net/http.Request.isReplayable).
		req.Header["Idempotency-Key"] = nil
	}
	if body != nil {
		req.Header.Set("Content-Type", contentType)
	}
	if c.agent != "" {
		req.Header.Set("User-Agent", c.agent)
	}
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	if c.user != "" {
		req.Header.Set(govapi.UserHeader, c.user)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(io.LimitReader(resp.Body, maxResponse+1))
	if err != nil {
		return resp.StatusCode, fmt.Errorf("reading auditd's answer: %w", err)
	}
	if len(data) > maxResponse {
		return resp.StatusCode, fmt.Errorf("auditd's answer is larger than %d bytes", maxResponse)
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		if h, ok := out.(*govapi.Health); ok && resp.StatusCode == http.StatusServiceUnavailable &&
			json.Unmarshal(data, h) == nil && h.Status == govapi.HealthDegraded {
			return resp.StatusCode, nil // alive, and saying what is wrong
		}
		return resp.StatusCode, responseError(resp.StatusCode, data)
	}
	if raw, ok := out.(*[]byte); ok {
		*raw = data // as sent (a checkpoint's note; a proof, parsed strictly by the caller)
		return resp.StatusCode, nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return resp.StatusCode, fmt.Errorf("auditd's answer to %s %s is not the expected JSON: %w", method, path, err)
	}
	return resp.StatusCode, nil
}

// responseError reads auditd's govapi.ErrorBody, or describes a body that
// is not one (a proxy's HTML page, say) without echoing it whole.
func responseError(code int, data []byte) *Error {
	var e struct {
		govapi.ErrorBody
		Detail json.RawMessage `json:"detail"` // kept as sent, for the caller to decode
	}
	if json.Unmarshal(data, &e) == nil && e.Error != "" {
		return &Error{StatusCode: code, Message: e.Error, Code: e.Code, Detail: e.Detail}
	}
	msg := termtext.Truncate(strings.TrimSpace(string(data)), 200)
	if msg == "" {
		msg = "empty answer"
	}
	return &Error{StatusCode: code, Message: msg}
}
