#!/usr/bin/env bash
# A tour of auditd: start it on a temporary database and socket, subscribe to
# its event stream, record the classify tour (scripts/demo-commands.txt) as
# audit events, show what the stream delivered, verify the chain, and stop
# auditd with SIGTERM. Needs only Go and the binaries `make build` makes; the
# helper internal/auditdemo talks to auditd through pkg/client.
set -euo pipefail
cd "$(dirname "$0")/.."

auditd=${AUDITD:-bin/auditd}
classify=${CLASSIFY:-bin/classify}
verify=${VERIFY_CHAIN:-bin/verify-chain}
commands=scripts/demo-commands.txt
. scripts/demo-lib.sh
need "$auditd" "$classify" "$verify"


# A short directory under /tmp: a socket path must stay under ~100 bytes.
tmp=$(mktemp -d /tmp/gkdemo.XXXXXX)
pid='' subpid=''
cleanup() {
	[ -z "$subpid" ] || kill "$subpid" 2>/dev/null || true
	[ -z "$pid" ] || kill "$pid" 2>/dev/null || true
	rm -rf "$tmp"
}
trap cleanup EXIT
go build -o "$tmp/auditdemo" ./internal/auditdemo
db=$tmp/audit.db sock=$tmp/s.sock log=$tmp/auditd.log

heading "== auditd --db $db --addr 127.0.0.1:0 --socket $sock &"
"$auditd" --db "$db" --addr 127.0.0.1:0 --socket "$sock" 2>"$log" &
pid=$!
wait_listening "$log"
sed 's/^/  /' "$log"
ls -l "$sock" | awk '{print "  socket mode " $1 "  " $NF}'

total=$(grep -cv -e '^#' -e '^$' "$commands")
heading "== subscribe to the stream in the background ({\"subscribe\":{\"since_seq\":0}})"
"$tmp/auditdemo" subscribe "$sock" "$total" >"$tmp/stream.txt" &
subpid=$!

heading "== record the classify tour: classify -o json, then POST /api/events for each command"
"$tmp/auditdemo" record "http://$addr" "$classify" "$commands"

heading "== what the subscriber received: every event, in seq order, each chained to the one before"
wait "$subpid"
subpid=''
cat "$tmp/stream.txt"

heading "== a password on a command line never enters the chain: auditd redacts before sealing"
"$tmp/auditdemo" secret "http://$addr"

heading "== verify-chain --db $db (while auditd runs)"
"$verify" --db "$db" -o text

heading "== auditd export --db $db | verify-chain --jsonl -"
"$auditd" export --db "$db" | "$verify" --jsonl - -o text

heading "== kill -TERM auditd: finish requests, commit, close the database, remove the socket"
kill -TERM "$pid"
wait "$pid"
pid=''
tail -n 1 "$log" | sed 's/^/  /'
if [ -e "$sock" ]; then
	echo "demo: $sock is still there" >&2
	exit 1
fi
echo "  $sock is gone"
