package auditd

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/store"
	"github.com/govkit/govkit/pkg/token"
)

// Handler returns the HTTP API (DESIGN §6):
//
//	POST /api/events       append one event: 201 and the stored event; 200 and the
//	                       original when its event_id is stored already. With
//	                       Content-Type application/x-ndjson (or application/jsonl):
//	                       up to 1000 events, one per line (api_batch.go)
//	GET  /api/events       query: filters ANDed, seq-cursor pagination (Page)
//	GET  /api/events/{id}  one event
//	GET  /api/verify       the chain's verification report (verify-chain's object)
//	GET  /health           liveness and the chain head (Health)
//	GET  /metrics          Prometheus metrics
//
// the approvals API of DESIGN §7 (api_approvals.go), and the governance API
// of DESIGN §8 (governance*.go; paths in pkg/govapi):
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
// With a tokens file every endpoint but /health needs a bearer token of the
// roles listed below (auth.go). A request body must be JSON (Content-Type
// application/json; JSON Lines too for POST /api/events), else 415
// (contenttype.go). Every error is JSON:
// {"schema_version":1,"error":"…"}, with a "code" when a rule refused the
// request.
func (s *Server) Handler() http.Handler {
	type route struct {
		h     http.HandlerFunc
		roles []token.Role // nil: no authentication
	}
	metrics := promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}).ServeHTTP
	agent, auditor, approver := []token.Role{token.Agent, token.Gateway}, []token.Role{token.Auditor}, []token.Role{token.Approver}
	readers := []token.Role{token.Approver, token.Auditor, token.Agent, token.Gateway} // agents see their own requests
	// Incidents make govbot exit 2: only watchers and enforcement points
	// report them, never an agent (DESIGN §11).
	reporters := []token.Role{token.Auditor, token.Gateway}
	// Paths without methods, so that the literal /v1/approvals/pending
	// outranks /v1/approvals/{id}; methods are dispatched below, with a
	// JSON 405 for the others.
	paths := map[string]map[string]route{
		"/api/events":                {"POST": {s.postEvent, agent}, "GET": {s.queryEvents, auditor}},
		"/api/events/{id}":           {"GET": {s.getEvent, auditor}},
		"/api/verify":                {"GET": {s.verify, auditor}},
		"/health":                    {"GET": {s.health, nil}}, // the one endpoint without auth (DESIGN §7)
		"/metrics":                   {"GET": {metrics, auditor}},
		"/v1/approvals":              {"POST": {s.postApproval, agent}, "GET": {s.listApprovals, readers}},
		"/v1/approvals/pending":      {"GET": {s.pendingApprovals, readers}},
		"/v1/approvals/{id}":         {"GET": {s.getApproval, readers}},
		"/v1/approvals/{id}/approve": {"POST": {s.approve, approver}},
		"/v1/approvals/{id}/deny":    {"POST": {s.deny, approver}},
		"/v1/approvals/{id}/consume": {"POST": {s.consumeApproval, agent}},
		"/v1/approvals/{id}/cancel":  {"POST": {s.cancelApproval, agent}},
		// The governance API (DESIGN §8, governance*.go). Events, pending
		// approvals and verification are the handlers above, with their
		// roles, under the seed's gateway paths.
		govapi.PathGovernance:       {"GET": {s.governanceStatus, readers}},
		govapi.PathGovernanceEvents:       {"GET": {s.queryEvents, auditor}},
		govapi.PathGovernancePending:      {"GET": {s.pendingApprovals, readers}},
		govapi.PathGovernanceVerify:       {"GET": {s.verify, auditor}},
		govapi.PathExplain:      {"GET": {s.explainHypothetical, readers}},
		govapi.PathEventExplain: {"GET": {s.explainEvent, []token.Role{token.Auditor, token.Approver}}},
		govapi.PathDecisions:    {"POST": {s.postDecision, agent}},
		govapi.PathIncidents:    {"POST": {s.postIncident, reporters}},
	}
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
			if h, ok := handlers[r.Method]; ok {
				if r.Method == http.MethodPost && s.cfg.ReadOnly {
					// Every POST records something (issue 13: a
					// read-only auditd serves queries only).
					s.failCode(w, http.StatusServiceUnavailable, ReasonReadOnly, errReadOnly.Error())
					return
				}
				// JSON bodies only, so that a web page cannot post (415;
				// contenttype.go).
				if s.checkBodyType(w, r, path) {
					h(w, r)
				}
				return
			}
			w.Header().Set("Allow", allowed)
			s.fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("method %s not allowed on %s (allowed: %s)", r.Method, r.URL.Path, allowed))
		})
	}
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		s.fail(w, http.StatusNotFound, fmt.Sprintf("no such endpoint: %s", r.URL.Path))
	})
	return mux
}

// Page is the body of GET /api/events. NextAfterSeq is the cursor for the
// next page: the seq of the last event returned (the request's after_seq
// when none was). HasMore tells whether another matching event exists now;
// polling with after_seq=NextAfterSeq later returns events committed since.
type Page struct {
	SchemaVersion int               `json:"schema_version"`
	Events        []json.RawMessage `json:"events"`
	NextAfterSeq  int64             `json:"next_after_seq"`
	HasMore       bool              `json:"has_more"`
}

// Health is the body of GET /health. Status is "ok" (200), or "degraded"
// (503) while auditd cannot make writes durable: Reason is then one of the
// Reason* codes and Error says what happened (DESIGN §11 "Health tells the
// truth"). Chain is the result of the last verification: unverified,
// verified or broken.
type Health struct {
	SchemaVersion int    `json:"schema_version"`
	Status        string `json:"status"`
	Reason        string `json:"reason,omitempty"`
	Error         string `json:"error,omitempty"`
	HeadSeq       int64  `json:"head_seq"`
	HeadHash      string `json:"head_hash"`
	Chain         string `json:"chain"`
}

// VerifyReport is the body of GET /api/verify: audit.Report with the schema
// version every govkit object carries.
type VerifyReport struct {
	SchemaVersion int `json:"schema_version"`
	audit.Report
}

func (s *Server) postEvent(w http.ResponseWriter, r *http.Request) {
	if isJSONLines(r.Header.Get("Content-Type")) {
		s.postEventBatch(w, r) // api_batch.go
		return
	}
	// The writer holds a batch open a little while appends are on their
	// way (writer.collect); the writer's answer ends this one's count.
	s.w.pending.Add(1)
	submitted := false
	defer func() {
		if !submitted {
			s.w.pending.Add(-1)
		}
	}()
	body, ok := s.readBody(w, r)
	if !ok {
		return
	}
	ev, err := audit.DecodeEvent(body)
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	if err := s.bindEvent(identity(r), &ev); err != nil {
		s.answerError(w, err)
		return
	}
	req, stored, err := s.newAppendReq(r.Context(), ev, s.cfg.Now().UTC().Round(0))
	switch {
	case err != nil:
		s.answerError(w, err)
		return
	case req == nil:
		s.m.duplicates.Inc()
		s.writeStored(w, http.StatusOK, stored)
		return
	}
	if err := s.w.enqueue(r.Context(), req); err != nil {
		s.fail(w, http.StatusServiceUnavailable, err.Error())
		return
	}
	submitted = true
	// Wait for the commit even if the client went away: the event is being
	// stored either way, and the answer costs nothing.
	res := <-req.done
	if res.err == nil && !res.created && !sameEvent(req.draft, res.json) {
		// A concurrent append took the event_id first with another event.
		res.err = reusedID(req.ev.EventID)
	}
	switch a := appendAnswer(res); a.status {
	case http.StatusCreated:
		w.Header().Set("Location", "/api/events/"+url.PathEscape(req.ev.EventID))
		writeJSON(w, a.status, res.json)
	case http.StatusOK:
		writeJSON(w, a.status, res.json)
	default:
		s.failDetail(w, a.status, a.code, a.msg, a.detail)
	}
}

// newAppendReq makes a posted event, bound to its caller (bindEvent) and
// received at recv, a prepared append request. A client's event_id is an
// idempotency key (DESIGN §6 "Server-assigned fields"): when it is stored
// already, newAppendReq returns no request and the stored record, which a
// retry gets back (the caller counts it in duplicates once it answers) —
// but only when the same caller sends the same event (DESIGN §11): anything
// else is 409 event_id_reused, and the stored event is never shown, so a
// known event_id cannot be used to read another agent's event. Without an
// event_id, auditd assigns one.
func (s *Server) newAppendReq(ctx context.Context, ev audit.Event, recv time.Time) (*appendReq, audit.Record, error) {
	req := &appendReq{ev: ev, recv: recv, done: make(chan appendResult, 1), w: s.w}
	if ev.EventID == "" {
		req.ev.EventID = audit.NewEventID(recv, s.cfg.Rand)
		return req, audit.Record{}, req.prepare()
	}
	req.clientID = true
	if err := req.prepare(); err != nil {
		return nil, audit.Record{}, err
	}
	rec, ok, err := s.st.Get(ctx, ev.EventID)
	if err != nil {
		return nil, audit.Record{}, fmt.Errorf("looking up event_id: %w", err)
	}
	if !ok {
		return req, audit.Record{}, nil
	}
	if !sameEvent(req.draft, rec.Body) {
		return nil, audit.Record{}, reusedID(ev.EventID)
	}
	return nil, rec, nil
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
	return refuse(http.StatusConflict, CodeEventIDReused,
		"event_id %s is taken by another event (a retry must come from the same caller with the same event): choose a new event_id", id)
}

// appendAnswer is the answer to the writer's result for one append: 201
// created, 200 stored already, or errorAnswer's for its error.
func appendAnswer(res appendResult) apiError {
	switch {
	case res.err != nil:
		return errorAnswer(res.err, "storing the event: ")
	case res.created:
		return apiError{status: http.StatusCreated}
	}
	return apiError{status: http.StatusOK}
}

func (s *Server) getEvent(w http.ResponseWriter, r *http.Request) {
	id := r.PathValue("id")
	rec, ok, err := s.st.Get(r.Context(), id)
	switch {
	case err != nil:
		s.fail(w, http.StatusInternalServerError, "reading the event: "+err.Error())
	case !ok:
		s.fail(w, http.StatusNotFound, "no event with event_id "+strconv.Quote(truncate(id, 100)))
	default:
		s.writeStored(w, http.StatusOK, rec)
	}
}

func (s *Server) queryEvents(w http.ResponseWriter, r *http.Request) {
	q, err := parseQuery(r.URL.RawQuery)
	var f store.Filter
	if err == nil {
		f, err = ParseFilter(q)
	}
	if err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	recs, err := s.st.Query(r.Context(), f)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "querying events: "+err.Error())
		return
	}
	next, more := f.AfterSeq, false
	if len(recs) > 0 {
		next = recs[len(recs)-1].Seq
	}
	if len(recs) >= f.Limit {
		// A full page: look one event ahead so that has_more is exact.
		probe := f
		probe.AfterSeq, probe.Limit = next, 1
		ahead, err := s.st.Query(r.Context(), probe)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, "querying events: "+err.Error())
			return
		}
		more = len(ahead) > 0
	}
	buf := make([]byte, 0, 64+len(recs)*512)
	buf = append(buf, `{"schema_version":1,"events":[`...)
	for i, rec := range recs {
		line, err := storedJSON(rec)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, err.Error())
			return
		}
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = append(buf, line...)
	}
	buf = fmt.Appendf(buf, `],"next_after_seq":%d,"has_more":%t}`, next, more)
	writeJSON(w, http.StatusOK, buf)
}

// Query parameters of GET /api/events.
var filterParams = map[string]bool{
	"agent": true, "trace_id": true, "session_id": true, "action_class": true, "tool_name": true,
	"event_type": true, "since": true, "until": true, "after_seq": true, "limit": true,
}

// ParseFilter reads GET /api/events's query parameters strictly: an unknown
// or repeated parameter, or a bad value, is an error naming it. Limit is
// always set (store.DefaultLimit when absent).
func ParseFilter(q url.Values) (store.Filter, error) {
	if err := checkParams(q, filterParams); err != nil {
		return store.Filter{}, err
	}
	f := store.Filter{
		Agent: q.Get("agent"), TraceID: q.Get("trace_id"), SessionID: q.Get("session_id"),
		ActionClass: q.Get("action_class"), ToolName: q.Get("tool_name"), EventType: q.Get("event_type"),
		Limit: store.DefaultLimit,
	}
	var err error
	for name, t := range map[string]*time.Time{"since": &f.Since, "until": &f.Until} {
		if v := q.Get(name); v != "" {
			if *t, err = time.Parse(time.RFC3339Nano, v); err != nil {
				return store.Filter{}, fmt.Errorf("%s=%q is not an RFC 3339 time (like 2026-03-09T14:00:00Z)", name, truncate(v, 40))
			}
		}
	}
	if f.AfterSeq, f.Limit, err = cursorParams(q); err != nil {
		return store.Filter{}, err
	}
	return f, nil
}

// parseQuery parses a raw query string strictly, as url.ParseQuery does
// but refusing what r.URL.Query() silently drops (issue 13): a pair that
// is not URL-encoded (agent=%zz, a=%), a ';' separator, invalid UTF-8 and
// control characters. A dropped agent=%zz would otherwise answer an
// unfiltered page. The error names the parameter.
func parseQuery(raw string) (url.Values, error) {
	q := url.Values{}
	for raw != "" {
		var pair string
		pair, raw, _ = strings.Cut(raw, "&")
		if pair == "" {
			continue
		}
		k, v, _ := strings.Cut(pair, "=")
		name, err := url.QueryUnescape(k)
		if err != nil || strings.Contains(pair, ";") {
			name = k // as sent: unescaping failed
		}
		switch {
		case err != nil:
			return nil, fmt.Errorf("query parameter %q is not URL-encoded: %v", truncate(name, 40), err)
		case strings.Contains(pair, ";"):
			return nil, fmt.Errorf("query parameter %q holds a ';': separate parameters with '&', and encode a ';' in a value as %%3B", truncate(name, 40))
		}
		val, err := url.QueryUnescape(v)
		if err != nil {
			return nil, fmt.Errorf("query parameter %s: the value is not URL-encoded: %v", strconv.Quote(truncate(name, 40)), err)
		}
		for _, s := range [2]string{name, val} {
			if !utf8.ValidString(s) {
				return nil, fmt.Errorf("query parameter %q is not valid UTF-8", truncate(strings.ToValidUTF8(name, "\ufffd"), 40))
			}
			if i := strings.IndexFunc(s, unicode.IsControl); i >= 0 {
				return nil, fmt.Errorf("query parameter %q has a control character at byte %d", truncate(strings.Map(printable, name), 40), i)
			}
		}
		q[name] = append(q[name], val)
	}
	return q, nil
}

// printable replaces a control character, for echoing a name in an error.
func printable(r rune) rune {
	if unicode.IsControl(r) {
		return '?'
	}
	return r
}

// checkParams refuses a query parameter that is not known or is repeated,
// naming it.
func checkParams(q url.Values, known map[string]bool) error {
	for k, v := range q {
		if !known[k] {
			return fmt.Errorf("unknown query parameter %q", truncate(k, 40))
		}
		if len(v) > 1 {
			return fmt.Errorf("query parameter %q given more than once", k)
		}
	}
	return nil
}

// cursorParams reads the pagination parameters after_seq (default 0) and
// limit (default store.DefaultLimit).
func cursorParams(q url.Values) (afterSeq int64, limit int, err error) {
	limit = store.DefaultLimit
	if v := q.Get("after_seq"); v != "" {
		if afterSeq, err = strconv.ParseInt(v, 10, 64); err != nil || afterSeq < 0 {
			return 0, 0, fmt.Errorf("after_seq=%q is not a seq (an integer >= 0)", truncate(v, 40))
		}
	}
	if v := q.Get("limit"); v != "" {
		if limit, err = strconv.Atoi(v); err != nil || limit < 1 || limit > store.MaxLimit {
			return 0, 0, fmt.Errorf("limit=%q is not between 1 and %d", truncate(v, 40), store.MaxLimit)
		}
	}
	return afterSeq, limit, nil
}

// readBody reads a request body of at most MaxBody bytes, answering 413
// beyond it.
func (s *Server) readBody(w http.ResponseWriter, r *http.Request) ([]byte, bool) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, MaxBody))
	if err != nil {
		var tooBig *http.MaxBytesError
		if errors.As(err, &tooBig) {
			s.fail(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body larger than %d bytes (1 MiB)", MaxBody))
		} else {
			s.fail(w, http.StatusBadRequest, "reading the request body: "+err.Error())
		}
		return nil, false
	}
	return body, true
}

func (s *Server) verify(w http.ResponseWriter, r *http.Request) {
	rep, err := s.Verify(r.Context())
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "verifying the chain: "+err.Error())
		return
	}
	if rep.BrokenLinks == nil {
		rep.BrokenLinks = []audit.BrokenLink{}
	}
	b, err := json.Marshal(VerifyReport{SchemaVersion: audit.SchemaVersion, Report: rep})
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, http.StatusOK, b)
}

// health answers from state the writer keeps (health.go), never by
// touching the database: a load balancer may poll it often.
func (s *Server) health(w http.ResponseWriter, r *http.Request) {
	seq, hash := s.head.get()
	h := Health{SchemaVersion: audit.SchemaVersion, Status: "ok", HeadSeq: seq, HeadHash: hash, Chain: s.chain()}
	status := http.StatusOK
	if h.Reason, h.Error = s.dbHealth.get(); h.Reason != "" {
		h.Status, status = "degraded", http.StatusServiceUnavailable
	}
	b, _ := json.Marshal(h)
	writeJSON(w, status, b)
}

func (s *Server) writeStored(w http.ResponseWriter, code int, rec audit.Record) {
	line, err := storedJSON(rec)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	writeJSON(w, code, line)
}

// fail answers with a JSON error object and counts it.
func (s *Server) fail(w http.ResponseWriter, status int, msg string) { s.failCode(w, status, "", msg) }

// failCode is fail with the code of the rule that refused the request.
func (s *Server) failCode(w http.ResponseWriter, status int, code, msg string) {
	s.failDetail(w, status, code, msg, nil)
}

// failDetail is failCode with the decision or trace behind a refusal.
func (s *Server) failDetail(w http.ResponseWriter, status int, code, msg string, detail any) {
	s.m.rejected.WithLabelValues(strconv.Itoa(status)).Inc()
	b, err := json.Marshal(govapi.ErrorBody{SchemaVersion: audit.SchemaVersion, Error: msg, Code: code, Detail: detail})
	if err != nil {
		b, _ = json.Marshal(govapi.ErrorBody{SchemaVersion: audit.SchemaVersion, Error: msg, Code: code})
	}
	writeJSON(w, status, b)
}

func writeJSON(w http.ResponseWriter, code int, body []byte) {
	h := w.Header()
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	w.WriteHeader(code)
	w.Write(body)
	w.Write([]byte{'\n'})
}

// truncate bounds untrusted input echoed in an error (DESIGN §3).
func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n] + "…"
}
