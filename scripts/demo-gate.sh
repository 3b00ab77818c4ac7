#!/usr/bin/env bash
# A tour of gate, the enforcement point: a write refused in readonly mode
# (the default) before anything runs; a read run under Landlock, with the
# report saying what was enforced and a write inside the sandbox failing;
# then fix mode against auditd with a policy: a write that needs approval,
# waited for, approved in a "second terminal", consumed once, run, and
# recorded with a receipt; and the same approval refused a second time.
set -euo pipefail
cd "$(dirname "$0")/.."

gate=${GATE:-bin/gate}
auditd=${AUDITD:-bin/auditd}
approvals=${APPROVALS:-bin/approvals}
. scripts/demo-lib.sh
need "$gate" "$auditd" "$approvals"

tmp=$(mktemp -d /tmp/gkgate.XXXXXX)
pid='' approver=''
cleanup() {
	[ -z "$approver" ] || kill "$approver" 2>/dev/null || true
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
export XDG_STATE_HOME=$tmp/state # the incident spool stays in the demo's dir
echo "order 42: shipped" >"$tmp/orders.txt"

heading "== gate doctor: what this kernel can enforce"
"$gate" doctor --spool "$tmp/spool" 2>&1 | sed -n "/^sandbox:/,/^modes:/p" | sed "\$d;s/^/  /" || true

heading "== gate run -c 'echo cleared > orders.txt'   (readonly mode, the default: refused, 125)"
set +e
"$gate" run -c "echo cleared > $tmp/orders.txt" 2>&1 | sed 's/^/  /'
echo "  exit ${PIPESTATUS[0]}; orders.txt still says: $(cat "$tmp/orders.txt")"
set -e

heading "== gate run --report r.json -- cat orders.txt   (a read, sandboxed under Landlock)"
"$gate" run --report "$tmp/r.json" -- cat "$tmp/orders.txt" | sed 's/^/  /'
sed -n 's/^  "\(sandbox\|status\)": /  report \1: /p' "$tmp/r.json"

heading "== gate run --mode fix --sandbox readonly -c 'touch /tmp/x'   (the sandbox, not the mode, stops this write)"
cat >"$tmp/policies.yaml" <<'YAML'
version: "1"
default_effect: deny
policies:
  - name: orders-host
    resources:
      - type: host
        name: orders
    rules:
      - action: [read, write]
        effect: allow
      - action: destructive
        effect: require_approval
        message: Deleting on the orders host needs a reviewer
YAML
cat >"$tmp/infra.yaml" <<'YAML'
version: "1"
resources:
  - type: host
    name: orders
    tags: [production]
YAML
gw=$("$auditd" token create --tokens "$tmp/tokens.yaml" --name gate-ops --roles gateway 2>/dev/null)
bob=$("$auditd" token create --tokens "$tmp/tokens.yaml" --name bob --roles approver 2>/dev/null)
"$auditd" --tokens "$tmp/tokens.yaml" --policy "$tmp/policies.yaml" --infra "$tmp/infra.yaml" \
	--db "$tmp/audit.db" --addr 127.0.0.1:0 2>"$tmp/auditd.log" &
pid=$!
wait_listening "$tmp/auditd.log"
export GOVKIT_URL=http://$addr GOVKIT_AUDIT_URL=http://$addr GOVKIT_TOKEN=$gw
set +e
"$gate" run --mode fix --resource host:orders --sandbox readonly -c "touch $tmp/../gate-demo-x" 2>&1 | sed 's/^/  /'
echo "  exit ${PIPESTATUS[0]} (touch's own: the file system is read-only for it)"
set -e

heading "== second terminal (bob, background): approves the pending request"
(
	for _ in $(seq 100); do
		id=$(GOVKIT_TOKEN=$bob "$approvals" list --pending -o json | sed -n 's/.*"id":"\([^"]*\)".*/\1/p' | head -n 1)
		[ -n "$id" ] && break
		sleep 0.1
	done
	GOVKIT_TOKEN=$bob "$approvals" approve "$id" --reason "old orders, checked" -o text | sed 's/^/  [bob] /'
) &
approver=$!

heading "== gate run --mode fix --resource host:orders --wait 1m -- rm -f orders.txt   (destructive: needs approval)"
"$gate" run --mode fix --resource host:orders --wait 1m --report "$tmp/r.json" -- rm -f "$tmp/orders.txt" 2>&1 | sed 's/^/  /'
wait "$approver" || true
approver=''
[ -e "$tmp/orders.txt" ] && echo "  orders.txt is still there?" || echo "  orders.txt removed"
id=$(sed -n 's/^    "id": "\(apr_[^"]*\)",/\1/p' "$tmp/r.json")
sed -n 's/^    "\(event_id\|event_hash\)": "\(evt_[^"]*\|[0-9a-f]*\)",*/  receipt \1: \2/p' "$tmp/r.json" | tail -n 2

heading "== the same approval again: refused (an approval releases one run of exactly its command)"
set +e
"$gate" run --mode fix --resource host:orders --approval "$id" -- rm -f "$tmp/orders.txt" 2>&1 | sed 's/^/  /'
echo "  exit ${PIPESTATUS[0]}"
set -e
