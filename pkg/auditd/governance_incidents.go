package auditd

import (
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
)

// postIncident is POST /api/v1/incidents: a security or governance
// incident (secbot's patterns, the auditor's alerts, a gate that finds
// governance unavailable; seed 003 "Governance Misconfiguration
// Incidents", H-25) appended to the chain as an "incident" event, through
// the writer like any event: chained, durable before the answer, and
// streamed to subscribers.
func (s *Server) postIncident(w http.ResponseWriter, r *http.Request) {
	var in govapi.IncidentInput
	if !s.decodeBody(w, r, &in, false) {
		return
	}
	if err := validateIncident(&in); err != nil {
		s.fail(w, http.StatusBadRequest, err.Error())
		return
	}
	clientID := in.IncidentID != ""
	if !clientID {
		in.IncidentID = audit.NewEventID(s.cfg.Now(), s.cfg.Rand)
	}
	data := in
	data.IncidentID = "" // it is the event_id
	raw, err := json.Marshal(data)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, "encoding the incident: "+err.Error())
		return
	}
	caller := identity(r)
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: in.IncidentID, EventType: audit.TypeIncident,
		TraceID: in.TraceID, SessionID: in.SessionID, Agent: in.Agent,
		Data: raw,
		// The reporter names itself in source; the caller is who
		// authenticated, so a forged source can be told from its caller.
		Caller: s.callerOf(caller),
	}
	if caller.Name != "" {
		ev.Principal = &audit.Principal{UserID: caller.Name}
	}
	if clientID {
		// An idempotency key: a reporter retrying after a lost answer gets
		// the incident it filed, not a second one — and only that reporter
		// with that incident (DESIGN §11).
		draft, err := audit.Prepare(ev)
		if err != nil {
			s.fail(w, http.StatusBadRequest, err.Error())
			return
		}
		rec, ok, err := s.st.Get(r.Context(), in.IncidentID)
		if err != nil {
			s.fail(w, http.StatusInternalServerError, "looking up incident_id: "+err.Error())
			return
		}
		if ok {
			if !sameEvent(draft, rec.Body) {
				s.answerError(w, reusedID(in.IncidentID))
				return
			}
			s.m.duplicates.Inc()
			s.answerIncident(w, http.StatusOK, rec.Body)
			return
		}
	}
	stored, err := s.append(r.Context(), ev, clientID)
	if err != nil {
		s.appendError(w, err)
		return
	}
	code := http.StatusOK
	if stored.created {
		code = http.StatusCreated
		s.m.incidents.WithLabelValues(in.Severity).Inc()
		w.Header().Set("Location", "/api/events/"+url.PathEscape(in.IncidentID))
	}
	s.answerIncident(w, code, stored.json)
}

// answerIncident answers with the incident a stored event records, or 409
// when the event_id names another kind of event.
func (s *Server) answerIncident(w http.ResponseWriter, code int, body []byte) {
	var stored struct {
		EventID   string          `json:"event_id"`
		Seq       int64           `json:"seq"`
		EventType string          `json:"event_type"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &stored); err != nil {
		s.fail(w, http.StatusInternalServerError, "reading the stored event: "+err.Error())
		return
	}
	if stored.EventType != audit.TypeIncident {
		s.failCode(w, http.StatusConflict, "event_id_reused", fmt.Sprintf("incident_id %s names a %s event already; choose a new incident_id", stored.EventID, stored.EventType))
		return
	}
	inc := govapi.Incident{SchemaVersion: audit.SchemaVersion}
	if err := json.Unmarshal(stored.Data, &inc.IncidentInput); err != nil || inc.Type == "" || inc.Severity == "" {
		// An incident event posted to /api/events with other data.
		s.failCode(w, http.StatusConflict, "event_id_reused", fmt.Sprintf("incident_id %s names an incident event that POST %s did not record; choose a new incident_id", stored.EventID, govapi.PathIncidents))
		return
	}
	inc.IncidentID = stored.EventID
	ref, err := storedRef(body)
	if err != nil {
		s.fail(w, http.StatusInternalServerError, err.Error())
		return
	}
	inc.Event = ref
	s.writeGov(w, code, inc)
}
