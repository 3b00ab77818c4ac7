package checkpoint

import (
	"bytes"
	"crypto/ed25519"
	"encoding/base64"
	"errors"
	"fmt"
	"strings"

	"golang.org/x/mod/sumdb/note"
)

// VerifierKey returns the verifier key ("<name>+<hash>+<keydata>") of a
// signer key as note.GenerateKey writes it
// ("PRIVATE+KEY+<name>+<hash>+<keydata>", Ed25519), so that auditd can
// print and log the key that checks its checkpoints from the one file it
// keeps. The error never quotes the key.
func VerifierKey(skey string) (string, error) {
	skey = strings.TrimSpace(skey)
	if _, err := note.NewSigner(skey); err != nil {
		return "", fmt.Errorf("not a signer key: %w", err)
	}
	// PRIVATE, KEY, name, hash, keydata (base64, which may hold '+');
	// NewSigner checked the form.
	parts := strings.SplitN(skey, "+", 5)
	name, data := parts[2], parts[4]
	raw, err := base64.StdEncoding.DecodeString(data)
	if err != nil || len(raw) != 1+ed25519.SeedSize || raw[0] != 1 {
		return "", errors.New("not an Ed25519 signer key")
	}
	pub := ed25519.NewKeyFromSeed(raw[1:]).Public().(ed25519.PublicKey)
	return note.NewEd25519VerifierKey(name, pub)
}

// A checkpoint log (auditd --checkpoint-log) is the signed notes auditd
// signed, in order, each followed by an empty line: a copy of the
// checkpoints outside the database, appended and fsynced, that
// verify-chain reads with SplitNotes.

// AppendNote appends a signed note to a checkpoint log's bytes.
func AppendNote(log, msg []byte) []byte {
	return append(append(log, msg...), '\n')
}

// maxLog bounds a checkpoint log SplitNotes reads: 64 MiB, about 200,000
// checkpoints.
const maxLog = 64 << 20

// SplitNotes splits a checkpoint log into its signed notes (not opened:
// Open each). A note is text lines, an empty line, and signature lines
// starting "— "; the empty line after the last signature ends it. A log
// whose last note is incomplete (a crash mid-append) is an error naming
// the line, as is anything else that is not a sequence of notes.
func SplitNotes(log []byte) ([][]byte, error) {
	if len(log) > maxLog {
		return nil, fmt.Errorf("%w: checkpoint log larger than %d bytes", ErrMalformed, maxLog)
	}
	var notes [][]byte
	start, line := 0, 1
	const (
		inText = iota
		inSigs
	)
	state, sigs, startLine := inText, 0, 1
	for pos := 0; pos < len(log); {
		end := bytes.IndexByte(log[pos:], '\n')
		if end < 0 {
			return nil, fmt.Errorf("%w: checkpoint log line %d does not end in a newline", ErrMalformed, line)
		}
		l := log[pos : pos+end]
		next := pos + end + 1
		switch {
		case state == inText && len(l) == 0:
			if pos == start {
				return nil, fmt.Errorf("%w: checkpoint log line %d: an empty line where a note should begin", ErrMalformed, line)
			}
			state, sigs = inSigs, 0
		case state == inText:
		case len(l) == 0:
			if sigs == 0 {
				return nil, fmt.Errorf("%w: checkpoint log line %d: a note without signatures", ErrMalformed, line)
			}
			notes = append(notes, log[start:pos]) // the note ends with its last signature's newline
			start, state, startLine = next, inText, line+1
		case bytes.HasPrefix(l, []byte("— ")):
			sigs++
		default:
			return nil, fmt.Errorf("%w: checkpoint log line %d is not a signature line", ErrMalformed, line)
		}
		pos, line = next, line+1
	}
	if start != len(log) {
		return nil, fmt.Errorf("%w: the checkpoint log's last note (from line %d) is incomplete", ErrMalformed, startLine)
	}
	return notes, nil
}
