#!/usr/bin/env bash
# A tour of approvals: auditd with a tokens file (the agent's token acts for
# a principal), a policy and the infra file; an agent that requests an
# approval and waits for it (approvals request --wait), and an approver in a
# "second terminal" (a background job) who lists and approves it; the one
# execution the approval releases (consumed once, the second try refused);
# what the policy decides without approvers; then the approver-role
# refusal, a deny, and the chain that recorded all of it.
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
db=$tmp/audit.db tokens=$tmp/tokens.yaml log=$tmp/auditd.log policy=$tmp/policies.yaml infra=examples/infra.yaml

# Approval requests come from policy (DESIGN §11): auditd opens one only when
# its policy requires approval, with the policy's quorum. This one needs a
# reviewer for production writes and two for destructive changes, at any
# hour (policies.example.yaml adds a business-hours change freeze).
cat >"$policy" <<'YAML'
version: "1"
default_effect: deny
policies:
  - name: production-database-protection
    resources:
      - type: database
        match: {tags: [production]}
    rules:
      - action: read
        effect: allow
      - action: write
        effect: require_approval
        message: Production writes need a reviewer
      - action: destructive
        effect: require_approval
        message: Destructive changes need two reviewers
        conditions: {approval_quorum: 2}
YAML

heading "== auditd token create: one token per identity (only hashes are stored); agent-7 acts for dana"
agent=$("$auditd" token create --tokens "$tokens" --name agent-7 --roles agent \
	--principal-user dana@example.com --principal-roles dba)
bob=$("$auditd" token create --tokens "$tokens" --name bob --roles approver,auditor)
carol=$("$auditd" token create --tokens "$tokens" --name carol --roles approver)
"$auditd" token list --tokens "$tokens" -o text | sed 's/^/  /'

heading "== auditd --tokens $tokens --policy $policy --infra $infra --db $db --addr 127.0.0.1:0 &"
"$auditd" --tokens "$tokens" --policy "$policy" --infra "$infra" --db "$db" --addr 127.0.0.1:0 2>"$log" &
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
	--reason "apply migration 42" --tool psql --command "psql -f 42.sql" --wait 1m -o json >"$tmp/approved.json"
code=$?
set -e
wait "$approver"
approver=''
sed -n 's/.*"status":"\([^"]*\)".*"votes":\[{"by":"\([^"]*\)".*/  \1 by \2/p' "$tmp/approved.json"
echo "  exit code $code (0 approved, 1 denied, 2 expired or timed out, 3 error)"

heading "== the approval releases one execution of exactly its action: consume it, once"
id=$(sed -n 's/^{"schema_version":1,"id":"\([^"]*\)".*/\1/p' "$tmp/approved.json")
hash=$(sed -n 's/.*"action_hash":"\([0-9a-f]*\)".*/\1/p' "$tmp/approved.json")
echo "  action_hash $hash (resource, action, tool and command of the approved action)"
GOVKIT_TOKEN=$agent "$approvals" consume "$id" --action-hash "$hash" -o text | sed 's/^/  /'
echo "  ... psql -f 42.sql runs now"
set +e
GOVKIT_TOKEN=$agent "$approvals" consume "$id" --action-hash "$hash" -o text 2>&1 | sed 's/^/  /'
code=${PIPESTATUS[0]}
set -e
echo "  exit code $code: the second try is refused (1)"

heading "== the policy decides what needs approval: a read needs none, an unlisted resource is denied"
GOVKIT_TOKEN=$agent "$approvals" request --resource database:prod-db --action read -o text 2>&1 | sed 's/^/  /'
set +e
GOVKIT_TOKEN=$agent "$approvals" request --resource database:legacy-db --action write -o text 2>&1 | sed 's/^/  /'
code=${PIPESTATUS[0]}
set -e
echo "  exit code $code: no approval can release an action the policy denies (1)"

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
