package serve

import "github.com/govkit/govkit/pkg/session/conversation"

// InjectEffects has conversation id's loop carry out effs as if a
// transition had emitted them: how a test puts a stale execute_tool in
// front of the executor's last check (the generation boundary). It reports
// whether the conversation exists.
func InjectEffects(s *Server, id string, effs ...conversation.Effect) bool {
	d, ok := s.driver(id)
	if ok {
		d.post(effectsEvent(effs))
	}
	return ok
}
