package notify

import (
	"strings"
	"testing"
	"time"

	"github.com/govkit/govkit/pkg/approval"
)

func TestCommands(t *testing.T) {
	tests := []struct {
		id, base      string
		approve, deny string
	}{
		{"apr_01HX", "", "approvals approve apr_01HX", `approvals deny apr_01HX --reason "…"`},
		{"apr_01HX", "http://auditd.internal:1199/", "approvals approve apr_01HX --url http://auditd.internal:1199",
			`approvals deny apr_01HX --reason "…" --url http://auditd.internal:1199`},
		{"a b'c", "", `approvals approve 'a b'\''c'`, `approvals deny 'a b'\''c' --reason "…"`},
		{"x;rm -rf ~", "", `approvals approve 'x;rm -rf ~'`, `approvals deny 'x;rm -rf ~' --reason "…"`},
	}
	for _, tt := range tests {
		approve, deny := Commands(approval.Request{ID: tt.id}, tt.base)
		if approve != tt.approve || deny != tt.deny {
			t.Errorf("Commands(%q, %q) = %q, %q; want %q, %q", tt.id, tt.base, approve, deny, tt.approve, tt.deny)
		}
	}
	if got := Link(approval.Request{ID: "a/b"}, "http://x:1/"); got != "http://x:1/v1/approvals/a%2Fb" {
		t.Errorf("Link = %q", got)
	}
}

func TestTextRequested(t *testing.T) {
	got := newView(Message{Kind: Requested, Request: pending(t), Now: now}, testBase).text()
	for _, want := range []string{
		"Approval requested: write on database:prod-db\n",
		"ID:           apr_01HX\n",
		"Resource:     database:prod-db\n",
		"Tags:         production, pii\n",
		"Action:       write\n",
		"Requested by: alice\n",
		"Tool:         psql\n",
		`Command:      psql -c "UPDATE orders SET state='open' WHERE id=7"` + "\n",
		"Reason:       unstick order 7\n",
		"Policy:       prod-db-guard\n",
		"Explanation:  " + explanation + "\n",
		"Quorum:       0 of 2 approvals\n",
		"Expiry:       expires in 4m59s, at 10:05:00 UTC\n",
		"    approvals approve apr_01HX --url http://auditd.internal:1199\n",
		`    approvals deny apr_01HX --reason "…" --url http://auditd.internal:1199` + "\n",
		"http://auditd.internal:1199/v1/approvals/apr_01HX\n",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("text lacks %q:\n%s", want, got)
		}
	}
}

func TestTextResolved(t *testing.T) {
	tests := []struct {
		name string
		r    approval.Request
		want []string
		not  []string
	}{
		{"denied", denied(t), []string{
			"Approval denied by carol: write on database:prod-db\n",
			"Outcome:      denied by carol\n",
			"Why:          not during the freeze\n",
			"Quorum:       1 of 2 approvals\n",
			"Votes:        bob: approve at 10:00:30 UTC (looks fine)\n              carol: deny at 10:01:00 UTC (not during the freeze)\n",
			"Resolved:     decided at 10:01:00 UTC\n",
		}, nil},
		{"approved", approved(t), []string{
			"Approval approved by dave: write on database:prod-db\n",
			"Why:          ticket OPS-12\n",
			"Quorum:       2 of 2 approvals\n",
		}, nil},
		{"expired", expired(t), []string{
			"Approval expired, no decision: write on database:prod-db\n",
			"Outcome:      expired, no decision\n",
			"Resolved:     expired at 10:05:00 UTC\n",
		}, []string{"Why:"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := newView(Message{Kind: Resolved, Request: tt.r, Now: created.Add(7 * time.Minute)}, testBase).text()
			for _, want := range tt.want {
				if !strings.Contains(got, want) {
					t.Errorf("text lacks %q:\n%s", want, got)
				}
			}
			for _, not := range append(tt.not, "approvals approve", "approvals deny") {
				if strings.Contains(got, not) {
					t.Errorf("resolved text has %q:\n%s", not, got)
				}
			}
		})
	}
}

func TestTTL(t *testing.T) {
	exp := time.Date(2025, 3, 4, 10, 5, 0, 0, time.UTC)
	tests := []struct {
		now  time.Time
		want string
	}{
		{exp.Add(-4*time.Minute - 59*time.Second - 300*time.Millisecond), "expires in 4m59s, at 10:05:00 UTC"},
		{exp.Add(-26 * time.Hour), "expires in 26h0m0s, at 2025-03-04 10:05:00 UTC"},
		{exp.Add(3 * time.Second), "expired 3s ago, at 10:05:00 UTC"},
		{exp.In(time.FixedZone("X", 3600)).Add(-time.Minute), "expires in 1m0s, at 10:05:00 UTC"},
	}
	for _, tt := range tests {
		if got := ttl(exp, tt.now); got != tt.want {
			t.Errorf("ttl(now=%s) = %q; want %q", tt.now, got, tt.want)
		}
	}
}

func TestClean(t *testing.T) {
	tests := []struct{ in, one, multi string }{
		{"a\r\nBcc: x", "a  Bcc: x", "a\nBcc: x"},
		{"a\rb\tc", "a b c", "a\nb c"},
		{"esc\x1b[31m", "esc\uFFFD[31m", "esc\uFFFD[31m"},
		{"evil\u202Egnp.exe", "evil\uFFFDgnp.exe", "evil\uFFFDgnp.exe"},
		{"bad\xffutf8", "bad\uFFFDutf8", "bad\uFFFDutf8"},
		// What termtext does not show, which the local copy passed through.
		{"rm\u200b -rf", "rm\uFFFD -rf", "rm\uFFFD -rf"},
		{"nb\u00a0sp", "nb\uFFFDsp", "nb\uFFFDsp"},
		{"a\u2028b\u2066c", "a\uFFFDb\uFFFDc", "a\uFFFDb\uFFFDc"},
		{"l1\n\x1bl2\r\n", "l1 \uFFFDl2  ", "l1\n\uFFFDl2\n"},
	}
	for _, tt := range tests {
		if got := oneLine(tt.in, 100); got != tt.one {
			t.Errorf("oneLine(%q) = %q; want %q", tt.in, got, tt.one)
		}
		if got := multiLine(tt.in, 100); got != tt.multi {
			t.Errorf("multiLine(%q) = %q; want %q", tt.in, got, tt.multi)
		}
	}
	if got := oneLine(strings.Repeat("é", 10), 7); got != "ééé…" {
		t.Errorf("cut = %q", got)
	}
	if got := multiLine("ab\ncd", 4); got != "ab\nc…" {
		t.Errorf("multi-line cut = %q", got)
	}
}
