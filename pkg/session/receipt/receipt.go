// Package receipt is seed 002's non-forgeable tool receipt: the record of
// one tool execution, signed with HMAC-SHA256 under a secret the model
// never sees (seed 002 "Tool Receipts (Non-Forgeable)").
//
// # Signed bytes
//
// The signature is HMAC-SHA256, under the session's secret key, of a
// canonical encoding of every field except signature, so that the JSON a
// receipt travels in (key order, spacing, escapes) never matters and no two
// different receipts share the signed bytes (G-18). The encoding is the
// ASCII domain tag "govkit.receipt.v1" followed by, for each field in the
// fixed order receipt_id, session_id, turn_id, agent_id, tool_id, call_id,
// ok, inputs, outputs, excerpt, sha256, full_size, truncated, error,
// file_refs, timestamp, signature_alg:
//
//	uint32 big-endian length of the field name ‖ the name
//	uint64 big-endian length of the value ‖ the value
//
// where a string's value is its bytes, a bool's is "true" or "false", an
// int's is its decimal digits, inputs' is the canonical JSON of inputs
// (below), and file_refs' is the uint64 big-endian count of refs followed
// by each ref's path and excerpt_sha256 as length-prefixed strings (uint64
// length ‖ bytes). The signature is the lower-case hex of the 32-byte MAC;
// signature_alg is "HMAC-SHA256".
//
// Canonical JSON of inputs: objects with their keys in byte order, no
// insignificant space, strings escaped as encoding/json escapes them
// (including <, > and &), numbers as written. Inputs that are not exactly
// one JSON value, or that repeat a key in an object (two readers could
// disagree on which one counts), are recorded as the JSON string of their
// bytes: a malformed call still gets a receipt (G-16), and what it says is
// unambiguous.
//
// Ids and times come from the caller (the reducer): Sign never invents a
// receipt id, so a model can never supply one (G-19).
package receipt

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"strconv"
	"unicode/utf8"
)

// Alg is the one signature algorithm a receipt may name (seed 002 "Receipts
// (Signature + Fields)").
const Alg = "HMAC-SHA256"

// IDPrefix begins every receipt id the reducer issues: "rcpt_" and 16
// lower-case hex digits (IDLen bytes in all).
const (
	IDPrefix = "rcpt_"
	IDLen    = len(IDPrefix) + 16
)

// domain separates receipt MACs from any other use of the same key, and
// names the encoding's version.
const domain = "govkit.receipt.v1"

// Errors Verify returns; a caller branches on them with errors.Is.
var (
	ErrUnknownAlg   = errors.New("unknown alg")
	ErrBadSignature = errors.New("bad signature")
	ErrNoKey        = errors.New("no key")
)

// FileRef names a file a tool read and the SHA-256 of the excerpt it
// returned from it (seed 002: "file_refs with excerpt hashes").
type FileRef struct {
	Path          string `json:"path"`
	ExcerptSHA256 string `json:"excerpt_sha256"`
}

// Receipt is one tool execution (G-17): who ran what, with which inputs,
// and what came out — the whole output when it fit, otherwise an excerpt
// with the SHA-256 and size of the whole (G-12).
type Receipt struct {
	ReceiptID    string          `json:"receipt_id"`
	SessionID    string          `json:"session_id"`
	TurnID       string          `json:"turn_id"`
	AgentID      string          `json:"agent_id"`
	ToolID       string          `json:"tool_id"`
	CallID       string          `json:"call_id"`
	OK           bool            `json:"ok"`
	Inputs       json.RawMessage `json:"inputs"`
	Outputs      string          `json:"outputs"`
	Excerpt      string          `json:"excerpt"`
	SHA256       string          `json:"sha256"`
	FullSize     int             `json:"full_size"`
	Truncated    bool            `json:"truncated"`
	Error        string          `json:"error"`
	FileRefs     []FileRef       `json:"file_refs"`
	Timestamp    string          `json:"timestamp"`
	SignatureAlg string          `json:"signature_alg"`
	Signature    string          `json:"signature"`
}

// IsID reports whether id has the shape of a reducer-issued receipt id.
// Shape is not existence: only the session's receipts say that (G-24).
func IsID(id string) bool {
	if len(id) != IDLen || id[:len(IDPrefix)] != IDPrefix {
		return false
	}
	for i := len(IDPrefix); i < len(id); i++ {
		if c := id[i]; !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

// Sign sets r.SignatureAlg and r.Signature. First it puts r in the form a
// JSON round trip preserves — strings valid UTF-8 (each invalid byte
// becomes U+FFFD, as encoding/json writes it), Inputs canonical JSON (null
// when empty) — so the receipt verifies after it is written and read back.
func Sign(r *Receipt, key []byte) {
	r.ReceiptID = validUTF8(r.ReceiptID)
	r.SessionID = validUTF8(r.SessionID)
	r.TurnID = validUTF8(r.TurnID)
	r.AgentID = validUTF8(r.AgentID)
	r.ToolID = validUTF8(r.ToolID)
	r.CallID = validUTF8(r.CallID)
	r.Outputs = validUTF8(r.Outputs)
	r.Excerpt = validUTF8(r.Excerpt)
	r.SHA256 = validUTF8(r.SHA256)
	r.Error = validUTF8(r.Error)
	r.Timestamp = validUTF8(r.Timestamp)
	for i := range r.FileRefs {
		r.FileRefs[i].Path = validUTF8(r.FileRefs[i].Path)
		r.FileRefs[i].ExcerptSHA256 = validUTF8(r.FileRefs[i].ExcerptSHA256)
	}
	r.Inputs = Canonical(r.Inputs)
	r.SignatureAlg = Alg
	var sum [sha256.Size]byte
	r.Signature = hex.EncodeToString(mac(r, key, sum[:0]))
}

// Verify checks r's signature under key in constant time. It fails with
// ErrUnknownAlg when r names another algorithm, ErrBadSignature when any
// signed field differs from what was signed (or the signature is not 64
// hex digits), and ErrNoKey for an empty key.
func Verify(r Receipt, key []byte) error {
	if len(key) == 0 {
		return ErrNoKey
	}
	if r.SignatureAlg != Alg {
		return ErrUnknownAlg
	}
	var got [sha256.Size]byte
	if len(r.Signature) != 2*sha256.Size {
		return ErrBadSignature
	}
	if _, err := hex.Decode(got[:], []byte(r.Signature)); err != nil {
		return ErrBadSignature
	}
	r.Inputs = Canonical(r.Inputs)
	var want [sha256.Size]byte
	if !hmac.Equal(got[:], mac(&r, key, want[:0])) {
		return ErrBadSignature
	}
	return nil
}

// mac appends the HMAC of r's signed bytes to dst. r.Inputs must already
// be canonical. The bytes are laid out in one buffer, sized up front, and
// hashed with one Write.
func mac(r *Receipt, key, dst []byte) []byte {
	refs := 8
	for _, f := range r.FileRefs {
		refs += 16 + len(f.Path) + len(f.ExcerptSHA256)
	}
	n := len(domain) + 17*12 + 160 + refs + len(r.ReceiptID) + len(r.SessionID) + len(r.TurnID) +
		len(r.AgentID) + len(r.ToolID) + len(r.CallID) + len(r.Inputs) + len(r.Outputs) +
		len(r.Excerpt) + len(r.SHA256) + len(r.Error) + len(r.Timestamp) + len(r.SignatureAlg) + 40
	b := make([]byte, 0, n)
	b = append(b, domain...)
	b = field(b, "receipt_id", r.ReceiptID)
	b = field(b, "session_id", r.SessionID)
	b = field(b, "turn_id", r.TurnID)
	b = field(b, "agent_id", r.AgentID)
	b = field(b, "tool_id", r.ToolID)
	b = field(b, "call_id", r.CallID)
	b = field(b, "ok", strconv.FormatBool(r.OK))
	b = field(b, "inputs", string(r.Inputs))
	b = field(b, "outputs", r.Outputs)
	b = field(b, "excerpt", r.Excerpt)
	b = field(b, "sha256", r.SHA256)
	var num [24]byte
	b = field(b, "full_size", string(strconv.AppendInt(num[:0], int64(r.FullSize), 10)))
	b = field(b, "truncated", strconv.FormatBool(r.Truncated))
	b = field(b, "error", r.Error)
	// file_refs: a count, then each ref's two strings.
	b = binary.BigEndian.AppendUint32(b, uint32(len("file_refs")))
	b = append(b, "file_refs"...)
	b = binary.BigEndian.AppendUint64(b, uint64(refs))
	b = binary.BigEndian.AppendUint64(b, uint64(len(r.FileRefs)))
	for _, f := range r.FileRefs {
		b = binary.BigEndian.AppendUint64(b, uint64(len(f.Path)))
		b = append(b, f.Path...)
		b = binary.BigEndian.AppendUint64(b, uint64(len(f.ExcerptSHA256)))
		b = append(b, f.ExcerptSHA256...)
	}
	b = field(b, "timestamp", r.Timestamp)
	b = field(b, "signature_alg", r.SignatureAlg)
	h := hmac.New(sha256.New, key)
	h.Write(b)
	return h.Sum(dst)
}

// field appends one length-prefixed name and value.
func field(b []byte, name, v string) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(len(name)))
	b = append(b, name...)
	b = binary.BigEndian.AppendUint64(b, uint64(len(v)))
	return append(b, v...)
}

// Excerpt returns what of a tool's output fits in limit bytes, cut at a
// UTF-8 boundary so no character is split, with the SHA-256 (hex) and size
// of the whole output, which the receipt keeps so a reader can check the
// full output later (seed 002 "Tool Result Injection", G-12).
func Excerpt(out []byte, limit int) (excerpt, sha256hex string, full int, truncated bool) {
	sum := sha256.Sum256(out)
	sha256hex = hex.EncodeToString(sum[:])
	full = len(out)
	if limit < 0 {
		limit = 0
	}
	if full <= limit {
		return string(out), sha256hex, full, false
	}
	cut := limit
	// Back up over at most three continuation bytes to the start of the
	// character the limit splits; in bytes that are not UTF-8 at all
	// there is no boundary to find, and the limit stands.
	for i := 0; i < utf8.UTFMax-1 && cut > 0 && !utf8.RuneStart(out[cut]); i++ {
		cut--
	}
	if cut > 0 && !utf8.RuneStart(out[cut]) {
		cut = limit
	}
	return string(out[:cut]), sha256hex, full, true
}

// validUTF8 replaces each byte of s that is not part of valid UTF-8 with
// U+FFFD, as encoding/json does when it writes s.
func validUTF8(s string) string {
	if utf8.ValidString(s) {
		return s
	}
	b := make([]byte, 0, len(s)+8)
	for i := 0; i < len(s); {
		r, n := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && n == 1 {
			b = append(b, "\uFFFD"...)
		} else {
			b = append(b, s[i:i+n]...)
		}
		i += n
	}
	return string(b)
}
