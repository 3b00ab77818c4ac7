package serve

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"strings"

	"github.com/govkit/govkit/pkg/convstore"
	"github.com/govkit/govkit/pkg/llm"
	"github.com/govkit/govkit/pkg/session/conversation"
	"github.com/govkit/govkit/pkg/strictjson"
)

// API routes (JSON; DESIGN §3's error shape {"error":{"code","message"}}).
const (
	PathConversations = "/api/v1/conversations"
	PathConversation  = "/api/v1/conversations/{id}"
	PathMessages      = "/api/v1/conversations/{id}/messages"
	PathCancel        = "/api/v1/conversations/{id}/cancel"
	PathMode          = "/api/v1/conversations/{id}/mode"
	PathContinue      = "/api/v1/conversations/{id}/continue"
	PathContinuation  = "/api/v1/conversations/{id}/continuation"
	PathEvents        = "/api/v1/conversations/{id}/events"
)

// Bounds of what a client sends.
const (
	maxBody      = 32 << 20 // a message with its images, base64
	maxText      = 1 << 20
	maxImages    = 8
	maxListLimit = 1000
)

// CreateInput is POST /api/v1/conversations.
type CreateInput struct {
	Cwd   string `json:"cwd"`
	Model string `json:"model,omitempty"`
	// Mode "unrestricted" starts without the sandbox; "" or "restricted"
	// is restricted where Landlock works (REQ-BED-014).
	Mode string `json:"mode,omitempty"`
}

// MessageInput is POST …/messages.
type MessageInput struct {
	Text   string       `json:"text"`
	Images []ImageInput `json:"images,omitempty"`
}

// ImageInput is an attached image, base64.
type ImageInput struct {
	MediaType string `json:"media_type"`
	Data      string `json:"data"`
}

// ModeInput is POST …/mode.
type ModeInput struct {
	Action string `json:"action"` // downgrade | approve | deny
	Reason string `json:"reason,omitempty"`
}

// ConversationView is GET …/{id}: the state and the whole history.
type ConversationView struct {
	StateView
	Messages []conversation.Message `json:"messages"`
}

// Handler serves the API.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", func(w http.ResponseWriter, r *http.Request) {
		writeJSON(w, http.StatusOK, map[string]any{"status": "ok", "landlock": s.o.LandlockAvailable, "model": s.o.Model})
	})
	mux.HandleFunc("POST "+PathConversations, s.create)
	mux.HandleFunc("GET "+PathConversations, s.list)
	mux.HandleFunc("GET "+PathConversation, s.show)
	mux.HandleFunc("POST "+PathMessages, s.send)
	mux.HandleFunc("POST "+PathCancel, s.simple(conversation.EvCancel))
	mux.HandleFunc("POST "+PathContinue, s.simple(conversation.EvContinue))
	mux.HandleFunc("POST "+PathMode, s.mode)
	mux.HandleFunc("POST "+PathContinuation, s.continuation)
	mux.HandleFunc("GET "+PathEvents, s.events)
	return s.authenticate(mux)
}

func (s *Server) create(w http.ResponseWriter, r *http.Request) {
	var in CreateInput
	if !readJSON(w, r, &in) {
		return
	}
	c, status, err := s.Create(r.Context(), in, "", "")
	if err != nil {
		code := "invalid_input"
		if status == http.StatusForbidden {
			code = "approval_required"
		}
		writeError(w, status, code, err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, c)
}

// Create starts a conversation; continuedFrom and summary seed one from
// another's continuation (REQ-BED-021).
func (s *Server) Create(ctx context.Context, in CreateInput, continuedFrom, summary string) (StateView, int, error) {
	cwd, err := s.workdir(in.Cwd)
	if err != nil {
		return StateView{}, http.StatusBadRequest, err
	}
	model := in.Model
	if model == "" {
		model = s.o.Model
	}
	unrestricted := false
	switch in.Mode {
	case "", string(conversation.Restricted):
	case string(conversation.Unrestricted):
		// With auditd an upgrade is a person's approval there (B-15): a
		// caller may not skip it by asking for unrestricted up front.
		if s.o.Auditd != nil && s.o.LandlockAvailable {
			return StateView{}, http.StatusForbidden, errors.New("mode: unrestricted at creation is refused where auditd governs mode upgrades; create the conversation restricted, and the agent asks with request_mode_upgrade, which a person approves in auditd")
		}
		unrestricted = true
	default:
		return StateView{}, http.StatusBadRequest, fmt.Errorf("mode: %q is not restricted or unrestricted", in.Mode)
	}
	conv, effs, err := s.newConversation(conversation.Config{ID: newID("conv"), Cwd: cwd, Model: model,
		LandlockAvailable: s.o.LandlockAvailable, Unrestricted: unrestricted, ContinuedFrom: continuedFrom, Summary: summary})
	if err != nil {
		return StateView{}, http.StatusInternalServerError, err
	}
	c := conv.Machine
	rec := convstore.Conversation{ID: c.ID, ContinuedFrom: continuedFrom, Owner: owner(ctx), Cwd: cwd, Model: model, Mode: string(c.Mode),
		State: string(c.State), CreatedAt: s.o.Now()}
	if rec.Snapshot, err = s.snapshot(conv); err != nil {
		return StateView{}, http.StatusInternalServerError, err
	}
	if err := s.o.Store.Create(ctx, rec); err != nil {
		return StateView{}, http.StatusInternalServerError, err
	}
	d := s.start(conv, rec)
	d.post(effectsEvent(effs))
	var v StateView
	err = d.view(ctx, func(c *conversation.Conversation) { v = stateOf(c) })
	return v, http.StatusCreated, err
}

// workdir is the conversation's fixed working directory (REQ-BED-010): an
// existing directory, under --workdir-root when one is set.
func (s *Server) workdir(dir string) (string, error) {
	if dir == "" {
		return "", errors.New("cwd: required (the conversation's working directory)")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cwd: %v", err)
	}
	real, err := filepath.EvalSymlinks(abs)
	if err != nil {
		return "", fmt.Errorf("cwd: %v", err)
	}
	if fi, err := os.Stat(real); err != nil || !fi.IsDir() {
		return "", fmt.Errorf("cwd: %s is not a directory", dir)
	}
	if root := s.o.WorkdirRoot; root != "" {
		rel, err := filepath.Rel(root, real)
		if err != nil || rel == ".." || strings.HasPrefix(rel, "../") {
			return "", fmt.Errorf("cwd: %s is outside --workdir-root %s", dir, root)
		}
	}
	return real, nil
}

func (s *Server) list(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	lo := convstore.ListOptions{IncludeSubagents: q.Get("include_subagents") == "true", ParentID: q.Get("parent_id"), Limit: maxListLimit}
	if id, ok := caller(r.Context()); ok && !seesAll(id) {
		lo.Owner = id.Name // each person lists their own
	}
	recs, err := s.o.Store.List(r.Context(), lo)
	if err != nil {
		writeError(w, http.StatusInternalServerError, "store", err.Error())
		return
	}
	out := make([]StateView, 0, len(recs))
	for _, rec := range recs {
		v := StateView{ID: rec.ID, ParentID: rec.ParentID, ContinuedFrom: rec.ContinuedFrom, Subagent: rec.Subagent,
			State: conversation.State(rec.State), Mode: conversation.Mode(rec.Mode), Cwd: rec.Cwd, Model: rec.Model}
		if d, ok := s.driver(rec.ID); ok {
			_ = d.view(r.Context(), func(c *conversation.Conversation) { v = stateOf(c) })
		}
		out = append(out, v)
	}
	writeJSON(w, http.StatusOK, map[string]any{"conversations": out})
}

func (s *Server) lookup(w http.ResponseWriter, r *http.Request) (*driver, bool) {
	d, ok := s.driver(r.PathValue("id"))
	if !ok || !may(r, d.owner) {
		writeError(w, http.StatusNotFound, "not_found", "no conversation "+r.PathValue("id"))
		return nil, false
	}
	return d, true
}

func (s *Server) show(w http.ResponseWriter, r *http.Request) {
	d, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var v ConversationView
	if err := d.view(r.Context(), func(c *conversation.Conversation) {
		v = ConversationView{StateView: stateOf(c), Messages: append([]conversation.Message(nil), c.Messages...)}
		v.ApprovalID = d.approvalID
	}); err != nil {
		return
	}
	writeJSON(w, http.StatusOK, v)
}

func (s *Server) send(w http.ResponseWriter, r *http.Request) {
	d, ok := s.lookup(w, r)
	if !ok {
		return
	}
	if d.subagent {
		// A sub-agent answers its parent only: a person's message would
		// start it again after its result (or timeout) was delivered.
		writeError(w, http.StatusConflict, "subagent", "sub-agents take no messages: talk to the parent conversation")
		return
	}
	var in MessageInput
	if !readJSON(w, r, &in) {
		return
	}
	if in.Text == "" && len(in.Images) == 0 {
		writeError(w, http.StatusBadRequest, "invalid_input", "text: required")
		return
	}
	if len(in.Text) > maxText || len(in.Images) > maxImages {
		writeError(w, http.StatusBadRequest, "invalid_input", fmt.Sprintf("a message holds at most %d bytes of text and %d images", maxText, maxImages))
		return
	}
	ev := conversation.Event{Type: conversation.EvUserMessage, Text: in.Text}
	for i, img := range in.Images {
		a, err := s.attach(r.Context(), img)
		if err != nil {
			writeError(w, http.StatusBadRequest, "invalid_input", fmt.Sprintf("images[%d]: %v", i, err))
			return
		}
		ev.Attachments = append(ev.Attachments, a)
	}
	s.answer(w, r, d, ev, http.StatusAccepted)
}

// attach resizes an image to the configured limit and stores it; the
// message keeps only its reference (REQ-BED-013).
func (s *Server) attach(ctx context.Context, img ImageInput) (conversation.Attachment, error) {
	data, err := base64.StdEncoding.DecodeString(img.Data)
	if err != nil {
		return conversation.Attachment{}, fmt.Errorf("data: not base64: %v", err)
	}
	out, media, wd, ht, err := llm.Resize(data, s.o.MaxImageDim)
	if err != nil {
		return conversation.Attachment{}, err
	}
	ref, err := s.o.Store.PutAttachment(ctx, media, out)
	if err != nil {
		return conversation.Attachment{}, err
	}
	return conversation.Attachment{Ref: ref, MediaType: media, Width: wd, Height: ht}, nil
}

// answer applies ev and answers with the state, or 409 with the machine's
// refusal (AGENT_BUSY, CONTEXT_EXHAUSTED, …).
func (s *Server) answer(w http.ResponseWriter, r *http.Request, d *driver, ev conversation.Event, ok int) {
	var v StateView
	effs, err := d.apply(r.Context(), ev, func(c *conversation.Conversation) { v = stateOf(c) })
	if err != nil {
		return
	}
	for _, e := range effs {
		switch e.Type {
		case conversation.EfReject:
			writeError(w, http.StatusConflict, e.Code, e.Text)
			return
		case conversation.EfError:
			writeError(w, http.StatusConflict, e.Code, e.Detail)
			return
		}
	}
	writeJSON(w, ok, v)
}

func (s *Server) simple(typ string) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		if d, ok := s.lookup(w, r); ok {
			s.answer(w, r, d, conversation.Event{Type: typ}, http.StatusOK)
		}
	}
}

func (s *Server) mode(w http.ResponseWriter, r *http.Request) {
	d, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var in ModeInput
	if !readJSON(w, r, &in) {
		return
	}
	switch in.Action {
	case "downgrade":
		s.answer(w, r, d, conversation.Event{Type: conversation.EvModeDowngrade}, http.StatusOK)
	case "approve", "deny":
		if s.o.Auditd != nil {
			// With auditd the decision is an approval there, by a person
			// other than the one who asked (DESIGN §11).
			var id string
			_ = d.view(r.Context(), func(*conversation.Conversation) { id = d.approvalID })
			hint := "decide it in auditd: approvals " + in.Action + " " + id
			if id == "" {
				hint = "no approval request is open in auditd yet"
			}
			writeError(w, http.StatusConflict, "decide_in_auditd", hint)
			return
		}
		s.answer(w, r, d, conversation.Event{Type: conversation.EvModeDecision, Approved: in.Action == "approve", Reason: in.Reason}, http.StatusOK)
	default:
		writeError(w, http.StatusBadRequest, "invalid_input", fmt.Sprintf("action: %q is not downgrade, approve or deny", in.Action))
	}
}

// continuation starts a new conversation from an exhausted one's summary,
// linked to it (REQ-BED-021).
func (s *Server) continuation(w http.ResponseWriter, r *http.Request) {
	d, ok := s.lookup(w, r)
	if !ok {
		return
	}
	var id, summary, cwd, model string
	var state conversation.State
	_ = d.view(r.Context(), func(c *conversation.Conversation) {
		id, state, cwd, model, summary = c.ID, c.State, c.Cwd, c.Model, c.Summary
	})
	if state != conversation.ContextExhausted || summary == "" {
		writeError(w, http.StatusConflict, "not_exhausted", "the conversation has no continuation summary yet; continue it first (POST …/continue)")
		return
	}
	v, status, err := s.Create(r.Context(), CreateInput{Cwd: cwd, Model: model}, id, summary)
	if err != nil {
		writeError(w, status, "invalid_input", err.Error())
		return
	}
	writeJSON(w, http.StatusCreated, v)
}

// events is the conversation's server-sent event stream: its state and
// recent messages on connect, then every change as it is persisted.
func (s *Server) events(w http.ResponseWriter, r *http.Request) {
	d, ok := s.lookup(w, r)
	if !ok {
		return
	}
	fl, ok := w.(http.Flusher)
	if !ok {
		writeError(w, http.StatusInternalServerError, "no_stream", "streaming is not supported here")
		return
	}
	sub := &subscriber{ch: make(chan []byte, subscriberBuffer)}
	reply := make(chan struct{})
	d.post(subscribe{sub: sub, reply: reply})
	select {
	case <-reply:
	case <-r.Context().Done():
		return
	}
	defer d.post(unsubscribe{sub})
	w.Header().Set("Content-Type", "text/event-stream")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	fl.Flush()
	for {
		select {
		case frame, ok := <-sub.ch:
			if !ok {
				return
			}
			if _, err := w.Write(frame); err != nil {
				return
			}
			fl.Flush()
		case <-r.Context().Done():
			return
		}
	}
}

// unsubscribe detaches an SSE client whose connection ended.
type unsubscribe struct{ sub *subscriber }

// readJSON decodes the request body, one JSON object of at most maxBody
// bytes, into v strictly; a bad body is answered 400 invalid_json (413
// body_too_large) in JSON's terms, as auditd answers it (strictjson; issue
// 20: never "Go struct field MessageInput.images of type []serve.ImageInput").
func readJSON(w http.ResponseWriter, r *http.Request, v any) bool {
	body, err := strictjson.Read(r.Body, maxBody)
	if err == nil {
		err = strictjson.Decode(body, v)
	}
	var je *strictjson.Error
	switch {
	case err == nil:
		return true
	case errors.As(err, &je) && je.Kind == strictjson.TooLarge:
		writeError(w, http.StatusRequestEntityTooLarge, "body_too_large", "the body: "+err.Error())
	case je != nil:
		writeError(w, http.StatusBadRequest, "invalid_json", "the body: "+err.Error())
	default:
		writeError(w, http.StatusBadRequest, "invalid_json", "reading the body: "+err.Error())
	}
	return false
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}

func writeError(w http.ResponseWriter, status int, code, msg string) {
	writeJSON(w, status, map[string]any{"error": map[string]string{"code": code, "message": msg}})
}

func newID(prefix string) string {
	var b [8]byte
	_, _ = rand.Read(b[:])
	return prefix + "_" + hex.EncodeToString(b[:])
}
