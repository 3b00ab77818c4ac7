package convstore

import (
	"encoding/json"
	"fmt"
	"unicode"
	"unicode/utf8"
)

// checkID refuses an id that is empty, longer than MaxIDBytes, or holds
// anything but printable characters without spaces: ids travel in URLs,
// log lines and terminal listings. The id itself is not echoed, since a bad
// one may be long or hold control characters.
func checkID(field, id string) error {
	switch {
	case id == "":
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	case len(id) > MaxIDBytes:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, field, len(id), MaxIDBytes)
	case !utf8.ValidString(id):
		return fmt.Errorf("%w: %s is not UTF-8", ErrInvalid, field)
	}
	for _, r := range id {
		if !unicode.IsPrint(r) || unicode.IsSpace(r) {
			return fmt.Errorf("%w: %s holds %U, not a printable character", ErrInvalid, field, r)
		}
	}
	return nil
}

// checkText refuses a short text field (cwd, model, mode, state, role,
// media type) that is missing when required, too long, not UTF-8 or holds
// a control character.
func checkText(field, v string, required bool) error {
	switch {
	case v == "" && required:
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	case len(v) > maxFieldBytes:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrInvalid, field, len(v), maxFieldBytes)
	case !utf8.ValidString(v):
		return fmt.Errorf("%w: %s is not UTF-8", ErrInvalid, field)
	}
	for _, r := range v {
		if unicode.IsControl(r) {
			return fmt.Errorf("%w: %s holds the control character %U", ErrInvalid, field, r)
		}
	}
	return nil
}

// checkJSON refuses a document that is missing, larger than limit or not
// JSON: what the store keeps is what restore decodes (B-07b).
func checkJSON(field string, doc json.RawMessage, limit int) error {
	switch {
	case len(doc) == 0:
		return fmt.Errorf("%w: %s is empty", ErrInvalid, field)
	case len(doc) > limit:
		return fmt.Errorf("%w: %s is %d bytes, more than %d", ErrTooLarge, field, len(doc), limit)
	case !json.Valid(doc):
		return fmt.Errorf("%w: %s is not JSON", ErrInvalid, field)
	}
	return nil
}

// checkConversation checks what Create stores; Save's subset is
// checkState.
func checkConversation(c Conversation) error {
	if err := checkID("id", c.ID); err != nil {
		return err
	}
	for _, f := range []struct{ field, id string }{{"parent_id", c.ParentID}, {"continued_from", c.ContinuedFrom}} {
		if f.id == "" {
			continue
		}
		if err := checkID(f.field, f.id); err != nil {
			return err
		}
		if f.id == c.ID {
			return fmt.Errorf("%w: %s is the conversation itself", ErrInvalid, f.field)
		}
	}
	if c.Subagent && c.ParentID == "" {
		return fmt.Errorf("%w: parent_id is empty for a sub-agent", ErrInvalid)
	}
	for _, f := range []struct{ field, v string }{{"cwd", c.Cwd}, {"model", c.Model}} {
		if err := checkText(f.field, f.v, true); err != nil {
			return err
		}
	}
	if err := checkText("owner", c.Owner, false); err != nil {
		return err
	}
	return checkState(c)
}

// checkState checks the fields Save writes.
func checkState(c Conversation) error {
	if err := checkID("id", c.ID); err != nil {
		return err
	}
	for _, f := range []struct{ field, v string }{{"mode", c.Mode}, {"state", c.State}} {
		if err := checkText(f.field, f.v, true); err != nil {
			return err
		}
	}
	return checkJSON("snapshot", c.Snapshot, MaxSnapshotBytes)
}

// checkMessage checks a message Save appends to conversation id.
func checkMessage(id string, m Message) error {
	if m.ConversationID != "" && m.ConversationID != id {
		return fmt.Errorf("%w: message %d: conversation_id is another conversation's", ErrInvalid, m.Seq)
	}
	if m.Seq < 1 {
		return fmt.Errorf("%w: message seq %d: seq starts at 1", ErrInvalid, m.Seq)
	}
	if err := checkText("role", m.Role, true); err != nil {
		return fmt.Errorf("message %d: %w", m.Seq, err)
	}
	if err := checkJSON("body", m.Body, MaxMessageBytes); err != nil {
		return fmt.Errorf("message %d: %w", m.Seq, err)
	}
	return nil
}
