package auditd_test

import (
	"encoding/json"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	"github.com/govkit/govkit/pkg/approval"
	"github.com/govkit/govkit/pkg/audit"
	"github.com/govkit/govkit/pkg/auditd"
	"github.com/govkit/govkit/pkg/govapi"
	"github.com/govkit/govkit/pkg/redact"
)

// Secrets are redacted before the event is sealed (DESIGN §11, issue 13):
// the stored body, the answer and the chain never hold them, and the event
// says what was removed where.
func TestRedactionBeforeSealing(t *testing.T) {
	extra, err := redact.ParsePattern("internal_token=itk_[a-z0-9]{12}")
	if err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, "", func(c *auditd.Config) { c.Redactor = redact.New(extra) })
	ctx := ctxT(t)
	const (
		password = "hunter2pw"
		bearer   = "abcDEF0123456789xyzXYZ"
		param    = "s3cr3t-param"
		internal = "itk_0123456789ab"
	)
	ev := toolEvent("sre-bot", "PGPASSWORD="+password+" psql -h db -c 'select 1'")
	ev.Tool.Parameters = json.RawMessage(`{"env":{"DB_PASSWORD":"` + param + `"},"timeout":30}`)
	ev.Tool.Result = "> Authorization: Bearer " + bearer + "\n< HTTP/1.1 200 OK"
	ev.Tool.Error = "retry with " + internal
	got, err := d.c.Append(ctx, ev)
	if err != nil {
		t.Fatal(err)
	}
	stored, err := d.c.Get(ctx, got.EventID)
	if err != nil {
		t.Fatal(err)
	}
	want := []audit.Redaction{
		{Field: "tool.error", Kind: "internal_token"},
		{Field: "tool.parameters", Kind: "password"},
		{Field: "tool.raw_command", Kind: "password"},
		{Field: "tool.result", Kind: "authorization"},
	}
	for _, e := range []audit.Event{got, stored} {
		b, _ := json.Marshal(e)
		for _, secret := range []string{password, bearer, param, internal} {
			if strings.Contains(string(b), secret) {
				t.Errorf("the stored event holds %q: %s", secret, b)
			}
		}
		if !slices.Equal(e.Redactions, want) {
			t.Errorf("redactions = %v, want %v", e.Redactions, want)
		}
	}
	if stored.Tool.RawCommand != "PGPASSWORD=[REDACTED:password] psql -h db -c 'select 1'" {
		t.Errorf("raw_command = %q", stored.Tool.RawCommand)
	}
	if string(stored.Tool.Parameters) != `{"env":{"DB_PASSWORD":"[REDACTED:password]"},"timeout":30}` {
		t.Errorf("parameters = %s", stored.Tool.Parameters)
	}

	// Batches too; an event without a secret has no redactions.
	res, err := d.c.AppendBatch(ctx, []audit.Event{toolEvent("a", "ls -la"), toolEvent("a", "mysql -uroot -p"+password)})
	if err != nil {
		t.Fatal(err)
	}
	if res[0].Event.Redactions != nil || res[1].Event.Tool.RawCommand != "mysql -uroot -p[REDACTED:password]" {
		t.Errorf("batch: %+v %+v", res[0].Event, res[1].Event.Tool)
	}

	// The chain verifies: redaction happened before hashing.
	rep, err := d.c.Verify(ctx)
	if err != nil || !rep.Verified {
		t.Fatalf("verify: %+v %v", rep, err)
	}

	resp, err := http.Get(d.url + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if !strings.Contains(string(body), `govkit_auditd_redactions_total{kind="password"} 3`) {
		t.Errorf("metrics lack govkit_auditd_redactions_total{kind=\"password\"} 3")
	}
}

// An approval request's raw_command is redacted in the request, the table
// and the chain; its action_hash stays the hash of the command that will
// run, which is what consume compares.
func TestApprovalRawCommandRedacted(t *testing.T) {
	d := startApprovals(t, "", nil)
	ctx := ctxT(t)
	in := prodWrite()
	in.RawCommand = "PGPASSWORD=hunter2pw psql -c 'UPDATE users SET plan = 1'"
	r, err := d.as(t, "alice").RequestApproval(ctx, in)
	if err != nil {
		t.Fatal(err)
	}
	if r.RawCommand != "PGPASSWORD=[REDACTED:password] psql -c 'UPDATE users SET plan = 1'" {
		t.Errorf("raw_command = %q", r.RawCommand)
	}
	if want := approval.ActionHash(in.Resource, in.Action, in.Tool, in.RawCommand); r.ActionHash != want {
		t.Errorf("action_hash = %s, want the hash of the command as requested, %s", r.ActionHash, want)
	}
	row, err := d.c.Approval(ctx, r.ID)
	if err != nil || row.RawCommand != r.RawCommand {
		t.Errorf("stored request: %q, %v", row.RawCommand, err)
	}
	page, err := d.c.Query(ctx, govapi.EventQuery{EventType: audit.TypeApprovalRequested, Cursor: govapi.Cursor{Limit: 10}})
	if err != nil || len(page.Events) != 1 {
		t.Fatalf("query: %v %v", page, err)
	}
	ev := page.Events[0]
	b, _ := json.Marshal(ev)
	if strings.Contains(string(b), "hunter2pw") {
		t.Errorf("the approval event holds the password: %s", b)
	}
}
