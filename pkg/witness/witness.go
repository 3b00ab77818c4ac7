// Package witness decides whether a log's new signed checkpoint extends the one a watcher trusted before, and cosigns it when it does (C2SP tlog-witness, simplified; issue 19).
package witness

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/pkg/checkpoint"
)

// Relation is how a log's new checkpoint stands to the one a watcher
// trusted before (Compare).
type Relation int

const (
	// Same: the same size and root; nothing to prove.
	Same Relation = iota
	// Extends: a larger size; it extends the old one only if a
	// consistency proof from the old size to the new verifies.
	Extends
	// Regressed: a smaller size. A log only grows, so it was truncated or
	// rolled back (DESIGN §6: what a plain chain cannot show).
	Regressed
	// Forked: the same size with another root: two different logs signed
	// under one name.
	Forked
	// OtherLog: another origin; the two checkpoints are not of one log.
	OtherLog
)

func (r Relation) String() string {
	switch r {
	case Same:
		return "same"
	case Extends:
		return "extends"
	case Regressed:
		return "regressed"
	case Forked:
		return "forked"
	case OtherLog:
		return "other_log"
	}
	return fmt.Sprintf("Relation(%d)", int(r))
}

// Compare says how new stands to old, without a proof: a larger new
// checkpoint is only a candidate (Extends) until Verify checks the proof.
func Compare(old, new checkpoint.Checkpoint) Relation {
	switch {
	case old.Origin != new.Origin:
		return OtherLog
	case new.Size < old.Size:
		return Regressed
	case new.Size == old.Size && new.Root != old.Root:
		return Forked
	case new.Size == old.Size:
		return Same
	}
	return Extends
}

// Refusals of Verify and Cosign; the errors wrap one of them (or one of
// checkpoint.Open's for a note the log's key did not sign) and give the
// sizes and roots.
var (
	// ErrRegressed: the new checkpoint is smaller than the trusted one.
	ErrRegressed = errors.New("the log went back")
	// ErrForked: the new checkpoint does not extend the trusted one: the
	// same size with another root, or a consistency proof that fails.
	ErrForked = errors.New("the log forked")
	// ErrOtherLog: the new checkpoint names another origin.
	ErrOtherLog = errors.New("a checkpoint of another log")
)

// Verify checks that new extends old: the same checkpoint, or a larger one
// with a consistency proof p from old's size to new's that verifies (p is
// ignored otherwise). It is the check both auditor and the witness make
// before they trust a new checkpoint.
func Verify(old, new checkpoint.Checkpoint, p checkpoint.ConsistencyProof) error {
	switch Compare(old, new) {
	case Same:
		return nil
	case OtherLog:
		return fmt.Errorf("%w: origin %q, trusted %q", ErrOtherLog, new.Origin, old.Origin)
	case Regressed:
		return fmt.Errorf("%w: size %d, smaller than the trusted size %d", ErrRegressed, new.Size, old.Size)
	case Forked:
		return fmt.Errorf("%w: size %d has root %s, trusted %s", ErrForked, new.Size, new.Root, old.Root)
	}
	if err := p.Verify(old, new); err != nil {
		return fmt.Errorf("%w: size %d (root %s) does not extend the trusted size %d (root %s): %v",
			ErrForked, new.Size, new.Root, old.Size, old.Root, err)
	}
	return nil
}

// Witness cosigns the checkpoints of one log.
type Witness struct {
	// Log holds the log's verifier key(s): a note none of them signed is
	// never cosigned.
	Log note.Verifiers
	// Signer is the witness's own key (auditd key create).
	Signer note.Signer
	// Self is Signer's verifier key, to read back the witness's own
	// state: the last note it cosigned.
	Self note.Verifier
}

// Cosign returns msg, a signed note of the log, with the witness's
// signature added after the log's (note.Sign keeps the signatures the
// log's keys verified and drops any other), and the checkpoint it signs.
// last is the last checkpoint the witness cosigned (nil: none yet, and
// the first is trusted as it is: trust on first use), and p the
// consistency proof from last's size to msg's (ignored when there is
// nothing to prove). It refuses a note the log's key did not sign and a
// checkpoint that does not extend last; it does no I/O.
func (w Witness) Cosign(last *checkpoint.Checkpoint, msg []byte, p checkpoint.ConsistencyProof) ([]byte, checkpoint.Checkpoint, error) {
	cp, err := checkpoint.Open(msg, w.Log)
	if err != nil {
		return nil, checkpoint.Checkpoint{}, err
	}
	if last != nil {
		if err := Verify(*last, cp, p); err != nil {
			return nil, cp, err
		}
	}
	n, err := note.Open(msg, w.Log) // checkpoint.Open checked it
	if err != nil {
		return nil, cp, err
	}
	out, err := note.Sign(n, w.Signer)
	if err != nil {
		return nil, cp, fmt.Errorf("cosigning: %w", err)
	}
	return out, cp, nil
}

// Last opens the witness's own last cosigned note (its state) with its
// own verifier key: a state file the witness did not sign is refused, so
// whoever can write it cannot make the witness forget a checkpoint.
func (w Witness) Last(cosigned []byte) (checkpoint.Checkpoint, error) {
	if w.Self == nil {
		return checkpoint.Checkpoint{}, errors.New("witness: no verifier key of its own")
	}
	return checkpoint.Open(cosigned, note.VerifierList(w.Self))
}
