package auditd

import (
	"bytes"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/strictjson"
	"github.com/govkit/govkit/pkg/termtext"
	"github.com/govkit/govkit/pkg/token"
)

// Handler returns the HTTP API (DESIGN §6; routes and bodies in pkg/govapi):
//
//	POST /api/events       append one event: 201 and the stored event; 200 and the
//	                       original when its event_id is stored already. With
//	                       Content-Type application/x-ndjson (or application/jsonl):
//	                       up to 1000 events, one per line (api_batch.go)
//	GET  /api/events       query: filters ANDed, seq-cursor pagination (govapi.Page)
//	GET  /api/events/{id}  one event
//	GET  /api/verify       the chain's verification report (verify-chain's object)
//	GET  /api/checkpoint   the latest signed checkpoint, the note's text (checkpoints.go)
//	GET  /api/proof/inclusion?seq=N[&size=S]      checkpoint.InclusionProof
//	GET  /api/proof/consistency?from=A&to=B       checkpoint.ConsistencyProof
//	GET  /health           liveness and the chain head (govapi.Health)
//	GET  /metrics          Prometheus metrics
//
// the approvals API of DESIGN §7 (api_approvals.go), and the governance API
// of DESIGN §8 (governance*.go):
//
//	GET  /api/v1/governance                      status: policy, infra, chain, pending approvals
//	GET  /api/v1/governance/events               = GET /api/events
//	GET  /api/v1/governance/approvals/pending    = GET /v1/approvals/pending
//	GET  /api/v1/governance/verify               = GET /api/verify
//	GET  /api/v1/governance/explain              a hypothetical decision; records nothing
//	GET  /api/v1/governance/events/{id}/explain  the trace recorded with a decision
//	POST /api/v1/decisions                       decide, request an approval if required, record
//	POST /api/v1/incidents                       record an incident (auditor, admin or gateway)
//
// Each endpoint reads its request, calls an operation of the Server
// (Append, Decide, RequestApproval, …) and answers its result; every error
// is answered by errorAnswer (errors.go) as JSON:
// {"schema_version":1,"error":"…"}, with a "code" when a rule refused the
// request. With a tokens file every endpoint but /health needs a bearer
// token of the roles routes lists (auth.go). A request body must be JSON
// (Content-Type application/json; JSON Lines too for POST /api/events),
// else 415 (contenttype.go).
func (s *Server) Handler() http.Handler {
	metrics := promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}).ServeHTTP
	paths := s.routes(metrics)
	mux := http.NewServeMux()
	for path, methods := range paths {
		handlers := map[string]http.HandlerFunc{}
		var allow []string
		for method, rt := range methods {
			h := rt.h
			if rt.roles != nil {
				h = s.authorize(h, rt.roles...)
			}
			handlers[method] = h
			allow = append(allow, method)
		}
		if h, ok := handlers["GET"]; ok {
			handlers["HEAD"] = h
		}
		slices.Sort(allow)
		allowed := strings.Join(allow, ", ")
		mux.HandleFunc(path, func(w http.ResponseWriter, r *http.Request) {
			h, ok := handlers[r.Method]
			if !ok {
				w.Header().Set("Allow", allowed)
				s.answerError(w, refuse(NoMethod, "", "method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allowed))
				return
			}
			if r.Method == http.MethodPost && s.cfg.ReadOnly {
				// Every POST records something (issue 13: a read-only
				// auditd serves queries only).
				s.answerError(w, refuse(Unavailable, govapi.ReasonReadOnly, "%s", errReadOnly))
				return
			}
			// JSON bodies only, so that a web page cannot post (415;
			// contenttype.go).
			if err := checkBodyType(w, r, path); err != nil {
				s.answerError(w, err)
				return
			}
			h(w, r)
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.answerError(w, refuse(NoRoute, "", "no such endpoint: %s", r.URL.Path))
	})
	return mux
}

// route is one method of one path: its handler and the token roles that
// may call it (nil: no authentication).
type route struct {
	h     http.HandlerFunc
	roles []token.Role
}

// routes is the API's table, path → method → route, which Handler serves
// and Routes lists. It only binds s's methods, so Routes can call it on a
// nil Server; metrics is GET /metrics' handler.
func (s *Server) routes(metrics http.HandlerFunc) map[string]map[string]route {
	agent, auditor, approver := []token.Role{token.Agent, token.Gateway}, []token.Role{token.Auditor}, []token.Role{token.Approver}
	readers := []token.Role{token.Approver, token.Auditor, token.Agent, token.Gateway} // agents see their own requests
	// Incidents make govbot exit 2: only watchers and enforcement points
	// report them, never an agent (DESIGN §11).
	reporters := []token.Role{token.Auditor, token.Gateway}
	e := s.serve
	// Paths without methods, so that the literal /v1/approvals/pending
	// outranks /v1/approvals/{id}; methods are dispatched below, with a
	// JSON 405 for the others.
	paths := map[string]map[string]route{
		govapi.PathEvents:  {"POST": {e(s.postEvent), agent}, "GET": {e(s.queryEvents), auditor}},
		govapi.PathEvent:   {"GET": {e(s.getEvent), auditor}},
		govapi.PathVerify:  {"GET": {e(s.verify), auditor}},
		govapi.PathHealth:  {"GET": {e(s.health), nil}}, // the one endpoint without auth (DESIGN §7)
		govapi.PathMetrics: {"GET": {metrics, auditor}},
		// Checkpoints and proofs (issue 19): hashes only, which every
		// reader may check its receipts with.
		govapi.PathCheckpoint:       {"GET": {e(s.getCheckpoint), readers}},
		govapi.PathProofInclusion:   {"GET": {e(s.getInclusionProof), readers}},
		govapi.PathProofConsistency: {"GET": {e(s.getConsistencyProof), readers}},
		govapi.PathApprovals:        {"POST": {e(s.postApproval), agent}, "GET": {e(s.listApprovals), readers}},
		govapi.PathApprovalsPending: {"GET": {e(s.pendingApprovals), readers}},
		govapi.PathApproval:         {"GET": {e(s.getApproval), readers}},
		govapi.PathApprove:          {"POST": {e(s.approve), approver}},
		govapi.PathDeny:             {"POST": {e(s.deny), approver}},
		govapi.PathConsume:          {"POST": {e(s.consumeApproval), agent}},
		govapi.PathCancel:           {"POST": {e(s.cancelApproval), agent}},
		// The governance API (DESIGN §8, governance*.go). Events, pending
		// approvals and verification are the endpoints above, with their
		// roles, under the seed's gateway paths.
		govapi.PathGovernance:        {"GET": {e(s.governanceStatus), readers}},
		govapi.PathGovernanceEvents:  {"GET": {e(s.queryEvents), auditor}},
		govapi.PathGovernancePending: {"GET": {e(s.pendingApprovals), readers}},
		govapi.PathGovernanceVerify:  {"GET": {e(s.verify), auditor}},
		govapi.PathExplain:           {"GET": {e(s.explainHypothetical), readers}},
		govapi.PathEventExplain:      {"GET": {e(s.explainEvent), []token.Role{token.Auditor, token.Approver}}},
		govapi.PathDecisions:         {"POST": {e(s.postDecision), agent}},
		govapi.PathIncidents:         {"POST": {e(s.postIncident), reporters}},
	}
	return paths
}

// Route is one method on one path of auditd's API and the token roles any
// of which may call it (none: no authentication).
type Route struct {
	Method string
	Path   string
	Roles  []token.Role
}

// Routes lists every route Handler serves, by path and then method (HEAD
// aside: each GET answers it too), so that the API's documentation
// (docs/api.md) can be checked against the router itself (issue 20).
func Routes() []Route {
	var rs []Route
	for path, methods := range (*Server)(nil).routes(nil) {
		for method, rt := range methods {
			rs = append(rs, Route{Method: method, Path: path, Roles: rt.roles})
		}
	}
	slices.SortFunc(rs, func(a, b Route) int {
		return cmp.Or(cmp.Compare(a.Path, b.Path), cmp.Compare(a.Method, b.Method))
	})
	return rs
}

// StoredEvent is an event as auditd stored it: its event_id and its JSON
// (the stored canonical body with event_hash), served byte for byte.
type StoredEvent struct {
	EventID string
	JSON    json.RawMessage
}

func (s *Server) postEvent(r *http.Request) (reply, error) {
	if isJSONLines(r.Header.Get("Content-Type")) {
		return s.postEventBatch(r) // api_batch.go
	}
	hold := s.holdPending()
	defer hold.end()
	body, err := readBody(r)
	if err != nil {
		return reply{}, err
	}
	ev, err := audit.DecodeEvent(body)
	if err != nil {
		return reply{}, eventError(body, err)
	}
	hold.handOver()
	res, err := s.appendHeld(r.Context(), identity(r), ev)
	if err != nil {
		return reply{}, err
	}
	rep, _ := rawReply(res.status(), res.Value.JSON)
	if res.Created {
		rep.location = govapi.WithID(govapi.PathEvent, res.Value.EventID)
	}
	return rep, nil
}

// Append records ev as caller's (bindEvent: the caller, and the agent and
// principal its credential allows) and returns it as stored once it is
// durable. With an event_id it is idempotent for the same caller and the
// same event (Created false); anything else under a stored event_id is a
// Conflict event_id_reused.
func (s *Server) Append(ctx context.Context, caller token.Identity, ev audit.Event) (Recorded[StoredEvent], error) {
	s.w.pending.Add(1)
	return s.appendHeld(ctx, caller, ev)
}

// appendHeld is Append for an event already counted as pending
// (writer.collect); it ends the count.
func (s *Server) appendHeld(ctx context.Context, caller token.Identity, ev audit.Event) (Recorded[StoredEvent], error) {
	submitted := false
	defer func() {
		if !submitted {
			s.w.pending.Add(-1)
		}
	}()
	if err := s.bindEvent(caller, &ev); err != nil {
		return Recorded[StoredEvent]{}, err
	}
	req, err := s.newAppendReq(ev, s.cfg.Now().UTC().Round(0))
	if err != nil {
		return Recorded[StoredEvent]{}, err
	}
	if err := s.w.enqueue(ctx, req); err != nil {
		return Recorded[StoredEvent]{}, queueError(err)
	}
	submitted = true
	// Wait for the commit even if the client went away: the event is being
	// stored either way, and the answer costs nothing.
	return s.appended(req, <-req.done)
}

// appended is the result of req's commit: the stored event, or why not.
func (s *Server) appended(req *appendReq, res appendResult) (Recorded[StoredEvent], error) {
	switch {
	case res.err != nil:
		return Recorded[StoredEvent]{}, internal("storing the event: ", res.err)
	case !res.created && !sameEvent(req.draft, res.json):
		// A concurrent append took the event_id first with another event.
		return Recorded[StoredEvent]{}, reusedID(req.ev.EventID)
	}
	return Recorded[StoredEvent]{Value: StoredEvent{req.ev.EventID, res.json}, Created: res.created}, nil
}

// pendingHold is a request's place in the writer's count of appends on
// their way (writer.collect: the writer holds a commit open a little while
// more are coming), taken before its body is read. appendHeld and
// appendBatchHeld take the count over (handOver); otherwise end gives it
// back.
type pendingHold struct {
	w    *writer
	held bool
}

func (s *Server) holdPending() *pendingHold {
	s.w.pending.Add(1)
	return &pendingHold{w: s.w, held: true}
}

func (h *pendingHold) handOver() { h.held = false }

func (h *pendingHold) end() {
	if h.held {
		h.w.pending.Add(-1)
		h.held = false
	}
}

// queueError is why an event could not be queued: auditd shutting down, or
// the caller gone (503 either way: nothing was stored).
func queueError(err error) error {
	if errors.Is(err, errClosed) {
		return err
	}
	return refuse(Unavailable, "", "not queued: %v", err)
}

// newAppendReq makes a posted event, bound to its caller (bindEvent) and
// received at recv, a prepared append request. Without an event_id, auditd
// assigns one. A client's event_id is an idempotency key (DESIGN §6
// "Server-assigned fields"), which the writer checks: the commit that finds
// it stored already answers the stored event (writer.answerStored), and
// appended tells a retry (200) from another event under the same id (409).
// The writer learns that from the event_id's UNIQUE index as it inserts, so
// an event with a new id, the common case, costs no lookup (issue 20: the
// handler's lookup of every event_id was ~30% of auditd's CPU).
func (s *Server) newAppendReq(ev audit.Event, recv time.Time) (*appendReq, error) {
	req := &appendReq{ev: ev, recv: recv, done: make(chan appendResult, 1), w: s.w}
	if ev.EventID == "" {
		req.ev.EventID = audit.NewEventID(recv, s.cfg.Rand)
	} else {
		req.clientID = true
	}
	if err := req.prepare(); err != nil {
		return nil, err
	}
	return req, nil
}

// storedEvents looks a batch append's client event_ids up before any of
// its lines is queued, in one query (store GetMany): a batch must refuse a
// reused event_id before it stores any of its lines (DESIGN §3 "Bad
// input"), which the writer's check, at commit, could not.
func (s *Server) storedEvents(ctx context.Context, ids []string) (map[string]audit.Record, error) {
	if len(ids) == 0 {
		return nil, nil
	}
	recs, err := s.st.GetMany(ctx, ids)
	if err != nil {
		return nil, fmt.Errorf("looking up event_ids: %w", err)
	}
	stored := make(map[string]audit.Record, len(recs))
	for _, r := range recs {
		stored[r.EventID] = r
	}
	return stored, nil
}

// sameEvent reports whether stored, an event's stored JSON, records what
// draft would store: the same caller and the same event, but for the chain
// fields.
func sameEvent(draft *audit.Draft, stored []byte) bool {
	var ev audit.Event
	if json.Unmarshal(stored, &ev) != nil || ev.EventID == "" {
		return false
	}
	ev.EventHash = ""
	d, err := audit.Prepare(ev)
	return err == nil && bytes.Equal(d.Unsealed(), draft.Unsealed())
}

func reusedID(id string) error {
	return refuse(Conflict, govapi.CodeEventIDReused,
		"event_id %s is taken by another event (a retry must come from the same caller with the same event): choose a new event_id", id)
}

// Event returns the stored event with id, or NotFound.
func (s *Server) Event(ctx context.Context, id string) (StoredEvent, error) {
	rec, ok, err := s.st.Get(ctx, id)
	switch {
	case err != nil:
		return StoredEvent{}, fmt.Errorf("reading the event: %w", err)
	case !ok:
		return StoredEvent{}, refuse(NotFound, "", "no event with event_id %q", termtext.Truncate(id, 100))
	}
	line, err := storedJSON(rec)
	return StoredEvent{id, line}, err
}

func (s *Server) getEvent(r *http.Request) (reply, error) {
	ev, err := s.Event(r.Context(), r.PathValue("id"))
	if err != nil {
		return reply{}, err
	}
	return rawReply(http.StatusOK, ev.JSON)
}

// Events returns one page of the events q selects, as stored.
func (s *Server) Events(ctx context.Context, q govapi.EventQuery) (govapi.Page[json.RawMessage], error) {
	f := store.Filter{
		Agent: q.Agent, TraceID: q.TraceID, SessionID: q.SessionID, ActionClass: q.ActionClass,
		ToolName: q.ToolName, EventType: q.EventType, ApprovalID: q.ApprovalID, Since: q.Since, Until: q.Until,
		AfterSeq: q.AfterSeq, Limit: cmp.Or(q.Limit, govapi.DefaultLimit),
	}
	if f.Limit < 1 || f.Limit > govapi.MaxLimit || f.AfterSeq < 0 {
		return govapi.Page[json.RawMessage]{}, badField("limit", "must be between 1 and %d (after_seq >= 0)", govapi.MaxLimit)
	}
	recs, err := s.st.Query(ctx, f)
	if err != nil {
		return govapi.Page[json.RawMessage]{}, fmt.Errorf("querying events: %w", err)
	}
	page := govapi.Page[json.RawMessage]{SchemaVersion: audit.SchemaVersion, Events: make([]json.RawMessage, len(recs)), NextAfterSeq: f.AfterSeq}
	for i, rec := range recs {
		if page.Events[i], err = storedJSON(rec); err != nil {
			return govapi.Page[json.RawMessage]{}, err
		}
		page.NextAfterSeq = rec.Seq
	}
	if len(recs) >= f.Limit {
		// A full page: look one event ahead so that has_more is exact.
		probe := f
		probe.AfterSeq, probe.Limit = page.NextAfterSeq, 1
		ahead, err := s.st.Query(ctx, probe)
		if err != nil {
			return govapi.Page[json.RawMessage]{}, fmt.Errorf("querying events: %w", err)
		}
		page.HasMore = len(ahead) > 0
	}
	return page, nil
}

func (s *Server) queryEvents(r *http.Request) (reply, error) {
	v, err := query(r)
	if err != nil {
		return reply{}, err
	}
	q, err := govapi.ParseEventQuery(v)
	if err != nil {
		return reply{}, badRequest(err)
	}
	page, err := s.Events(r.Context(), q)
	if err != nil {
		return reply{}, err
	}
	return jsonReply(http.StatusOK, page)
}

// eventError is audit.DecodeEvent's refusal of body, an event, as the API
// answers it (govapi.CodeInvalidBody).
func eventError(body []byte, err error) error {
	if len(bytes.TrimSpace(body)) == 0 {
		return invalidBody(errors.New("request body: empty: expected an event, a JSON object"))
	}
	err = bodyError(body, err)
	var je *strictjson.Error
	if errors.As(err, &je) && je.Kind == strictjson.Trailing {
		// Most likely a batch sent with the Content-Type of one event.
		return invalidBody(fmt.Errorf("line %d, column %d: data after the JSON value (send one event, or a batch as Content-Type application/x-ndjson)", je.Line, je.Column))
	}
	return invalidBody(err)
}

// query reads r's query string strictly (govapi.ParseQuery).
func query(r *http.Request) (url.Values, error) {
	v, err := govapi.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, badRequest(err)
	}
	return v, nil
}

// noQuery refuses any query parameter on an endpoint that takes none.
func noQuery(r *http.Request) error {
	v, err := query(r)
	if err == nil {
		if err = govapi.CheckParams(v); err != nil {
			err = badRequest(err)
		}
	}
	return err
}

// readBody reads a request body of at most govapi.MaxBody bytes.
func readBody(r *http.Request) ([]byte, error) {
	body, err := readAll(http.MaxBytesReader(nil, r.Body, govapi.MaxBody), r.ContentLength)
	var tooBig *http.MaxBytesError
	switch {
	case errors.As(err, &tooBig):
		return nil, refuse(TooLarge, govapi.CodeBodyTooLarge, "request body larger than %d bytes (1 MiB)", govapi.MaxBody)
	case err != nil:
		return nil, badRequest(fmt.Errorf("reading the request body: %w", err))
	}
	return body, nil
}

// decodeBody reads one JSON object into v strictly: unknown fields, a
// second value, what audit.CheckRequestJSON refuses (duplicate members,
// invalid UTF-8, integers beyond 2^53, NUL) and bodies over govapi.MaxBody are
// refused naming the problem in JSON's terms (strictjson; issue 20: never
// "Go struct field DecisionRequest.tool of type govapi.Tool"). An empty
// body is allowed when emptyOK.
// readAll is io.ReadAll into a buffer of the body's declared length (and
// one byte more, to read the end without growing), when it has one within
// govapi.MaxBody: io.ReadAll starts at 512 bytes and grows, which for an
// event's body is two allocations and a copy per request (issue 20).
func readAll(rd io.Reader, length int64) ([]byte, error) {
	if length <= 0 || length > govapi.MaxBody {
		return io.ReadAll(rd)
	}
	b := make([]byte, 0, length+1)
	for {
		n, err := rd.Read(b[len(b):cap(b)])
		b = b[:len(b)+n]
		if err != nil {
			if err == io.EOF {
				err = nil
			}
			return b, err
		}
		if len(b) == cap(b) {
			b = append(b, 0)[:len(b)] // longer than declared: let append grow it
		}
	}
}

func decodeBody(r *http.Request, v any, emptyOK bool) error {
	body, err := readBody(r)
	if err != nil {
		return err
	}
	if emptyOK && len(bytes.TrimSpace(body)) == 0 {
		return nil
	}
	if len(bytes.TrimSpace(body)) == 0 {
		return invalidBody(fmt.Errorf("request body: %w", strictjson.Decode(body, v)))
	}
	// encoding/json alone would take the last of duplicate members (also
	// ones that differ in case), replace invalid UTF-8 with U+FFFD and
	// round big integers: refused first, as POST /api/events refuses them
	// (issue 13 "Bad input, everywhere").
	if err := audit.CheckRequestJSON(body); err != nil {
		return invalidBody(fmt.Errorf("request body: %w", bodyError(body, err)))
	}
	if err := strictjson.Decode(body, v); err != nil {
		return invalidBody(fmt.Errorf("request body: %w", err))
	}
	return nil
}

func (s *Server) verify(r *http.Request) (reply, error) {
	if err := noQuery(r); err != nil {
		return reply{}, err
	}
	rep, err := s.Verify(r.Context())
	if err != nil {
		return reply{}, fmt.Errorf("verifying the chain: %w", err)
	}
	if rep.BrokenLinks == nil {
		rep.BrokenLinks = []audit.BrokenLink{}
	}
	return jsonReply(http.StatusOK, govapi.VerifyReport{SchemaVersion: audit.SchemaVersion, Report: rep})
}

// Health is what GET /health says: the chain head, the last verification,
// and whether writes are durable. It answers from state the writer keeps
// (health.go), never by touching the database: a load balancer may poll
// it often.
func (s *Server) Health() govapi.Health {
	seq, hash := s.head.get()
	h := govapi.Health{SchemaVersion: audit.SchemaVersion, Status: govapi.HealthOK, HeadSeq: seq, HeadHash: hash, Chain: s.chain()}
	if h.Reason, h.Error = s.dbHealth.get(); h.Reason != "" {
		h.Status = govapi.HealthDegraded
	}
	return h
}

func (s *Server) health(r *http.Request) (reply, error) {
	h := s.Health()
	status := http.StatusOK
	if h.Status != govapi.HealthOK {
		status = http.StatusServiceUnavailable
	}
	return jsonReply(status, h)
}

// internal marks err, a failure no rule explains, with what auditd was
// doing; a typed error keeps its own message.
func internal(doing string, err error) error {
	if errorAnswer(err).status != http.StatusInternalServerError {
		return err
	}
	return fmt.Errorf("%s%w", doing, err)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(body)
	w.Write([]byte{'\n'})
}
