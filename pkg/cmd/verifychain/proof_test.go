package verifychain

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/store"
)

// TestProof: verify-chain --proof checks one event's inclusion with only
// the event, the proof and a signed checkpoint (issue 19): no database.
// The event's hash is recomputed from its body, so an edited event fails
// even when the file's event_hash and the proof's are made to agree.
func TestProof(t *testing.T) {
	recs := chain(t, 13)
	signer, vkey := notekeytest.New(t, origin, 1)
	_, otherVkey := notekeytest.New(t, "someone.else/log", 3)
	forger, _ := notekeytest.New(t, origin, 2)
	_, st := newDB(t, recs)
	ctx := context.Background()
	const seq, size = 6, 13
	proof, err := checkpoint.ProveInclusion(seq, recs[seq-1].EventHash, size, store.HashReader(ctx, st))
	if err != nil {
		t.Fatal(err)
	}
	n13 := signAt(t, st, size, signer)
	n12 := signAt(t, st, 12, signer)
	forged := signAt(t, st, size, forger)
	st.Close()

	dir := t.TempDir()
	write := func(name string, data []byte) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, data, 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	proofJSON := func(p checkpoint.InclusionProof) []byte {
		b, err := json.Marshal(p)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	line, err := audit.ExportLine(recs[seq-1]) // the event as GET /api/events/{id} serves it
	if err != nil {
		t.Fatal(err)
	}
	event := write("event.json", line)
	proofFile := write("proof.json", proofJSON(proof))
	withNote := proof
	withNote.Checkpoint = string(n13)
	proofWithNote := write("proof-note.json", proofJSON(withNote))
	note13, note12, forgedNote := write("13.note", n13), write("12.note", n12), write("forged.note", forged)

	// The event edited, its event_hash left as the proof's.
	edited := write("edited.json", bytes.Replace(line, []byte(`"agent-1"`), []byte(`"agent-9"`), 1))
	// The body alone, without event_hash: what was hashed.
	body := write("body.json", recs[seq-1].Body)
	other := write("other.json", mustLine(t, recs[seq]))
	badHashes := proof
	badHashes.Hashes = slices.Clone(proof.Hashes)
	badHashes.Hashes[0][0] ^= 1
	badProof := write("bad-proof.json", proofJSON(badHashes))

	for _, tt := range []struct {
		name   string
		argv   []string
		code   int
		reason string
		stderr string
	}{
		{name: "included", argv: []string{"--proof", proofFile, "--event", event, "--checkpoint", note13, "--key", vkey}},
		{name: "the proof's own checkpoint", argv: []string{"--proof", proofWithNote, "--event", event, "--key", vkey}},
		{name: "the body alone", argv: []string{"--proof", proofFile, "--event", body, "--checkpoint", note13, "--key", vkey}},
		{name: "edited event", argv: []string{"--proof", proofFile, "--event", edited, "--checkpoint", note13, "--key", vkey}, code: 1, reason: ReasonEventMismatch},
		{name: "another event", argv: []string{"--proof", proofFile, "--event", other, "--checkpoint", note13, "--key", vkey}, code: 1, reason: ReasonEventMismatch},
		{name: "altered proof", argv: []string{"--proof", badProof, "--event", event, "--checkpoint", note13, "--key", vkey}, code: 1, reason: ReasonProofInvalid},
		{name: "forged checkpoint", argv: []string{"--proof", proofFile, "--event", event, "--checkpoint", forgedNote, "--key", vkey}, code: 1, reason: ReasonCheckpointUnverified},
		{name: "wrong key", argv: []string{"--proof", proofWithNote, "--event", event, "--key", otherVkey}, code: 1, reason: ReasonCheckpointUnverified},
		{name: "checkpoint of another size", argv: []string{"--proof", proofFile, "--event", event, "--checkpoint", note12, "--key", vkey}, code: 3,
			stderr: "the proof is for tree size 13, the checkpoint from " + note12 + " is of size 12\nverify-chain: hint: ask for the proof at the checkpoint's size: GET /api/proof/inclusion?seq=6&size=12\n"},
		{name: "no checkpoint", argv: []string{"--proof", proofFile, "--event", event, "--key", vkey}, code: 3, stderr: "carries no checkpoint"},
		{name: "no key", argv: []string{"--proof", proofFile, "--event", event}, code: 3, stderr: "--proof needs --key"},
		{name: "no event", argv: []string{"--proof", proofFile, "--key", vkey}, code: 3, stderr: "--proof needs --event"},
		{name: "with a database", argv: []string{"--proof", proofFile, "--event", event, "--key", vkey, "--db", "x.db"}, code: 3, stderr: "without --db, --jsonl or --checkpoint-log"},
		{name: "malformed proof", argv: []string{"--proof", event, "--event", event, "--key", vkey}, code: 3, stderr: "inclusion proof: unknown field"},
		{name: "not an event", argv: []string{"--proof", proofFile, "--event", proofFile, "--checkpoint", note13, "--key", vkey}, code: 3, stderr: "not an audit event"},
		{name: "malformed event", argv: []string{"--proof", proofFile, "--event", write("x.json", []byte(`{"event_id":"evt_1"}`)), "--checkpoint", note13, "--key", vkey}, code: 3, stderr: "no seq member"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, rep, out, errOut := run(t, append(tt.argv, "-o", "json")...)
			if code != tt.code || !strings.Contains(errOut, tt.stderr) {
				t.Fatalf("exit %d, stderr %q, stdout %s; want %d and %q", code, errOut, out, tt.code, tt.stderr)
			}
			if code == 3 {
				return
			}
			if rep["included"] != (code == 0) || rep["reason"] != nilIfEmpty(tt.reason) {
				t.Fatalf("report %s", out)
			}
			if code == 0 && (rep["seq"] != float64(seq) || rep["event_hash"] != recs[seq-1].EventHash || rep["origin"] != origin || rep["tree_size"] != float64(size)) {
				t.Errorf("report %s", out)
			}
		})
	}

	code, _, out, _ := run(t, "--proof", proofFile, "--event", event, "--checkpoint", note13, "--key", vkey, "-o", "text")
	want := "included: seq 6 (evt_6, hash " + recs[5].EventHash[:12] + "…) is in the log auditd.test/log of 13 events (checkpoint from " + note13 + ")\n"
	if code != 0 || out != want {
		t.Errorf("text: exit %d\n got %q\nwant %q", code, out, want)
	}
	code, _, out, _ = run(t, "--proof", proofFile, "--event", edited, "--checkpoint", note13, "--key", vkey, "-o", "text")
	if code != 1 || !strings.HasPrefix(out, "NOT INCLUDED (event_mismatch): seq 6 (evt_6, hash ") || !strings.Contains(out, "the event was changed, or is another") {
		t.Errorf("text: exit %d\n%s", code, out)
	}
}

func mustLine(t *testing.T, r audit.Record) []byte {
	t.Helper()
	line, err := audit.ExportLine(r)
	if err != nil {
		t.Fatal(err)
	}
	return line
}

func nilIfEmpty(s string) any {
	if s == "" {
		return nil
	}
	return s
}
