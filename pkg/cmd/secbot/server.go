package secbot

import (
	"encoding/json"
	"errors"
	"io"
	"log"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/termtext"
)

// maxCallbackBody bounds a callback's body (DESIGN §3: 1 MiB per request).
const maxCallbackBody = 1 << 20

// httpServer serves /health, /metrics and /callback on --listen.
func (s *secbot) httpServer() *http.Server {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /health", s.serveHealth)
	mux.Handle("GET /metrics", promhttp.HandlerFor(s.m.reg, promhttp.HandlerOpts{}))
	mux.HandleFunc("POST /callback", s.serveCallback)
	return &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		IdleTimeout:       2 * time.Minute,
		MaxHeaderBytes:    64 << 10,
		ErrorLog:          log.New(logWriter{s.log}, "http: ", 0),
	}
}

// health is GET /health: secbot is up; stream says whether it is reading
// auditd's stream ("following") or waiting to reconnect ("reconnecting").
type health struct {
	SchemaVersion int    `json:"schema_version"`
	Status        string `json:"status"`
	Stream        string `json:"stream"`
	LastSeq       int64  `json:"last_seq"` // -1 before the first event
	EventsSeen    int64  `json:"events_seen"`
	DryRun        bool   `json:"dry_run"`
}

func (s *secbot) serveHealth(w http.ResponseWriter, _ *http.Request) {
	h := health{SchemaVersion: audit.SchemaVersion, Status: "ok", Stream: "reconnecting",
		LastSeq: s.r.LastSeq(), EventsSeen: s.r.Seen(), DryRun: s.o.DryRun}
	if s.r.Streaming() {
		h.Stream = "following"
	}
	writeJSON(w, http.StatusOK, h)
}

// callback is what secbot reads of a callback; other members are allowed
// (seed 003: secbot "Receives async callback when bundle is ready").
type callback struct {
	IncidentID string `json:"incident_id"`
	Status     string `json:"status"`
}

// serveCallback is POST /callback: an incident handler reports, after the
// fact, what became of an incident. secbot logs it and answers 202.
func (s *secbot) serveCallback(w http.ResponseWriter, req *http.Request) {
	if req.ContentLength > maxCallbackBody {
		s.refuseCallback(w, http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB")
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, req.Body, maxCallbackBody))
	if err != nil {
		var mbe *http.MaxBytesError
		if errors.As(err, &mbe) {
			s.refuseCallback(w, http.StatusRequestEntityTooLarge, "too_large", "the body is over 1 MiB")
			return
		}
		s.refuseCallback(w, http.StatusBadRequest, "bad_request", "reading the body failed")
		return
	}
	var cb callback
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(body, &obj); err != nil || obj == nil {
		s.refuseCallback(w, http.StatusBadRequest, "bad_request", "the body must be a JSON object such as {\"incident_id\":\"…\",\"status\":\"…\"}")
		return
	}
	if err := json.Unmarshal(body, &cb); err != nil {
		s.refuseCallback(w, http.StatusBadRequest, "bad_request", "incident_id and status must be strings")
		return
	}
	s.m.callbacks.WithLabelValues("accepted").Inc()
	id, status := termtext.Clean(cb.IncidentID, 128), termtext.Clean(cb.Status, 64)
	if id == "" {
		id = "(no incident_id)"
	}
	if status == "" {
		status = "(no status)"
	}
	s.log.logf("callback: incident %s: %s", id, status)
	writeJSON(w, http.StatusAccepted, map[string]any{"schema_version": audit.SchemaVersion, "accepted": true})
}

func (s *secbot) refuseCallback(w http.ResponseWriter, code int, result, msg string) {
	s.m.callbacks.WithLabelValues(result).Inc()
	writeJSON(w, code, map[string]string{"error": msg})
}

func writeJSON(w http.ResponseWriter, code int, v any) {
	b, _ := json.Marshal(v)
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	_, _ = w.Write(append(b, '\n'))
}

// logWriter adapts the logger for http.Server's error log.
type logWriter struct{ l *logger }

func (w logWriter) Write(p []byte) (int, error) {
	w.l.logf("%s", termtext.Clean(string(p), 300))
	return len(p), nil
}
