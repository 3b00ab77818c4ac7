package verifychain

import (
	"encoding/base64"
	"errors"
	"fmt"
	"io"

	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/cli"
)

// The offline inclusion check (verify-chain --proof, issue 19): one event,
// its inclusion proof (GET /api/proof/inclusion) and a signed checkpoint
// are a receipt anyone can check without the database. The event's hash
// is recomputed from its body, as pkg/audit seals it, never read from the
// files: the event_hash in the event file and in the proof are claims.

// Reasons of a proof check that fails (the JSON "reason").
const (
	ReasonEventMismatch        = "event_mismatch"        // the event is not the one the proof is for
	ReasonProofInvalid         = "proof_invalid"         // the proof does not lead to the checkpoint's root
	ReasonCheckpointUnverified = "checkpoint_unverified" // the checkpoint's signature does not verify with --key
)

// maxProofFile bounds --proof and --event (DESIGN §3: 1 MiB).
const maxProofFile = 1 << 20

// ProofReport is verify-chain --proof's JSON output.
type ProofReport struct {
	SchemaVersion int    `json:"schema_version"`
	Included      bool   `json:"included"`
	Seq           int64  `json:"seq"`
	EventID       string `json:"event_id"`
	// EventHash is recomputed from the event's body.
	EventHash string `json:"event_hash"`
	TreeSize  int64  `json:"tree_size"`
	// Origin and RootHash are the checkpoint's; empty when its signature
	// did not verify.
	Origin   string `json:"origin,omitempty"`
	RootHash string `json:"root_hash,omitempty"`
	// CheckpointSource is the --checkpoint file, or "proof" for the
	// note the proof carries.
	CheckpointSource string `json:"checkpoint_source"`
	Reason           string `json:"reason,omitempty"`
	Detail           string `json:"detail,omitempty"`
}

// validateProof checks the flags of the --proof mode: --event and --key
// with it, at most one --checkpoint, and neither a log nor a database.
func (o *VerifyOptions) validateProof(dbOnCommandLine bool) error {
	const hint = "verify-chain --proof PROOF.json --event EVENT.json --key VERIFIER_KEY [--checkpoint NOTE_FILE]"
	switch {
	case o.Proof == "":
		return cli.Failf("--event needs --proof").WithHint(hint)
	case o.Event == "":
		return cli.Failf("--proof needs --event: the event whose inclusion it proves").WithHint(hint)
	case len(o.Keys) == 0:
		return cli.Failf("--proof needs --key: a checkpoint proves nothing until its signature is verified").WithHint(hint)
	case dbOnCommandLine || o.JSONL != "" || len(o.CheckpointLogs) > 0:
		return cli.Failf("--proof checks one event offline, without --db, --jsonl or --checkpoint-log").WithHint(hint)
	case len(o.Checkpoints) > 1:
		return cli.Failf("--proof takes one --checkpoint, of the proof's tree size").WithHint(hint)
	}
	// A --db from the environment or a config file is not used.
	o.DB, o.dbSource = "", ""
	return nil
}

func proofRun(o *VerifyOptions) error {
	keys, err := loadKeys(o.Keys)
	if err != nil {
		return err
	}
	data, err := readBounded(o.Proof, maxProofFile)
	if err != nil {
		return cli.Failf("--proof %s: %v", o.Proof, err).WithHint("pass --proof FILE holding GET /api/proof/inclusion's JSON")
	}
	proof, err := checkpoint.ParseInclusionProof(data)
	if err != nil {
		return cli.Failf("--proof %s: %v", o.Proof, err).WithHint("pass --proof FILE holding GET /api/proof/inclusion's JSON")
	}
	raw, err := readBounded(o.Event, maxProofFile)
	if err != nil {
		return cli.Failf("--event %s: %v", o.Event, err).WithHint("pass --event FILE holding the event (GET /api/events/{id})")
	}
	rec, err := audit.ParseEvent(raw)
	if err == nil && (rec.EventID == "" || rec.EventType == "") {
		err = errors.New("not an audit event: no event_id or event_type")
	}
	if err != nil {
		return cli.Failf("--event %s: %v", o.Event, err).WithHint("pass --event FILE holding the event as auditd serves it (GET /api/events/{id}) or an export line")
	}

	rep := ProofReport{
		SchemaVersion: 1, Seq: rec.Seq, EventID: rec.EventID, EventHash: audit.Hash(rec.Body),
		TreeSize: proof.TreeSize, CheckpointSource: "proof",
	}
	msg := []byte(proof.Checkpoint)
	if len(o.Checkpoints) == 1 {
		rep.CheckpointSource = o.Checkpoints[0]
		if msg, err = readBounded(o.Checkpoints[0], maxNoteFile); err != nil {
			return cli.Failf("--checkpoint %s: %v", o.Checkpoints[0], err).WithHint("pass --checkpoint FILE holding a signed checkpoint (GET /api/checkpoint)")
		}
	} else if len(msg) == 0 {
		return cli.Failf("--proof %s carries no checkpoint (the log had none of size %d)", o.Proof, proof.TreeSize).
			WithHint("pass --checkpoint NOTE_FILE with a checkpoint of that size, or ask for the proof at a checkpointed size (GET /api/proof/inclusion?seq=N&size=S)")
	}
	cp, err := checkpoint.Open(msg, keys)
	switch {
	case errors.Is(err, checkpoint.ErrMalformed):
		return cli.Failf("checkpoint from %s: %v", rep.CheckpointSource, err).
			WithHint("pass --checkpoint FILE holding a signed checkpoint (GET /api/checkpoint)")
	case err != nil:
		rep.Reason, rep.Detail = ReasonCheckpointUnverified, err.Error()+": forged, or signed by a key not given with --key"
		return writeProof(o, rep)
	}
	rep.Origin, rep.RootHash = cp.Origin, base64.StdEncoding.EncodeToString(cp.Root[:])
	if cp.Size != proof.TreeSize {
		return cli.Failf("the proof is for tree size %d, the checkpoint from %s is of size %d", proof.TreeSize, rep.CheckpointSource, cp.Size).
			WithHint(fmt.Sprintf("ask for the proof at the checkpoint's size: GET /api/proof/inclusion?seq=%d&size=%d", rec.Seq, cp.Size))
	}
	switch {
	case rec.Seq != proof.Seq:
		rep.Reason, rep.Detail = ReasonEventMismatch, fmt.Sprintf("the event is seq %d, the proof is for seq %d", rec.Seq, proof.Seq)
	case rep.EventHash != proof.EventHash:
		rep.Reason = ReasonEventMismatch
		rep.Detail = fmt.Sprintf("the event's hash, recomputed from its body, is %s; the proof is for %.70q: the event was changed, or is another", rep.EventHash, proof.EventHash)
	default:
		if err := proof.Verify(cp); err != nil {
			rep.Reason, rep.Detail = ReasonProofInvalid, err.Error()
		} else {
			rep.Included = true
		}
	}
	if rec.EventHash != "" && rec.EventHash != rep.EventHash && rep.Included {
		// Included by its body; the hash written beside it is wrong.
		rep.Detail = fmt.Sprintf("the event file's event_hash %.70q is not its body's hash, which is the one included", rec.EventHash)
	}
	return writeProof(o, rep)
}

func writeProof(o *VerifyOptions, rep ProofReport) error {
	if o.Output.Resolve(o.IO) == cli.FormatJSON {
		if err := cli.WriteJSON(o.IO.Out, rep); err != nil {
			return err
		}
	} else if err := writeProofText(o.IO.Out, rep); err != nil {
		return cli.Failf("writing the report: %v", err)
	}
	if !rep.Included {
		return cli.Silent(exitTampered)
	}
	return nil
}

// writeProofText prints one line, and the detail when there is one:
//
//	included: seq 42 (evt_…, hash 3f2a9c0e41b7…) is in the log audit.example/log of 300 events (checkpoint from cp.note)
//	NOT INCLUDED (event_mismatch): the event's hash, recomputed from its body, is …
func writeProofText(w io.Writer, rep ProofReport) error {
	var err error
	if rep.Included {
		_, err = fmt.Fprintf(w, "included: seq %d (%s, hash %s) is in the log %s of %s %s (checkpoint from %s)\n",
			rep.Seq, shown(rep.EventID), head(rep.EventHash), shown(rep.Origin), group(rep.TreeSize), plural(rep.TreeSize, "event"), shown(rep.CheckpointSource))
		if err == nil && rep.Detail != "" {
			_, err = fmt.Fprintf(w, "note: %s\n", shownUpTo(rep.Detail, maxDetail))
		}
		return err
	}
	_, err = fmt.Fprintf(w, "NOT INCLUDED (%s): seq %d (%s, hash %s), checkpoint from %s: %s\n",
		rep.Reason, rep.Seq, shown(rep.EventID), head(rep.EventHash), shown(rep.CheckpointSource), shownUpTo(rep.Detail, maxDetail))
	return err
}
