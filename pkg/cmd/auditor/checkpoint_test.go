package auditor

import (
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/sumdb/note"

	"github.com/govkit/govkit/internal/auditdtest"
	"github.com/govkit/govkit/internal/notekeytest"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/checkpoint"
	"github.com/govkit/govkit/pkg/client"
	"github.com/govkit/govkit/pkg/detect"
	"github.com/govkit/govkit/pkg/monitor"
)

const testOrigin = "audit.test/log"

// signingDaemon is a real auditd that signs a checkpoint every 5 events
// (and at shutdown) with *signer, read at every start: a test swaps it
// between restarts as an attacker with the database would.
type signingDaemon struct {
	*daemon
	signer *note.Signer
}

func startSigning(t *testing.T, s note.Signer) *signingDaemon {
	t.Helper()
	sd := &signingDaemon{signer: &s}
	sd.daemon = &daemon{t: t, Daemon: auditdtest.Start(t, auditdtest.Options{Config: func(c *auditd.Config) {
		c.Checkpoints = &auditd.CheckpointConfig{Signer: *sd.signer, Every: 5, Interval: time.Hour}
	}})}
	var err error
	if sd.c, err = client.New(sd.URL); err != nil {
		t.Fatal(err)
	}
	return sd
}

// waitCheckpoint waits until auditd serves a checkpoint of size n.
func (d *signingDaemon) waitCheckpoint(n int64) {
	d.t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	for {
		msg, err := d.c.Checkpoint(context.Background())
		if err == nil {
			text, _, _ := strings.Cut(string(msg), "\n\n")
			if c, err := checkpoint.Parse([]byte(text + "\n")); err == nil && c.Size == n {
				return
			}
		}
		if time.Now().After(deadline) {
			d.t.Fatalf("no checkpoint of size %d: %v %q", n, err, msg)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// copyDB copies the stopped auditd's database to a new file.
func (d *signingDaemon) copyDB() string {
	d.t.Helper()
	dst := filepath.Join(d.t.TempDir(), "copy.db")
	for _, suffix := range []string{"", "-wal"} {
		in, err := os.Open(d.DB + suffix)
		if os.IsNotExist(err) && suffix != "" {
			continue
		}
		if err != nil {
			d.t.Fatal(err)
		}
		out, err := os.Create(dst + suffix)
		if err != nil {
			d.t.Fatal(err)
		}
		if _, err := io.Copy(out, in); err != nil {
			d.t.Fatal(err)
		}
		in.Close()
		if err := out.Close(); err != nil {
			d.t.Fatal(err)
		}
	}
	return dst
}

// checkpointDetails decodes the details of the alerts of type typ pinned
// by a checkpoint.
func checkpointDetails(t *testing.T, r *invocation, typ string) []detect.CheckpointDetails {
	t.Helper()
	var out []detect.CheckpointDetails
	for _, a := range r.ofType(typ) {
		var d detect.CheckpointDetails
		if err := json.Unmarshal(a.Details, &d); err != nil {
			t.Fatal(err)
		}
		if d.PinnedBy == detect.PinnedByCheckpoint {
			out = append(out, d)
		}
	}
	return out
}

// A tamper class per case (issue 19 "a test per tamper class … detected
// by auditor"): auditor pinned the checkpoint of 10 events with --once;
// the database is tampered while auditd is stopped; the next --once, from
// the same state file, raises the alert the class calls for, exits 2, and
// leaves the pin where it was.
func TestCheckpointTamper(t *testing.T) {
	for _, c := range []struct {
		name   string
		tamper func(t *testing.T, d *signingDaemon, prefix string)
		typ    string
		kind   string
		check  func(t *testing.T, got detect.CheckpointDetails)
	}{{
		name:   "truncated, checkpoints left",
		tamper: func(t *testing.T, d *signingDaemon, _ string) { d.restart(`DELETE FROM events WHERE seq > 7`) },
		typ:    detect.HeadRegressed, kind: detect.HeadShrank,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if got.PinnedSize != 10 || got.CurrentSize != 7 {
				t.Errorf("details %+v", got)
			}
		},
	}, {
		name: "truncated with its checkpoints",
		tamper: func(t *testing.T, d *signingDaemon, _ string) {
			d.restart(`DELETE FROM events WHERE seq > 7; DELETE FROM checkpoints WHERE size > 7`)
		},
		typ: detect.HeadRegressed, kind: detect.HeadShrank,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if got.PinnedSize != 10 || got.CurrentSize != 5 || got.CurrentRoot == "" {
				t.Errorf("details %+v", got)
			}
		},
	}, {
		// The database replaced by a copy of its first 5 events, which
		// then grows to 10 other ones, signed with the real key: the
		// chain verifies, the checkpoint signature too; only the root
		// differs from the pinned one.
		name: "consistent rewrite, same size",
		tamper: func(t *testing.T, d *signingDaemon, prefix string) {
			d.Stop()
			d.DB = prefix
			d.start()
			d.post("mallory", 5, nil)
			d.waitCheckpoint(10)
		},
		typ: detect.CheckpointInconsistent, kind: detect.CheckpointForked,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if got.PinnedSize != 10 || got.CurrentSize != 10 || got.CurrentRoot == got.PinnedRoot || got.Origin != testOrigin {
				t.Errorf("details %+v", got)
			}
		},
	}, {
		name: "consistent rewrite, grown",
		tamper: func(t *testing.T, d *signingDaemon, prefix string) {
			d.Stop()
			d.DB = prefix
			d.start()
			d.post("mallory", 7, nil)
			d.restart("") // signs the last 12 events at shutdown
			d.waitCheckpoint(12)
		},
		typ: detect.CheckpointInconsistent, kind: detect.CheckpointNotExtension,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if got.PinnedSize != 10 || got.CurrentSize != 12 || !strings.Contains(got.Reason, "does not extend") {
				t.Errorf("details %+v", got)
			}
		},
	}, {
		// auditd restarted with another key of the same name, which
		// signs what follows: a forged checkpoint.
		name: "forged checkpoint",
		tamper: func(t *testing.T, d *signingDaemon, _ string) {
			forger, _ := notekeytest.New(t, testOrigin, 'f')
			*d.signer = forger
			d.restart("")
			d.post("a", 3, nil)
			d.restart("")
			d.waitCheckpoint(13)
		},
		typ: detect.CheckpointInconsistent, kind: detect.CheckpointUnverified,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if got.PinnedSize != 10 || !strings.Contains(got.Reason, "not signed by a known key") {
				t.Errorf("details %+v", got)
			}
		},
	}, {
		// A note edited in the checkpoints table: the signature by the
		// trusted key no longer verifies.
		name: "edited checkpoint",
		tamper: func(t *testing.T, d *signingDaemon, _ string) {
			d.restart(`UPDATE checkpoints SET note = CAST(replace(CAST(note AS TEXT), '` + testOrigin + `' || char(10) || '10' || char(10), '` + testOrigin + `' || char(10) || '11' || char(10)) AS BLOB) WHERE size = 10`)
		},
		typ: detect.CheckpointInconsistent, kind: detect.CheckpointUnverified,
		check: func(t *testing.T, got detect.CheckpointDetails) {
			if !strings.Contains(got.Reason, "bad checkpoint signature") {
				t.Errorf("details %+v", got)
			}
		},
	}} {
		t.Run(c.name, func(t *testing.T) {
			isolate(t)
			signer, vkey := notekeytest.New(t, testOrigin, 'l')
			d := startSigning(t, signer)
			d.post("a", 5, nil)
			d.waitCheckpoint(5)
			d.Stop()
			prefix := d.copyDB()
			d.start()
			d.post("a", 5, nil)
			d.waitCheckpoint(10)
			state := filepath.Join(t.TempDir(), "state.json")
			r := auditor(t, nil, "--once", "--audit-url", d.URL, "--state", state, "--since-seq", "0", "--checkpoint-key", vkey)
			r.want(0)
			if !strings.Contains(r.stderr.String(), "auditor: checkpoint pinned: audit.test/log at size 10") {
				t.Errorf("stderr:\n%s", r.stderr.String())
			}
			_, before := readStateFile(t, state)

			c.tamper(t, d, prefix)
			r = auditor(t, nil, "--once", "--audit-url", d.URL, "--state", state, "--checkpoint-key", vkey)
			r.want(2)
			got := checkpointDetails(t, r, c.typ)
			if len(got) != 1 || got[0].Kind != c.kind {
				t.Fatalf("%s alerts of kind %s: %v\nstdout:\n%s\nstderr:\n%s", c.typ, c.kind, got, r.stdout.String(), r.stderr.String())
			}
			c.check(t, got[0])
			if _, after := readStateFile(t, state); string(after) != string(before) {
				t.Errorf("state file changed after a failed check:\nbefore %s\nafter %s", before, after)
			}
		})
	}
}

// A key auditor was given that did not sign auditd's checkpoints: the
// first checkpoint is refused, not pinned.
func TestCheckpointWrongKey(t *testing.T) {
	isolate(t)
	signer, _ := notekeytest.New(t, testOrigin, 'l')
	_, other := notekeytest.New(t, testOrigin, 'o')
	d := startSigning(t, signer)
	d.post("a", 5, nil)
	d.waitCheckpoint(5)
	keyFile := filepath.Join(t.TempDir(), "log.pub")
	if err := os.WriteFile(keyFile, []byte(other+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	state := filepath.Join(t.TempDir(), "state.json")
	r := auditor(t, nil, "--once", "--audit-url", d.URL, "--state", state, "--checkpoint-key", keyFile)
	r.want(2)
	got := checkpointDetails(t, r, detect.CheckpointInconsistent)
	if len(got) != 1 || got[0].Kind != detect.CheckpointUnverified || got[0].CurrentSize != 0 ||
		!strings.Contains(got[0].Reason, "signed by audit.test/log+") {
		t.Fatalf("alerts %v\n%s", got, r.stdout.String())
	}
	if st, _ := readStateFile(t, state); st.Checkpoint != nil {
		t.Errorf("a checkpoint was pinned: %+v", st.Checkpoint)
	}
}

// The running auditor follows the log's checkpoints as it grows: each new
// one pinned after its consistency proof, the pin kept across a restart of
// auditor; a restart with another key refuses the pinned checkpoint.
func TestCheckpointFollowsGrowth(t *testing.T) {
	isolate(t)
	signer, vkey := notekeytest.New(t, testOrigin, 'l')
	d := startSigning(t, signer)
	d.post("a", 5, nil)
	d.waitCheckpoint(5)
	state := filepath.Join(t.TempDir(), "state.json")
	pinned := func() int64 {
		data, err := os.ReadFile(state)
		if err != nil {
			return -1
		}
		st, err := monitor.ParseState(data)
		if err != nil || st.Checkpoint == nil {
			return -1
		}
		c, err := checkpoint.Open([]byte(st.Checkpoint.Note), mustVerifiers(t, vkey))
		if err != nil {
			return -1
		}
		return c.Size
	}
	r := background(t, nil, "--socket", d.Socket, "--audit-url", d.URL, "--state", state, "--verify-interval", "1s", "--checkpoint-key", vkey)
	r.waitFor("the pin at 5", func() bool { return pinned() == 5 })
	d.post("a", 10, nil)
	d.waitCheckpoint(15)
	r.waitFor("the pin at 15", func() bool { return pinned() == 15 })
	r.stop()
	r.want(0)
	if n := len(r.alerts()); n != 0 {
		t.Errorf("alerts: %s", r.stdout.String())
	}

	once := auditor(t, nil, "--once", "--audit-url", d.URL, "--state", state, "--checkpoint-key", vkey)
	once.want(0)
	_, other := notekeytest.New(t, testOrigin, 'o')
	once = auditor(t, nil, "--once", "--audit-url", d.URL, "--state", state, "--checkpoint-key", other)
	once.want(3)
	if !strings.Contains(once.stderr.String(), "its pinned checkpoint: checkpoint not signed by a known key") {
		t.Errorf("stderr:\n%s", once.stderr.String())
	}
}

func mustVerifiers(t *testing.T, vkeys ...string) note.Verifiers {
	t.Helper()
	v, err := checkpoint.Verifiers(vkeys...)
	if err != nil {
		t.Fatal(err)
	}
	return v
}
