#!/usr/bin/env bash
# A tour of governance (seed 003): auditd with policies.example.yaml,
# examples/infra.yaml and a tokens file; four policy decisions recorded with
# their traces (an allow, a deny, a require_approval that two approvers
# approve with the approvals CLI, and a no_match on a resource the infra
# file lacks), asked for by a gateway that names the people it acts for;
# the approved command released once (consumed, then run); two agents
# misbehaving (a destructive command without approval, a query whose
# output is an SQL syntax error); secbot turning them into incidents and
# auditor --once raising its alerts; and govbot's compliance report over
# all of it, with its exit code. Needs only Go and the binaries `make
# build` makes; the helper internal/govdemo plays the gateway and the agents
# through pkg/client.
set -euo pipefail
cd "$(dirname "$0")/.."

auditd=${AUDITD:-bin/auditd}
approvals=${APPROVALS:-bin/approvals}
govbot=${GOVBOT:-bin/govbot}
auditor=${AUDITOR:-bin/auditor}
secbot=${SECBOT:-bin/secbot}
. scripts/demo-lib.sh
need "$auditd" "$approvals" "$govbot" "$auditor" "$secbot"


# A short directory under /tmp: a socket path must stay under ~100 bytes.
tmp=$(mktemp -d /tmp/gkgov.XXXXXX)
pid='' secpid=''
cleanup() {
	[ -z "$secpid" ] || kill "$secpid" 2>/dev/null || true
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/govdemo" ./internal/govdemo
db=$tmp/audit.db sock=$tmp/s.sock log=$tmp/auditd.log tokens=$tmp/tokens.yaml

# Who may claim what comes from the credential (DESIGN §11): the decisions
# name principals with policy roles (a dba, an sre), which only a gateway
# token may assert, for the people it authenticated itself.
heading "== auditd token create: a gateway (gate), the approvers bob and carol, and the watchers' auditor token"
gate=$("$auditd" token create --tokens "$tokens" --name gate --roles gateway)
bob=$("$auditd" token create --tokens "$tokens" --name bob --roles approver)
carol=$("$auditd" token create --tokens "$tokens" --name carol --roles approver)
watcher=$("$auditd" token create --tokens "$tokens" --name watcher --roles auditor)
"$auditd" token list --tokens "$tokens" -o text | sed 's/^/  /'

heading "== auditd --db $db --policy policies.example.yaml --infra examples/infra.yaml --tokens $tokens --socket $sock &"
"$auditd" --db "$db" --addr 127.0.0.1:0 --socket "$sock" --tokens "$tokens" \
	--policy policies.example.yaml --infra examples/infra.yaml 2>"$log" &
pid=$!
wait_listening "$log"
sed 's/^/  /' "$log"
url=http://$addr
export GOVKIT_AUDIT_URL=$url

heading "== secbot --socket $sock --url $url --listen '' &  (the automated responder)"
GOVKIT_TOKEN=$watcher "$secbot" --socket "$sock" --url "$url" --listen '' --since-seq 0 -o json \
	>"$tmp/secbot.out" 2>"$tmp/secbot.log" &
secpid=$!

heading "== four policy decisions: POST /api/v1/decisions, each recorded as a policy_decision event with its trace"
GOVKIT_TOKEN=$gate "$tmp/govdemo" decide "$url" "$tmp/approval-id"
id=$(cat "$tmp/approval-id")

heading "== the approvers: bob and carol approve $id (quorum 2) with the approvals CLI"
GOVKIT_TOKEN=$bob "$approvals" list --pending -o text | sed 's/^/  [bob] /'
GOVKIT_TOKEN=$bob "$approvals" approve "$id" --reason "the pod is wedged" -o text | sed 's/^/  [bob] /'
GOVKIT_TOKEN=$carol "$approvals" approve "$id" --reason "agreed" -o text | sed 's/^/  [carol] /'

heading "== the gateway consumes the approval for exactly that command, runs it once, and records the run"
GOVKIT_TOKEN=$gate "$tmp/govdemo" release "$url" "$id"

heading "== two agents misbehave: a destructive command without approval, and an SQL syntax error in a query's output"
GOVKIT_TOKEN=$gate "$tmp/govdemo" tools "$url"

heading "== secbot turns them into incidents (POST /api/v1/incidents, hash-chained like every event)"
if GOVKIT_TOKEN=$watcher "$tmp/govdemo" incidents "$url" 2 15; then :; else
	echo "  (secbot created fewer incidents than expected; its log:)"
	sed 's/^/  /' "$tmp/secbot.log"
fi
kill -TERM "$secpid" 2>/dev/null || true
wait "$secpid" 2>/dev/null || true
secpid=''

# Allowed hours 0-24: the tour's alerts do not depend on when it runs.
heading "== auditor --once --since-seq 0: replay the log, verify the chain, print the alerts"
set +e
"$auditor" --once --since-seq 0 --url "$url" --token "$watcher" --allowed-hours-start 0 --allowed-hours-end 24 -o text 2>"$tmp/auditor.log" | sed 's/^/  /'
code=${PIPESTATUS[0]}
set -e
echo "  auditor exit code $code (0 no alerts, 2 alerts, 3 error)"

heading "== govbot --url $url --token \$watcher --since 24h  (the daily compliance report, seven phases)"
set +e
"$govbot" --url "$url" --token "$watcher" --since 24h -o text
code=$?
set -e
echo
echo "govbot exit code $code (0 healthy or warnings only, 1 auditd unreachable, 2 alerts, 3 usage error)"

kill -TERM "$pid"
wait "$pid" || true
pid=''
