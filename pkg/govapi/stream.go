package govapi

// auditd's event stream is JSON Lines on a Unix socket (auditd --socket):
// each committed event as GET PathEvent shows it, in seq order, and a
// StreamEnd line when auditd ends the stream.

// SubscribeRequest is the optional first line a subscriber sends:
//
//	{"subscribe":{"since_seq":N}}
//
// asks for every committed event with seq > N (replayed from the
// database), then live events. Without it the subscriber gets the events
// committed after it connected.
type SubscribeRequest struct {
	Subscribe *SubscribeSince `json:"subscribe"`
}

// SubscribeSince is where a subscription starts.
type SubscribeSince struct {
	SinceSeq *int64 `json:"since_seq"`
}

// StreamEnd is the stream's last line when auditd ends it: the subscriber
// fell behind, auditd shut down, or the request was bad. Resubscribing
// with since_seq = the last seq received resumes without a gap.
type StreamEnd struct {
	Error string `json:"error"`
}
