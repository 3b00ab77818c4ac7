package checkpoint

import (
	"errors"
	"fmt"

	"golang.org/x/mod/sumdb/tlog"

	"github.com/govkit/govkit/pkg/strictjson"
)

// SchemaVersion is the schema_version of the proofs' JSON (DESIGN §3).
const SchemaVersion = 1

// ErrProof: a proof does not verify against the checkpoints it was
// checked with, so the log they describe is not the one the proof comes
// from (or the proof was altered).
var ErrProof = errors.New("proof does not verify")

// maxProofHashes bounds a proof: an inclusion proof has at most 63 hashes
// and a consistency proof about twice as many in a tree of 2^63 records.
const maxProofHashes = 128

// InclusionProof proves that the record with Seq, whose event_hash is
// EventHash, is in the tree of size TreeSize (RFC 6962 §2.1.1, as
// tlog.ProveRecord builds it). With the event and a checkpoint of that
// size, it is a receipt anyone can check without the database (issue 19).
type InclusionProof struct {
	SchemaVersion int         `json:"schema_version"`
	Seq           int64       `json:"seq"`
	EventHash     string      `json:"event_hash"`
	TreeSize      int64       `json:"tree_size"`
	Hashes        []tlog.Hash `json:"hashes"` // base64, as tlog.Hash encodes them
	// Checkpoint is the signed note of the checkpoint of TreeSize when
	// the log has one (auditd adds it; Verify does not read it: the
	// caller opens it with the keys it trusts).
	Checkpoint string `json:"checkpoint,omitempty"`
}

// ConsistencyProof proves that the tree of size From is a prefix of the
// tree of size To (RFC 6962 §2.1.2, as tlog.ProveTree builds it): nothing
// signed at From was changed or removed by To.
type ConsistencyProof struct {
	SchemaVersion int         `json:"schema_version"`
	From          int64       `json:"from"`
	To            int64       `json:"to"`
	Hashes        []tlog.Hash `json:"hashes"`
}

// ProveInclusion returns the proof that the record with seq and eventHash
// is in the tree of size treeSize, reading that tree's hashes from r.
func ProveInclusion(seq int64, eventHash string, treeSize int64, r tlog.HashReader) (InclusionProof, error) {
	if seq < 1 || seq > treeSize {
		return InclusionProof{}, fmt.Errorf("checkpoint: no seq %d in a tree of size %d", seq, treeSize)
	}
	if _, err := LeafHash(eventHash); err != nil {
		return InclusionProof{}, err
	}
	p, err := tlog.ProveRecord(treeSize, LeafIndex(seq), r)
	if err != nil {
		return InclusionProof{}, fmt.Errorf("checkpoint: proving seq %d in size %d: %w", seq, treeSize, err)
	}
	return InclusionProof{SchemaVersion: SchemaVersion, Seq: seq, EventHash: eventHash, TreeSize: treeSize, Hashes: nonNil(p)}, nil
}

// Verify checks the proof against c, a checkpoint of the proof's tree
// size (opened with Open by the caller, who trusts its key): that the
// record is a leaf of the tree whose root c signs.
func (p InclusionProof) Verify(c Checkpoint) error {
	if c.Size != p.TreeSize {
		return fmt.Errorf("%w: the proof is for tree size %d, the checkpoint's size is %d", ErrProof, p.TreeSize, c.Size)
	}
	if p.Seq < 1 || p.Seq > p.TreeSize {
		return fmt.Errorf("%w: seq %d is not in a tree of size %d", ErrProof, p.Seq, p.TreeSize)
	}
	leaf, err := LeafHash(p.EventHash)
	if err != nil {
		return fmt.Errorf("%w: %v", ErrProof, err)
	}
	if err := tlog.CheckRecord(p.Hashes, p.TreeSize, c.Root, LeafIndex(p.Seq), leaf); err != nil {
		return fmt.Errorf("%w: seq %d with event hash %s is not in the tree of size %d: %v", ErrProof, p.Seq, p.EventHash, p.TreeSize, err)
	}
	return nil
}

// ProveConsistency returns the proof that the tree of size from is a
// prefix of the tree of size to, reading the hashes from r (0 ≤ from ≤ to;
// the proof is empty when from is 0 or from = to).
func ProveConsistency(from, to int64, r tlog.HashReader) (ConsistencyProof, error) {
	if from < 0 || from > to {
		return ConsistencyProof{}, fmt.Errorf("checkpoint: no consistency proof from size %d to size %d", from, to)
	}
	var p tlog.TreeProof
	if from > 0 {
		var err error
		if p, err = tlog.ProveTree(to, from, r); err != nil {
			return ConsistencyProof{}, fmt.Errorf("checkpoint: proving size %d consistent with size %d: %w", from, to, err)
		}
	}
	return ConsistencyProof{SchemaVersion: SchemaVersion, From: from, To: to, Hashes: nonNil(p)}, nil
}

// Verify checks the proof against checkpoints of its two sizes, from the
// same log: that the tree old signs is a prefix of the one new signs.
func (p ConsistencyProof) Verify(old, new Checkpoint) error {
	switch {
	case old.Origin != new.Origin:
		return fmt.Errorf("%w: checkpoints of two logs (%q and %q)", ErrProof, old.Origin, new.Origin)
	case old.Size != p.From || new.Size != p.To:
		return fmt.Errorf("%w: the proof is from size %d to %d, the checkpoints' sizes are %d and %d", ErrProof, p.From, p.To, old.Size, new.Size)
	case p.From < 0 || p.From > p.To:
		return fmt.Errorf("%w: from size %d to size %d", ErrProof, p.From, p.To)
	case p.From == 0:
		// Every tree extends the empty one, whose root is fixed.
		empty, _ := tlog.TreeHash(0, nil)
		if old.Root != empty || len(p.Hashes) != 0 {
			return fmt.Errorf("%w: a checkpoint of size 0 with a root other than the empty tree's", ErrProof)
		}
		return nil
	}
	if err := tlog.CheckTree(p.Hashes, p.To, new.Root, p.From, old.Root); err != nil {
		return fmt.Errorf("%w: the tree of size %d is not a prefix of the tree of size %d: %v", ErrProof, p.From, p.To, err)
	}
	return nil
}

// ParseInclusionProof reads an InclusionProof's JSON strictly
// (strictjson.Decode: one object, no unknown fields, in JSON's terms),
// with schema_version 1 and at most 128 hashes.
func ParseInclusionProof(data []byte) (InclusionProof, error) {
	var p InclusionProof
	if err := strictjson.Decode(data, &p); err != nil {
		return InclusionProof{}, fmt.Errorf("inclusion proof: %w", err)
	}
	if err := checkProof(p.SchemaVersion, len(p.Hashes)); err != nil {
		return InclusionProof{}, fmt.Errorf("inclusion proof: %w", err)
	}
	return p, nil
}

// ParseConsistencyProof reads a ConsistencyProof's JSON strictly, as
// ParseInclusionProof does.
func ParseConsistencyProof(data []byte) (ConsistencyProof, error) {
	var p ConsistencyProof
	if err := strictjson.Decode(data, &p); err != nil {
		return ConsistencyProof{}, fmt.Errorf("consistency proof: %w", err)
	}
	if err := checkProof(p.SchemaVersion, len(p.Hashes)); err != nil {
		return ConsistencyProof{}, fmt.Errorf("consistency proof: %w", err)
	}
	return p, nil
}

func checkProof(schema, hashes int) error {
	switch {
	case schema != SchemaVersion:
		return fmt.Errorf("schema_version %d, want %d", schema, SchemaVersion)
	case hashes > maxProofHashes:
		return fmt.Errorf("%d hashes, more than a proof can have (%d)", hashes, maxProofHashes)
	}
	return nil
}

// nonNil makes an empty proof encode as [] rather than null.
func nonNil(p []tlog.Hash) []tlog.Hash {
	if p == nil {
		return []tlog.Hash{}
	}
	return p
}
