package auditd

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/token"
)

func (s *Server) postIncident(r *http.Request) (reply, error) {
	var in govapi.IncidentInput
	if err := decodeBody(r, &in, false); err != nil {
		return reply{}, err
	}
	res, err := s.ReportIncident(r.Context(), identity(r), in)
	if err != nil {
		return reply{}, err
	}
	rep, err := jsonReply(res.status(), res.Value)
	if res.Created {
		rep.location = govapi.WithID(govapi.PathEvent, res.Value.IncidentID)
	}
	return rep, err
}

// ReportIncident records a security or governance incident (secbot's
// patterns, the auditor's alerts, a gate that finds governance
// unavailable; seed 003 "Governance Misconfiguration Incidents", H-25) as
// an "incident" event, through the writer like any event: chained, durable
// before it returns, and streamed to subscribers. The reporter names
// itself in source; the event's caller is who authenticated, so a forged
// source can be told from its caller. With an incident_id it is
// idempotent for the same reporter and the same incident (DESIGN §11).
func (s *Server) ReportIncident(ctx context.Context, caller token.Identity, in govapi.IncidentInput) (Recorded[govapi.Incident], error) {
	var none Recorded[govapi.Incident]
	if err := validateIncident(&in); err != nil {
		return none, err
	}
	clientID := in.IncidentID != ""
	if !clientID {
		in.IncidentID = audit.NewEventID(s.cfg.Now(), s.cfg.Rand)
	}
	data := in
	data.IncidentID = "" // it is the event_id
	raw, err := json.Marshal(data)
	if err != nil {
		return none, fmt.Errorf("encoding the incident: %w", err)
	}
	ev := audit.Event{
		SchemaVersion: audit.SchemaVersion, EventID: in.IncidentID, EventType: audit.TypeIncident,
		TraceID: in.TraceID, SessionID: in.SessionID, Agent: in.Agent,
		Data: raw, Caller: s.callerOf(caller),
	}
	if caller.Name != "" {
		ev.Principal = &audit.Principal{UserID: caller.Name}
	}
	if clientID {
		draft, err := audit.Prepare(ev)
		if err != nil {
			return none, badRequest(err)
		}
		rec, ok, err := s.st.Get(ctx, in.IncidentID)
		if err != nil {
			return none, fmt.Errorf("looking up incident_id: %w", err)
		}
		if ok {
			if !sameEvent(draft, rec.Body) {
				return none, reusedID(in.IncidentID)
			}
			s.m.duplicates.Inc()
			inc, err := incidentOf(rec.Body)
			return Recorded[govapi.Incident]{Value: inc}, err
		}
	}
	stored, err := s.append(ctx, ev, clientID)
	if err != nil {
		return none, internal("storing the event: ", err)
	}
	if stored.created {
		s.m.incidents.WithLabelValues(in.Severity).Inc()
	}
	inc, err := incidentOf(stored.json)
	return Recorded[govapi.Incident]{Value: inc, Created: stored.created}, err
}

// incidentOf reads the incident a stored event records, or refuses with
// event_id_reused when the event_id names another kind of event.
func incidentOf(body []byte) (govapi.Incident, error) {
	var stored struct {
		EventID   string          `json:"event_id"`
		EventType string          `json:"event_type"`
		Data      json.RawMessage `json:"data"`
	}
	if err := json.Unmarshal(body, &stored); err != nil {
		return govapi.Incident{}, fmt.Errorf("reading the stored event: %w", err)
	}
	if stored.EventType != audit.TypeIncident {
		return govapi.Incident{}, refuse(Conflict, govapi.CodeEventIDReused, "incident_id %s names a %s event already; choose a new incident_id", stored.EventID, stored.EventType)
	}
	inc := govapi.Incident{SchemaVersion: audit.SchemaVersion}
	if err := json.Unmarshal(stored.Data, &inc.IncidentInput); err != nil || inc.Type == "" || inc.Severity == "" {
		// An incident event posted to /api/events with other data.
		return govapi.Incident{}, refuse(Conflict, govapi.CodeEventIDReused, "incident_id %s names an incident event that POST %s did not record; choose a new incident_id", stored.EventID, govapi.PathIncidents)
	}
	inc.IncidentID = stored.EventID
	ref, err := storedRef(body)
	inc.Event = ref
	return inc, err
}
