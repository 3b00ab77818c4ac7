package checkpoint

import (
	"bytes"
	"encoding/base64"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"unicode"
	"unicode/utf8"

	"golang.org/x/mod/sumdb/note"
	"golang.org/x/mod/sumdb/tlog"
)

// Checkpoint is a commitment to the log's first Size records: the root of
// the Merkle tree of that size, named by the log's Origin (C2SP
// checkpoint).
type Checkpoint struct {
	Origin string
	Size   int64
	Root   tlog.Hash
}

// Errors of Parse and Open; the returned errors wrap one of them and say
// more.
var (
	// ErrMalformed: the text is not a checkpoint, or the note is not a
	// signed note.
	ErrMalformed = errors.New("malformed checkpoint")
	// ErrBadSignature: a known key signed the note, and the signature does
	// not verify: the text was changed after signing, or forged.
	ErrBadSignature = errors.New("bad checkpoint signature")
	// ErrUnknownKey: no signature on the note is by a key the caller
	// trusts.
	ErrUnknownKey = errors.New("checkpoint not signed by a known key")
)

// maxOrigin bounds an origin line; C2SP sets no limit, but ours are names
// like "auditd.example.com/log" and a bound keeps a hostile note cheap.
const maxOrigin = 256

// CheckOrigin reports whether origin can be a checkpoint's first line:
// non-empty, at most 256 bytes of UTF-8, without control characters, and
// without leading or trailing white space (which a reader could not see).
func CheckOrigin(origin string) error {
	switch {
	case origin == "":
		return errors.New("empty origin")
	case len(origin) > maxOrigin:
		return fmt.Errorf("origin longer than %d bytes", maxOrigin)
	case !utf8.ValidString(origin):
		return errors.New("origin is not UTF-8")
	case strings.TrimSpace(origin) != origin:
		return errors.New("origin has leading or trailing white space")
	}
	for _, r := range origin {
		if unicode.IsControl(r) {
			return fmt.Errorf("origin has control character %U", r)
		}
	}
	return nil
}

// Marshal returns the checkpoint's body, the text a signed note signs
// (C2SP checkpoint): "<origin>\n<size>\n<base64 root hash>\n", no
// extension lines. It fails for an invalid origin or a negative size.
func (c Checkpoint) Marshal() ([]byte, error) {
	if err := CheckOrigin(c.Origin); err != nil {
		return nil, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	if c.Size < 0 {
		return nil, fmt.Errorf("%w: negative size %d", ErrMalformed, c.Size)
	}
	b := make([]byte, 0, len(c.Origin)+64)
	b = append(b, c.Origin...)
	b = append(b, '\n')
	b = strconv.AppendInt(b, c.Size, 10)
	b = append(b, '\n')
	b = base64.StdEncoding.AppendEncode(b, c.Root[:])
	return append(b, '\n'), nil
}

// String is the checkpoint's body, or a description of why it has none.
func (c Checkpoint) String() string {
	b, err := c.Marshal()
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Parse reads a checkpoint body (the text of a signed note, without its
// signatures). It is strict, so that one checkpoint has exactly one text
// and Marshal gives back the bytes parsed: exactly three lines, each ending
// in "\n"; a size in canonical decimal (no sign, no leading zeros); the root
// in canonical padded base64 of 32 bytes. C2SP allows extension lines after
// the root; this log writes none, and Parse refuses them rather than sign
// off on lines nobody checks.
func Parse(text []byte) (Checkpoint, error) {
	c, err := parse(text)
	if err != nil {
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return c, nil
}

func parse(text []byte) (Checkpoint, error) {
	if len(text) > maxOrigin+1+19+1+44+1 { // origin, size, root and their newlines
		return Checkpoint{}, errors.New("longer than a checkpoint can be")
	}
	if !bytes.HasSuffix(text, []byte("\n")) {
		return Checkpoint{}, errors.New("does not end in a newline")
	}
	lines := strings.Split(string(text[:len(text)-1]), "\n")
	if len(lines) != 3 {
		return Checkpoint{}, fmt.Errorf("%d lines, want 3 (origin, size, root hash)", len(lines))
	}
	var c Checkpoint
	c.Origin = lines[0]
	if err := CheckOrigin(c.Origin); err != nil {
		return Checkpoint{}, err
	}
	size := lines[1]
	if size == "" || size[0] < '0' || size[0] > '9' || (size[0] == '0' && len(size) > 1) {
		return Checkpoint{}, errors.New("size is not a canonical decimal number")
	}
	n, err := strconv.ParseInt(size, 10, 64)
	if err != nil {
		return Checkpoint{}, errors.New("size is not a canonical decimal number")
	}
	c.Size = n
	// Compared with its own encoding too: the decoder skips '\r' and
	// '\n' in its input (found by FuzzParse).
	root, err := base64.StdEncoding.Strict().DecodeString(lines[2])
	if err != nil || len(root) != tlog.HashSize || base64.StdEncoding.EncodeToString(root) != lines[2] {
		return Checkpoint{}, errors.New("root hash is not 32 bytes of canonical base64")
	}
	copy(c.Root[:], root)
	return c, nil
}

// Sign returns the signed note of c, signed by signer (C2SP signed-note,
// Ed25519 with note.NewSigner's keys).
func Sign(c Checkpoint, signer note.Signer) ([]byte, error) {
	text, err := c.Marshal()
	if err != nil {
		return nil, err
	}
	msg, err := note.Sign(&note.Note{Text: string(text)}, signer)
	if err != nil {
		return nil, fmt.Errorf("signing the checkpoint: %w", err)
	}
	return msg, nil
}

// Open verifies a signed note and parses its text as a checkpoint. It
// needs at least one valid signature by a key in known; a signature by a
// known key that does not verify is ErrBadSignature, even beside a valid
// one. Signatures by other keys (a witness's cosignature, say) are
// ignored. The errors wrap ErrMalformed, ErrBadSignature or ErrUnknownKey.
func Open(msg []byte, known note.Verifiers) (Checkpoint, error) {
	n, err := note.Open(msg, known)
	if err != nil {
		var unverified *note.UnverifiedNoteError
		var invalid *note.InvalidSignatureError
		switch {
		case errors.As(err, &unverified):
			var by []string
			for _, s := range unverified.Note.UnverifiedSigs {
				by = append(by, fmt.Sprintf("%s+%08x", s.Name, s.Hash))
			}
			return Checkpoint{}, fmt.Errorf("%w (signed by %s)", ErrUnknownKey, strings.Join(by, ", "))
		case errors.As(err, &invalid):
			return Checkpoint{}, fmt.Errorf("%w: %v", ErrBadSignature, err)
		}
		return Checkpoint{}, fmt.Errorf("%w: %v", ErrMalformed, err)
	}
	return Parse([]byte(n.Text))
}

// Verifiers returns the note verifiers of verifier keys, in the form
// "<name>+<hash>+<keydata>" that note.GenerateKey (and auditd key create)
// prints. An error names the key by its position.
func Verifiers(vkeys ...string) (note.Verifiers, error) {
	vs := make([]note.Verifier, 0, len(vkeys))
	for i, k := range vkeys {
		v, err := note.NewVerifier(strings.TrimSpace(k))
		if err != nil {
			return nil, fmt.Errorf("verifier key %d: %w", i+1, err)
		}
		vs = append(vs, v)
	}
	return note.VerifierList(vs...), nil
}
