package convstore

import (
	"context"
	"encoding/json"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
	"time"
)

// t0 is the first test conversation's creation time.
var t0 = time.Date(2025, 3, 1, 12, 0, 0, 0, time.UTC)

// openTest opens a store in a new temporary directory, with a clock that
// starts at t0 and ticks a second per reading, and closes it at the end of
// the test.
func openTest(t testing.TB) (*Store, string) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "conversations.db")
	s, err := Open(path)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex // Saves from goroutines read the clock at once
	tick := t0
	s.now = func() time.Time {
		mu.Lock()
		defer mu.Unlock()
		tick = tick.Add(time.Second)
		return tick
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Error(err)
		}
	})
	return s, path
}

// conv is a valid new conversation: idle, restricted, with a small
// snapshot, created at t0 plus n minutes.
func conv(id string, n int) Conversation {
	return Conversation{
		ID:        id,
		Cwd:       "/srv/work/" + id,
		Model:     "qwen3-8b",
		Mode:      "restricted",
		State:     "idle",
		CreatedAt: t0.Add(time.Duration(n) * time.Minute),
		Snapshot:  snapshot(id, "idle", 0),
	}
}

// snapshot is a stand-in for the machine's JSON.
func snapshot(id, state string, last int64) json.RawMessage {
	return json.RawMessage(fmt.Sprintf(`{"id":%q,"state":%q,"last_seq":%d}`, id, state, last))
}

// msg is message seq of conversation id with a body that says text.
func msg(id string, seq int64, role, text string) Message {
	return Message{
		ConversationID: id,
		Seq:            seq,
		Role:           role,
		Body:           json.RawMessage(fmt.Sprintf(`{"seq":%d,"role":%q,"text":%q}`, seq, role, text)),
		At:             t0.Add(time.Duration(seq) * time.Second),
	}
}

func mustCreate(t testing.TB, s *Store, cs ...Conversation) {
	t.Helper()
	for _, c := range cs {
		if err := s.Create(context.Background(), c); err != nil {
			t.Fatal(err)
		}
	}
}

func ids(cs []Conversation) []string {
	out := make([]string, len(cs))
	for i, c := range cs {
		out[i] = c.ID
	}
	return out
}
