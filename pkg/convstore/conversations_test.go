package convstore

import (
	"context"
	"encoding/json"
	"errors"
	"reflect"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestCreate(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	mustCreate(t, s, conv("c-parent", 0))

	big := conv("c-big", 1)
	big.Snapshot = json.RawMessage(`"` + strings.Repeat("x", MaxSnapshotBytes) + `"`)
	for _, tc := range []struct {
		name string
		edit func(*Conversation)
		want error  // errors.Is
		text string // in the message
	}{
		{"valid", func(*Conversation) {}, nil, ""},
		{"sub-agent of a stored parent", func(c *Conversation) { c.Subagent, c.ParentID = true, "c-parent" }, nil, ""},
		{"continuation of a stored one", func(c *Conversation) { c.ContinuedFrom = "c-parent" }, nil, ""},
		{"id already stored", func(c *Conversation) { c.ID = "c-parent" }, ErrExists, `"c-parent"`},
		{"parent not stored", func(c *Conversation) { c.ParentID = "c-nope" }, ErrNotFound, `parent_id "c-nope"`},
		{"continued from one not stored", func(c *Conversation) { c.ContinuedFrom = "c-nope" }, ErrNotFound, "continued_from"},
		{"sub-agent without a parent", func(c *Conversation) { c.Subagent = true }, ErrInvalid, "parent_id is empty"},
		{"its own parent", func(c *Conversation) { c.ParentID = c.ID }, ErrInvalid, "parent_id is the conversation itself"},
		{"empty id", func(c *Conversation) { c.ID = "" }, ErrInvalid, "id is empty"},
		{"id of 129 bytes", func(c *Conversation) { c.ID = strings.Repeat("a", 129) }, ErrInvalid, "id is 129 bytes, more than 128"},
		{"id with a space", func(c *Conversation) { c.ID = "c 1" }, ErrInvalid, "U+0020"},
		{"id with a newline", func(c *Conversation) { c.ID = "c\n1" }, ErrInvalid, "U+000A"},
		{"id not UTF-8", func(c *Conversation) { c.ID = "c\xff" }, ErrInvalid, "not UTF-8"},
		{"parent id with an escape", func(c *Conversation) { c.ParentID = "p\x1b[2J" }, ErrInvalid, "parent_id holds U+001B"},
		{"no cwd", func(c *Conversation) { c.Cwd = "" }, ErrInvalid, "cwd is empty"},
		{"no model", func(c *Conversation) { c.Model = "" }, ErrInvalid, "model is empty"},
		{"no state", func(c *Conversation) { c.State = "" }, ErrInvalid, "state is empty"},
		{"mode with a control character", func(c *Conversation) { c.Mode = "re\x00stricted" }, ErrInvalid, "mode holds the control character"},
		{"no snapshot", func(c *Conversation) { c.Snapshot = nil }, ErrInvalid, "snapshot is empty"},
		{"snapshot not JSON", func(c *Conversation) { c.Snapshot = json.RawMessage(`{"a":`) }, ErrInvalid, "snapshot is not JSON"},
		{"snapshot over 16 MiB", func(c *Conversation) { c.Snapshot = big.Snapshot }, ErrTooLarge, "snapshot is 16777218 bytes, more than 16777216"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			c := conv("c-"+strings.ReplaceAll(tc.name, " ", "-"), 1)
			tc.edit(&c)
			err := s.Create(ctx, c)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				got, err := s.Get(ctx, c.ID)
				if err != nil {
					t.Fatal(err)
				}
				c.UpdatedAt = c.CreatedAt // a zero UpdatedAt is CreatedAt
				if !reflect.DeepEqual(got, c) {
					t.Errorf("Get = %+v\nwant  %+v", got, c)
				}
				return
			}
			if !errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text) {
				t.Fatalf("Create: %v, want %v naming %q", err, tc.want, tc.text)
			}
		})
	}
}

func TestSave(t *testing.T) {
	ctx := context.Background()
	const id = "c-1"
	for _, tc := range []struct {
		name   string
		before []Message // saved first
		msgs   []Message
		edit   func(*Conversation)
		want   error
		text   string
		seqs   []int64 // stored afterwards
	}{
		{name: "state and two messages", msgs: []Message{msg(id, 1, "user", "hi"), msg(id, 2, "assistant", "hello")}, seqs: []int64{1, 2}},
		{name: "no messages", seqs: nil},
		{name: "a seq again with the same body is a no-op",
			before: []Message{msg(id, 1, "user", "hi")},
			msgs:   []Message{msg(id, 1, "user", "hi"), msg(id, 2, "assistant", "hello")}, seqs: []int64{1, 2}},
		{name: "a seq again with another body",
			before: []Message{msg(id, 1, "user", "hi")},
			msgs:   []Message{msg(id, 2, "assistant", "hello"), msg(id, 1, "user", "HI")},
			want:   ErrConflict, text: "message 1 with another body", seqs: []int64{1}},
		{name: "a seq again with another role",
			before: []Message{msg(id, 1, "user", "hi")},
			msgs:   []Message{{Seq: 1, Role: "system", Body: msg(id, 1, "user", "hi").Body}},
			want:   ErrConflict, text: "message 1", seqs: []int64{1}},
		{name: "one seq twice in a batch, different",
			msgs: []Message{msg(id, 1, "user", "hi"), msg(id, 1, "user", "ho")},
			want: ErrConflict, text: "message 1", seqs: nil},
		{name: "no conversation id is this one", msgs: []Message{{Seq: 1, Role: "user", Body: json.RawMessage(`{}`)}}, seqs: []int64{1}},
		{name: "another conversation's message", msgs: []Message{msg("c-2", 1, "user", "hi")}, want: ErrInvalid, text: "message 1: conversation_id"},
		{name: "seq 0", msgs: []Message{msg(id, 0, "user", "hi")}, want: ErrInvalid, text: "seq 0"},
		{name: "no role", msgs: []Message{{Seq: 3, Body: json.RawMessage(`{}`)}}, want: ErrInvalid, text: "message 3: invalid: role is empty"},
		{name: "body not JSON", msgs: []Message{{Seq: 4, Role: "user", Body: json.RawMessage(`hi`)}}, want: ErrInvalid, text: "message 4: invalid: body is not JSON"},
		{name: "body over 4 MiB", msgs: []Message{{Seq: 5, Role: "tool", Body: json.RawMessage(`"` + strings.Repeat("x", MaxMessageBytes-1) + `"`)}},
			want: ErrTooLarge, text: "message 5: too large: body is 4194305 bytes, more than 4194304"},
		{name: "body of exactly 4 MiB", msgs: []Message{{Seq: 5, Role: "tool", Body: json.RawMessage(`"` + strings.Repeat("x", MaxMessageBytes-2) + `"`)}}, seqs: []int64{5}},
		{name: "conversation not created", edit: func(c *Conversation) { c.ID = "c-nope" }, want: ErrNotFound, text: `"c-nope"`},
		{name: "snapshot not JSON", edit: func(c *Conversation) { c.Snapshot = json.RawMessage("{") }, want: ErrInvalid, text: "snapshot"},
		{name: "no state", edit: func(c *Conversation) { c.State = "" }, want: ErrInvalid, text: "state is empty"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s, _ := openTest(t)
			mustCreate(t, s, conv(id, 0))
			if tc.before != nil {
				if err := s.Save(ctx, conv(id, 0), tc.before); err != nil {
					t.Fatal(err)
				}
			}
			c := conv(id, 0)
			c.State, c.Mode, c.Snapshot = "awaiting_llm", "unrestricted", snapshot(id, "awaiting_llm", 2)
			c.UpdatedAt = t0.Add(time.Hour)
			if tc.edit != nil {
				tc.edit(&c)
			}
			err := s.Save(ctx, c, tc.msgs)
			switch {
			case tc.want == nil && err != nil:
				t.Fatal(err)
			case tc.want != nil && (!errors.Is(err, tc.want) || !strings.Contains(err.Error(), tc.text)):
				t.Fatalf("Save: %v, want %v naming %q", err, tc.want, tc.text)
			}
			got, err := s.Get(ctx, id)
			if err != nil {
				t.Fatal(err)
			}
			// All or nothing: a refused Save writes neither the state nor
			// any message.
			wantState := "awaiting_llm"
			if tc.want != nil {
				wantState = "idle"
			}
			if got.State != wantState {
				t.Errorf("state = %q, want %q", got.State, wantState)
			}
			if tc.want == nil && (got.Mode != "unrestricted" || !got.UpdatedAt.Equal(c.UpdatedAt) || string(got.Snapshot) != string(c.Snapshot)) {
				t.Errorf("Get after Save = %+v", got)
			}
			if tc.want != nil && tc.want != ErrNotFound && tc.want != ErrInvalid && tc.want != ErrTooLarge {
				return
			}
			stored, err := s.Messages(ctx, id, 0, 0)
			if err != nil {
				t.Fatal(err)
			}
			var seqs []int64
			for _, m := range stored {
				seqs = append(seqs, m.Seq)
			}
			if !slices.Equal(seqs, tc.seqs) {
				t.Errorf("stored seqs %v, want %v", seqs, tc.seqs)
			}
		})
	}
}

// TestSaveConflictWritesNothing: a conflict late in the batch rolls back the
// state and the messages before it (one transaction, REQ-BED-007).
func TestSaveConflictWritesNothing(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	mustCreate(t, s, conv("c-1", 0))
	if err := s.Save(ctx, conv("c-1", 0), []Message{msg("c-1", 1, "user", "hi")}); err != nil {
		t.Fatal(err)
	}
	c := conv("c-1", 0)
	c.State = "awaiting_llm"
	err := s.Save(ctx, c, []Message{msg("c-1", 2, "assistant", "a"), msg("c-1", 3, "user", "b"), msg("c-1", 1, "user", "changed")})
	if !errors.Is(err, ErrConflict) {
		t.Fatalf("Save: %v, want ErrConflict", err)
	}
	got, _ := s.Get(ctx, "c-1")
	ms, _ := s.Messages(ctx, "c-1", 0, 0)
	if got.State != "idle" || len(ms) != 1 || string(ms[0].Body) != string(msg("c-1", 1, "user", "hi").Body) {
		t.Errorf("after a refused Save: state %q, %d messages", got.State, len(ms))
	}
}

// TestSaveDefaults: a zero UpdatedAt and a zero message time are the
// store's clock.
func TestSaveDefaults(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	s.now = func() time.Time { return t0.Add(42 * time.Second) }
	mustCreate(t, s, conv("c-1", 0))
	m := msg("c-1", 1, "user", "hi")
	m.At = time.Time{}
	if err := s.Save(ctx, conv("c-1", 0), []Message{m}); err != nil {
		t.Fatal(err)
	}
	got, _ := s.Get(ctx, "c-1")
	ms, _ := s.Messages(ctx, "c-1", 0, 0)
	want := t0.Add(42 * time.Second)
	if !got.UpdatedAt.Equal(want) || len(ms) != 1 || !ms[0].At.Equal(want) {
		t.Errorf("updated_at %v, message at %v, want %v", got.UpdatedAt, ms, want)
	}
}

func TestGet(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	for _, tc := range []struct {
		id   string
		want error
	}{
		{"c-nope", ErrNotFound},
		{"", ErrInvalid},
		{"a b", ErrInvalid},
	} {
		if _, err := s.Get(ctx, tc.id); !errors.Is(err, tc.want) {
			t.Errorf("Get(%q): %v, want %v", tc.id, err, tc.want)
		}
	}
}

func TestList(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	sub := func(id, parent string, n int) Conversation {
		c := conv(id, n)
		c.Subagent, c.ParentID = true, parent
		return c
	}
	cont := conv("c-3", 3)
	cont.ContinuedFrom = "c-1"
	mustCreate(t, s, conv("c-1", 1), conv("c-2", 2), sub("s-1a", "c-1", 4), sub("s-1b", "c-1", 5), sub("s-2a", "c-2", 6), cont)
	// Two created in the same instant: the later id first.
	mustCreate(t, s, conv("c-4a", 7), conv("c-4b", 7))
	owned := func(id, owner string, n int) Conversation {
		c := conv(id, n)
		c.Owner = owner
		return c
	}
	ownedSub := sub("s-5a", "c-5", 9)
	ownedSub.Owner = "ana"
	mustCreate(t, s, owned("c-5", "ana", 8), ownedSub, owned("c-6", "bo", 10))

	for _, tc := range []struct {
		name string
		o    ListOptions
		want []string
	}{
		{"newest first, no sub-agents (B-09b)", ListOptions{}, []string{"c-6", "c-5", "c-4b", "c-4a", "c-3", "c-2", "c-1"}},
		{"with sub-agents", ListOptions{IncludeSubagents: true}, []string{"c-6", "s-5a", "c-5", "c-4b", "c-4a", "s-2a", "s-1b", "s-1a", "c-3", "c-2", "c-1"}},
		{"a parent's sub-agents", ListOptions{ParentID: "c-1"}, []string{"s-1b", "s-1a"}},
		{"a parent without children", ListOptions{ParentID: "c-3"}, []string{}},
		{"an owner's", ListOptions{Owner: "ana"}, []string{"c-5"}},
		{"an owner's with sub-agents", ListOptions{Owner: "ana", IncludeSubagents: true}, []string{"s-5a", "c-5"}},
		{"an owner's children of another's parent", ListOptions{Owner: "bo", ParentID: "c-5"}, []string{}},
		{"limit", ListOptions{Limit: 2}, []string{"c-6", "c-5"}},
		{"limit past the maximum is the maximum", ListOptions{Limit: MaxLimit + 1}, []string{"c-6", "c-5", "c-4b", "c-4a", "c-3", "c-2", "c-1"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.List(ctx, tc.o)
			if err != nil {
				t.Fatal(err)
			}
			if g := ids(got); !slices.Equal(g, tc.want) {
				t.Errorf("List(%+v) = %v, want %v", tc.o, g, tc.want)
			}
			for _, c := range got {
				if c.Snapshot != nil {
					t.Errorf("%s: List returned a snapshot", c.ID)
				}
				if want := map[string]string{"c-5": "ana", "s-5a": "ana", "c-6": "bo"}[c.ID]; c.Owner != want {
					t.Errorf("%s: owner %q, want %q", c.ID, c.Owner, want)
				}
				if c.ID == "c-3" && c.ContinuedFrom != "c-1" {
					t.Errorf("c-3: continued_from %q", c.ContinuedFrom)
				}
			}
		})
	}
	for _, o := range []ListOptions{{Limit: -1}, {ParentID: "bad id"}} {
		if _, err := s.List(ctx, o); !errors.Is(err, ErrInvalid) {
			t.Errorf("List(%+v): %v, want ErrInvalid", o, err)
		}
	}

	all, err := s.All(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if want := []string{"c-1", "c-2", "c-3", "s-1a", "s-1b", "s-2a", "c-4a", "c-4b", "c-5", "s-5a", "c-6"}; !slices.Equal(ids(all), want) {
		t.Errorf("All = %v, want %v", ids(all), want)
	}
	for _, c := range all {
		if string(c.Snapshot) != string(snapshot(c.ID, "idle", 0)) {
			t.Errorf("All: %s has snapshot %s", c.ID, c.Snapshot)
		}
	}
}

func TestMessages(t *testing.T) {
	ctx := context.Background()
	s, _ := openTest(t)
	mustCreate(t, s, conv("c-1", 0), conv("c-2", 1))
	var saved []Message
	for seq := int64(1); seq <= 10; seq += 2 {
		batch := []Message{msg("c-1", seq, "user", "q"), msg("c-1", seq+1, "assistant", "a")}
		if err := s.Save(ctx, conv("c-1", 0), batch); err != nil {
			t.Fatal(err)
		}
		saved = append(saved, batch...)
	}
	if err := s.Save(ctx, conv("c-2", 1), []Message{msg("c-2", 1, "user", "other")}); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name     string
		id       string
		after    int64
		limit    int
		want     []Message
		wantErr  error
		wantText string
	}{
		{name: "all", id: "c-1", want: saved},
		{name: "after 7 (SSE replay)", id: "c-1", after: 7, want: saved[7:]},
		{name: "after 3, 2 of them", id: "c-1", after: 3, limit: 2, want: saved[3:5]},
		{name: "after the last", id: "c-1", after: 10, want: nil},
		{name: "another conversation's", id: "c-2", want: []Message{msg("c-2", 1, "user", "other")}},
		{name: "conversation not stored", id: "c-nope", wantErr: ErrNotFound, wantText: `"c-nope"`},
		{name: "negative after", id: "c-1", after: -1, wantErr: ErrInvalid, wantText: "after_seq -1"},
		{name: "negative limit", id: "c-1", limit: -1, wantErr: ErrInvalid, wantText: "limit -1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := s.Messages(ctx, tc.id, tc.after, tc.limit)
			if tc.wantErr != nil {
				if !errors.Is(err, tc.wantErr) || !strings.Contains(err.Error(), tc.wantText) {
					t.Fatalf("Messages: %v, want %v naming %q", err, tc.wantErr, tc.wantText)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("got %d messages, want %d", len(got), len(tc.want))
			}
			for i := range got {
				g, w := got[i], tc.want[i]
				if g.ConversationID != w.ConversationID || g.Seq != w.Seq || g.Role != w.Role || string(g.Body) != string(w.Body) || !g.At.Equal(w.At) {
					t.Errorf("message %d = %+v, want %+v", i, g, w)
				}
			}
		})
	}
}

// TestMessagesByteBound: one call stops after MaxMessagesBytes of bodies;
// paging on from the last seq returns the rest.
func TestMessagesByteBound(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 20 MiB")
	}
	ctx := context.Background()
	s, _ := openTest(t)
	mustCreate(t, s, conv("c-1", 0))
	body := json.RawMessage(`"` + strings.Repeat("x", MaxMessageBytes-2) + `"`)
	for seq := int64(1); seq <= 5; seq++ {
		if err := s.Save(ctx, conv("c-1", 0), []Message{{Seq: seq, Role: "tool", Body: body}}); err != nil {
			t.Fatal(err)
		}
	}
	first, err := s.Messages(ctx, "c-1", 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(first) != MaxMessagesBytes/MaxMessageBytes {
		t.Fatalf("first page has %d messages of 4 MiB, want %d", len(first), MaxMessagesBytes/MaxMessageBytes)
	}
	rest, err := s.Messages(ctx, "c-1", first[len(first)-1].Seq, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(rest) != 1 || rest[0].Seq != 5 {
		t.Errorf("second page: %d messages", len(rest))
	}
}
