#!/usr/bin/env bash
# A tour of approvals: auditd with a tokens file, an agent that requests an
# approval and waits for it (approvals request --wait), and an approver in a
# "second terminal" (a background job) who lists and approves it; then the
# self-approval refusal, a deny, and the chain that recorded all of it.
set -euo pipefail
cd "$(dirname "$0")/.."

auditd=${AUDITD:-bin/auditd}
approvals=${APPROVALS:-bin/approvals}
verify=${VERIFY_CHAIN:-bin/verify-chain}
. scripts/demo-lib.sh
need "$auditd" "$approvals" "$verify"


tmp=$(mktemp -d /tmp/gkappr.XXXXXX)
pid='' approver=''
cleanup() {
	[ -z "$approver" ] || kill "$approver" 2>/dev/null || true
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
db=$tmp/audit.db tokens=$tmp/tokens.yaml log=$tmp/auditd.log

heading "== auditd token create: one token per identity (only hashes are stored)"
agent=$("$auditd" token create --tokens "$tokens" --name agent-7 --roles agent)
bob=$("$auditd" token create --tokens "$tokens" --name bob --roles approver,auditor)
carol=$("$auditd" token create --tokens "$tokens" --name carol --roles approver)
"$auditd" token list --tokens "$tokens" -o text | sed 's/^/  /'

heading "== auditd --tokens $tokens --db $db --addr 127.0.0.1:0 &"
"$auditd" --tokens "$tokens" --db "$db" --addr 127.0.0.1:0 2>"$log" &
pid=$!
wait_listening "$log"
sed 's/^/  /' "$log"
export GOVKIT_AUDIT_URL=http://$addr

heading "== second terminal (bob, background): waits for a pending request, lists it, approves it"
(
	for _ in $(seq 100); do
		id=$(GOVKIT_TOKEN=$bob "$approvals" list --pending -o json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n 1)
		[ -n "$id" ] && break
		sleep 0.1
	done
	GOVKIT_TOKEN=$bob "$approvals" list --pending -o text | sed 's/^/  [bob] /'
	GOVKIT_TOKEN=$bob "$approvals" approve "$id" --reason "reviewed the migration" -o text | sed 's/^/  [bob] /'
) &
approver=$!

heading "== first terminal (agent-7): approvals request ... --wait 1m  (blocks until bob decides)"
set +e
GOVKIT_TOKEN=$agent "$approvals" request --resource database:prod-db --action write \
	--reason "apply migration 42" --command "psql -f 42.sql" --wait 1m -o text
code=$?
set -e
wait "$approver"
approver=''
echo "  exit code $code (0 approved, 1 denied, 2 expired or timed out, 3 error)"

heading "== an agent token cannot approve (approver role needed)"
id=$(GOVKIT_TOKEN=$agent "$approvals" request --resource database:prod-db --action destructive -o json |
	sed -n 's/.*"id":"\([^"]*\)".*/\1/p')
GOVKIT_TOKEN=$agent "$approvals" approve "$id" 2>&1 | sed 's/^/  /' || true

heading "== carol denies it (a deny needs a reason); the waiting agent would exit 1"
GOVKIT_TOKEN=$carol "$approvals" deny "$id" --reason "no destructive changes this week" -o text | sed 's/^/  /'
set +e
GOVKIT_TOKEN=$agent "$approvals" request --resource database:prod-db --action write --ttl 2s --wait 10s -o text 2>&1 | sed 's/^/  /'
set -e
echo "  (nobody answered the last one: it expired, exit 2)"

heading "== every change is in the audit chain"
GOVKIT_TOKEN=$bob "$approvals" list -o text | sed 's/^/  /'
"$verify" --db "$db" -o text

kill -TERM "$pid"
wait "$pid"
pid=''
